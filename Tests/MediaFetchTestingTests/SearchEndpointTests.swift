import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("GET /search")
struct SearchEndpointTests {
    let server: MockCatalogServer

    init() throws {
        server = try MockCatalogServer()
    }

    private func search(_ pairs: [(String, String)]) throws -> RawHTTPClient.Response {
        try RawHTTPClient(port: server.port).request("/search?" + searchQuery(pairs))
    }

    @Test("answers with Apple's content type, padding and envelope")
    func shape() throws {
        let response = try search([("term", "love"), ("media", "music"), ("entity", "song"), ("limit", "5")])
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "text/javascript; charset=utf-8")
        #expect(response.text.hasPrefix("\n\n\n{"))
        #expect(response.text.hasSuffix("}\n\n\n"))
        let answer = try SearchAnswer(response.body)
        #expect(answer.resultCount == 5)
        #expect(answer.results.count == 5)
        let expected = server.catalog.search(term: "love").prefix(5).map(\.trackId)
        #expect(answer.results.map(\.trackId) == expected)
        let previewPrefix = server.baseURL.absoluteString + "/itunes-assets/AudioPreview125/v4/"
        for record in answer.results {
            #expect(record.wrapperType == "track")
            #expect(record.kind == "song")
            #expect(record.previewUrl?.hasPrefix(previewPrefix) == true)
        }
    }

    @Test("records carry the fixture's fields in the fixture's order")
    func recordFields() throws {
        let response = try search([("term", "night"), ("limit", "1")])
        let text = response.text
        let fixtureOrder = [
            "wrapperType", "kind", "artistId", "collectionId", "trackId", "artistName", "collectionName", "trackName",
            "collectionCensoredName", "trackCensoredName", "artistViewUrl", "collectionViewUrl", "trackViewUrl",
            "previewUrl", "artworkUrl30", "artworkUrl60", "artworkUrl100", "collectionPrice", "trackPrice",
            "releaseDate", "collectionExplicitness", "trackExplicitness", "discCount", "discNumber", "trackCount",
            "trackNumber", "trackTimeMillis", "country", "currency", "primaryGenreName", "isStreamable",
        ]
        let positions = fixtureOrder.compactMap { text.range(of: "\"\($0)\":")?.lowerBound }
        #expect(positions.count == fixtureOrder.count)
        #expect(positions == positions.sorted())
        #expect(text.contains("\"country\":\"USA\""))
        #expect(text.contains("\"currency\":\"USD\""))
    }

    @Test("limit defaults to 50, is clamped to 1...200, and offset pages through")
    func paging() throws {
        let all = server.catalog.search(term: "night").map(\.trackId)
        #expect(all.count > 200)
        #expect(try SearchAnswer(search([("term", "night")]).body).resultCount == 50)
        #expect(try SearchAnswer(search([("term", "night"), ("limit", "500")]).body).resultCount == 200)
        #expect(try SearchAnswer(search([("term", "night"), ("limit", "0")]).body).resultCount == 1)
        let second = try SearchAnswer(search([("term", "night"), ("limit", "10"), ("offset", "10")]).body)
        #expect(second.results.map(\.trackId) == Array(all[10..<20]))
        let beyond = try SearchAnswer(search([("term", "night"), ("offset", String(all.count))]).body)
        #expect(beyond.resultCount == 0)
    }

    @Test("the term is decoded as a server does: + is a space, percent-escapes are UTF-8")
    func termDecoding() throws {
        let response = try RawHTTPClient(port: server.port).request("/search?term=%E6%97%A5%E6%9C%AC%E8%AA%9E+band")
        // "日本語 band": 日本語バンド is the artist; "band" is not in it, so nothing matches both words…
        #expect(try SearchAnswer(response.body).resultCount == 0)
        let japanese = try RawHTTPClient(port: server.port).request("/search?term=%E6%97%A5%E6%9C%AC%E8%AA%9E")
        #expect(try SearchAnswer(japanese.body).resultCount == server.catalog.search(term: "日本語").count)
        #expect(server.catalog.search(term: "日本語").count >= 4)
        let logged = try #require(server.requests.last)
        #expect(logged.rawQuery == "term=%E6%97%A5%E6%9C%AC%E8%AA%9E")
        #expect(logged.query("term") == "日本語")
        // …and a literal + must arrive encoded to stay a plus.
        let plus = try search([("term", "Night+Day")])
        #expect(try SearchAnswer(plus.body).resultCount == 1)
        #expect(server.requests.last?.rawQuery == "term=Night%2BDay")
    }

    @Test("a term matching nothing is 200 with resultCount 0")
    func noMatch() throws {
        let response = try search([("term", "zzqx nothing matches")])
        #expect(response.status == 200)
        let answer = try SearchAnswer(response.body)
        #expect(answer.resultCount == 0)
        #expect(answer.results.isEmpty)
    }

    @Test(
        "invalid parameters are 400 naming Apple's key",
        arguments: [
            ([("term", "love"), ("media", "vinyl")], "mediaType"),
            ([("term", "love"), ("entity", "movie")], "resultEntity"),
            ([("term", "love"), ("media", "music"), ("entity", "podcast")], "resultEntity"),
            ([("term", "love"), ("attribute", "colourTerm")], "attributeType"),
            ([("term", "love"), ("country", "USA")], "country"),
            ([("term", "love"), ("country", "1x")], "country"),
            ([("media", "music")], "term"),
        ]
    )
    func badRequests(pairs: [(String, String)], key: String) throws {
        let response = try search(pairs)
        #expect(response.status == 400)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
        #expect(object["errorMessage"] as? String == "Invalid value(s) for key(s): [\(key)]")
        let parameters = try #require(object["queryParameters"] as? [String: String])
        #expect(parameters["term"] == "A search string")
        #expect(parameters["country"] == "ISO-2A country code")
    }

    @Test("other media are valid but find no songs")
    func otherMedia() throws {
        let response = try search([("term", "love"), ("media", "podcast")])
        #expect(response.status == 200)
        #expect(try SearchAnswer(response.body).resultCount == 0)
    }

    @Test("entity=album answers collection records, attribute narrows the searched field")
    func entityAndAttribute() throws {
        let albums = try SearchAnswer(search([("term", "love"), ("entity", "album"), ("limit", "200")]).body)
        #expect(albums.resultCount > 0)
        #expect(albums.results.allSatisfy { $0.wrapperType == "collection" && $0.previewUrl == nil })
        #expect(Set(albums.results.compactMap(\.collectionId)).count == albums.resultCount)
        let byArtist = try SearchAnswer(search([("term", "Lena Marlow"), ("attribute", "artistTerm")]).body)
        #expect(byArtist.resultCount == server.catalog.search(term: "Lena Marlow", attribute: "artistTerm").count)
        #expect(byArtist.resultCount > 0)
        let bySong = try SearchAnswer(search([("term", "Lena Marlow"), ("attribute", "songTerm")]).body)
        #expect(bySong.resultCount == 0)
    }

    @Test("URLSession on Linux can read the answer (the real client other modules use)")
    func urlSession() async throws {
        let url = try #require(URL(string: server.baseURL.absoluteString + "/search?term=love&limit=3"))
        let (data, response) = try await URLSession.shared.data(from: url)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        #expect(try SearchAnswer(Array(data)).resultCount == 3)
    }
}
