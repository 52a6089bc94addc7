import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@Suite("ScriptedTransport")
struct ScriptedTransportTests {
    private let directory: URL

    init() throws {
        directory = FileManager.default.temporaryDirectory.appending(path: "scripted-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    private func url(_ text: String) throws -> URL {
        try #require(URL(string: text))
    }

    @Test("send answers from the closure and is recorded")
    func send() async throws {
        let transport = ScriptedTransport(
            maxConcurrentTransfers: 3,
            send: { request in
                HTTPResponse(status: 200, headers: ["X": "1"], url: request.url, body: Data("ok".utf8))
            })
        let response = try await transport.send(HTTPRequest(url: url("https://example.com/a")))
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "ok")
        #expect(transport.requests.map(\.url.absoluteString) == ["https://example.com/a"])
        #expect(transport.maxConcurrentTransfers == 3)
        await #expect(throws: TransportError.self) { try await transport.send(HTTPRequest(url: url("ftp://x/y"))) }
    }

    @Test("download writes the file; a resume with the same validator appends (206)")
    func resume() async throws {
        let bytes = (0..<1000).map { UInt8($0 % 251) }
        let transport = ScriptedTransport(download: { _ in ScriptedTransport.File(bytes: bytes, etag: "\"v1\"") })
        let destination = directory.appending(path: "f.part")
        let source = try url("http://h/f")
        let first = try await transport.download(DownloadRequest(url: source, destination: destination)) { _ in }
        #expect(first.status == 200)
        #expect(try Data(contentsOf: destination) == Data(bytes))
        // Pretend only 400 bytes survived, then resume.
        try Data(bytes[0..<400]).write(to: destination)
        let resumed = try await transport.download(
            DownloadRequest(url: source, destination: destination, resumeFrom: 400, validator: first.validator)
        ) { _ in }
        #expect(resumed.status == 206)
        #expect(resumed.bytesWritten == 600)
        #expect(resumed.fileSize == 1000)
        #expect(!resumed.restarted)
        #expect(try Data(contentsOf: destination) == Data(bytes))
    }

    @Test("a stale validator restarts with the whole file; truncation and bad statuses throw")
    func restartAndFailures() async throws {
        let bytes = [UInt8](repeating: 9, count: 100)
        let destination = directory.appending(path: "g.part")
        try Data([1, 2, 3]).write(to: destination)
        let changed = ScriptedTransport(download: { _ in ScriptedTransport.File(bytes: bytes, etag: "\"v2\"") })
        let stale = DownloadRequest(
            url: try url("http://h/g"), destination: destination, resumeFrom: 3, validator: Validator(etag: "\"v1\"")
        )
        let result = try await changed.download(stale) { _ in }
        #expect(result.status == 200)
        #expect(result.restarted)
        #expect(try Data(contentsOf: destination) == Data(bytes))

        let cut = ScriptedTransport(download: { _ in ScriptedTransport.File(bytes: bytes, truncateAfter: 10) })
        await #expect(throws: TransportError.self) {
            try await cut.download(DownloadRequest(url: url("http://h/g"), destination: destination)) { _ in }
        }
        #expect(try Data(contentsOf: destination).count == 10)

        let missing = ScriptedTransport()
        do {
            _ = try await missing.download(DownloadRequest(url: url("http://h/g"), destination: destination)) { _ in }
            Issue.record("a 404 must throw")
        } catch let error as TransportError {
            #expect(error.status == 404)
        }
        #expect(try Data(contentsOf: destination).count == 10)
    }

    @Test("the catalog mode answers like the server, without sockets")
    func catalogMode() async throws {
        let base = try url("http://127.0.0.1:1")
        let transport = ScriptedTransport(baseURL: base)
        let response = try await transport.send(HTTPRequest(url: url("http://127.0.0.1:1/search?term=love&limit=2")))
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "text/javascript; charset=utf-8")
        let answer = try SearchAnswer(Array(response.body))
        #expect(answer.resultCount == 2)
        let first = try #require(answer.results.first)
        let trackId = try #require(first.trackId)
        let song = try #require(MockCatalog.standard.song(trackId: trackId))
        let previewText = try #require(first.previewUrl)
        let preview = try url(previewText)
        let destination = directory.appending(path: "p.m4a")
        let result = try await transport.download(DownloadRequest(url: preview, destination: destination)) { _ in }
        #expect(result.fileSize == song.previewSize)
        #expect(try Data(contentsOf: destination) == Data(MockCatalog.standard.previewBytes(for: song)))
        let bad = try await transport.send(HTTPRequest(url: url("http://127.0.0.1:1/search?term=a&media=vinyl")))
        #expect(bad.status == 400)
    }
}
