import Foundation
import Testing

@testable import ITunesSource

/// The API reads `+` as a space, so values are form-encoded by hand (FACTS.md).
struct QueryEncodingTests {
    @Test(arguments: [
        ("jack johnson", "jack+johnson"),
        ("AC+DC", "AC%2BDC"),
        ("Simon & Garfunkel", "Simon+%26+Garfunkel"),
        ("a=b", "a%3Db"),
        ("#1 hits", "%231+hits"),
        ("100% pure", "100%25+pure"),
        ("Beyoncé", "Beyonc%C3%A9"),
        ("日本", "%E6%97%A5%E6%9C%AC"),
        ("safe.-_*", "safe.-_*"),
        ("a/b?c", "a%2Fb%3Fc"),
    ])
    func valuesAreFormEncoded(value: String, expected: String) {
        #expect(ITunesQuery.encode(value) == expected)
    }

    @Test func theEndpointPathIsKept() throws {
        let endpoint = try #require(URL(string: "http://127.0.0.1:8080/mirror/itunes/"))
        let url = ITunesQuery.url(endpoint: endpoint, path: "search", parameters: [("term", "a b"), ("limit", "5")])
        #expect(url?.absoluteString == "http://127.0.0.1:8080/mirror/itunes/search?term=a+b&limit=5")
    }
}
