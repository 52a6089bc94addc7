import Foundation
import MediaFetchCore
import S3Sink
import Testing

/// The signer against AWS's published Signature V4 test suite (Fixtures/sigv4, with a README naming where the
/// copy came from): for each case its canonical request, string to sign and Authorization header, where the copy
/// has them, must be byte for byte the suite's.
struct SigV4SuiteTests {
    static let cases = [
        "get-vanilla-query-order-key", "get-vanilla-query-order-value", "post-x-www-form-urlencoded-parameters",
        "get-unreserved", "get-vanilla-utf8-query", "get-header-value-trim", "post-sts-header-before",
    ]

    static let suiteDate = Date(timeIntervalSince1970: 1_440_938_160)  // 2015-08-30T12:36:00Z

    @Test(arguments: cases)
    func signsLikeTheSuite(_ name: String) throws {
        let folder = try #require(Bundle.module.url(forResource: "Fixtures/sigv4/\(name)", withExtension: nil))
        func file(_ ext: String) -> String? {
            try? String(contentsOf: folder.appendingPathComponent("\(name).\(ext)"), encoding: .utf8)
        }
        let request = try SuiteRequest(try #require(file("req")))
        let signer = SigV4Signer(
            credentials: .init(
                accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
                sessionToken: request.headers["X-Amz-Security-Token"]),
            region: "us-east-1", service: "service")
        var headers = request.headers
        headers.set("Host", nil)
        headers.set("X-Amz-Date", nil)
        headers.set("X-Amz-Security-Token", nil)
        let signature = signer.sign(
            method: request.method, host: request.headers["Host"] ?? "", path: request.path, query: request.query,
            headers: headers, payloadHash: SHA256.hex(of: Data(request.body.utf8)), date: Self.suiteDate)
        if let canonical = file("creq") { #expect(signature.canonicalRequest == canonical) }
        if let stringToSign = file("sts") { #expect(signature.stringToSign == stringToSign) }
        #expect(signature.authorization == file("authz"))
        #expect(signature.headers["X-Amz-Date"] == "20150830T123600Z")
    }

    /// A case folder without its Authorization file would pass the checks above without checking the signature.
    @Test func everyCaseHasItsAuthorization() throws {
        for name in Self.cases {
            let url = try #require(
                Bundle.module.url(forResource: "Fixtures/sigv4/\(name)/\(name)", withExtension: "authz"))
            #expect(try String(contentsOf: url, encoding: .utf8).hasPrefix("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"))
        }
    }

    @Test func encodesLikeS3() {
        #expect(SigV4Signer.encode(Array("a b+c/ü~".utf8)) == "a%20b%2Bc%2F%C3%BC~")
    }
}

/// A `.req` file: request line, `Name:value` header lines, a blank line, the body.
struct SuiteRequest {
    var method: String
    var path: String
    var query: String?
    var headers = HTTPHeaders()
    var body = ""

    init(_ text: String) throws {
        let sections = text.components(separatedBy: "\n\n")
        var lines = sections[0].components(separatedBy: "\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        try #require(requestLine.count == 3)
        method = String(requestLine[0])
        let target = requestLine[1].split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = String(target[0])
        query = target.count > 1 ? String(target[1]) : nil
        for line in lines {
            let parts = line.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            try #require(parts.count == 2)
            headers.add(name: String(parts[0]), value: String(parts[1]))
        }
        body = sections.dropFirst().joined(separator: "\n\n")
    }
}
