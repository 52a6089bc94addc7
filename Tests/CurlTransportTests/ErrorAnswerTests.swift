import CurlTransport
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// A download that fails on its answer's status reads a small answer to its end and drops it, so that its connection
/// serves the next request; a large one (over 64 KiB), or one that takes over a second, it refuses, as it refused every
/// one before, and its connection closes. (The transport contract's `reusesConnectionsAfterErrors` checks the small
/// error page every transport must handle.)
@Suite("CurlTransport's failed answers")
struct ErrorAnswerTests {
    /// Three downloads in a row, one at a time, each answered 404 with a body of `size` bytes (announced, or sent
    /// `chunked` without a length): the connections they took.
    private func connections(forErrorAnswersOf size: Int, chunked: Bool = false) async throws -> Int {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let page = [UInt8](repeating: UInt8(ascii: "x"), count: size)
        let answer: MockFault =
            chunked
            ? .respond(
                status: 404, headers: [("Content-Type", "text/html"), ("Transfer-Encoding", "chunked")],
                body: MockFault.chunked(page, pieceSize: 5_000))
            : .respond(status: 404, headers: [("Content-Type", "text/html")], body: page)
        server.setFaultHook { _ in answer }
        let transport = try CurlTransport(.init(concurrency: 1, threads: 1))
        try await withTemporaryDirectory { directory in
            for index in 0..<3 {
                let request = DownloadRequest(
                    url: server.url(path: "/gone-\(index).m4a"),
                    destination: directory.appendingPathComponent("\(index).part"))
                let error = await #expect(throws: TransportError.self) {
                    _ = try await transport.download(request) { _ in }
                }
                #expect(error?.status == 404)
            }
        }
        await transport.shutdown()
        #expect(server.requests.count == 3)
        return server.connectionsAccepted
    }

    /// Up to 64 KiB (several of libcurl's pieces) an error answer is read to its end, and the three share one
    /// connection; a byte more, or 1 MiB, is not read to keep a connection, and each of the three takes a new one.
    @Test(arguments: [(60 * 1024, 1), (64 * 1024, 1), (64 * 1024 + 1, 3), (1 << 20, 3)])
    func anErrorAnswerKeepsItsConnectionOnlyWhenSmall(size: Int, connections expected: Int) async throws {
        #expect(try await connections(forErrorAnswersOf: size) == expected)
    }

    /// An error answer that announces no length (`chunked`, as many servers send their error pages) is counted as it
    /// comes: read to its end up to 64 KiB, refused beyond.
    @Test(arguments: [(30_000, 1), (64 * 1024, 1), (64 * 1024 + 1, 3), (1 << 20, 3)])
    func aChunkedErrorAnswerKeepsItsConnectionOnlyWhenSmall(size: Int, connections expected: Int) async throws {
        #expect(try await connections(forErrorAnswersOf: size, chunked: true) == expected)
    }

    /// An error answer whose body stops coming ends with its status after a second (``CurlTransfer/drainTime``), not
    /// when the stalled connection times out (two minutes here) or the server gives up (five).
    @Test(.timeLimit(.minutes(1)))
    func aStalledErrorAnswerEndsAfterASecond() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let page = [UInt8](repeating: UInt8(ascii: "x"), count: 1_000)
        server.setFaultHook { _ in
            .combined([.respond(status: 404, headers: [], body: page), .stall(afterBytes: 100, seconds: 300)])
        }
        let transport = try CurlTransport(.init(concurrency: 1, timeout: .seconds(300), lowSpeedTime: .seconds(120)))
        try await withTemporaryDirectory { directory in
            let request = DownloadRequest(
                url: server.url(path: "/stalled.m4a"), destination: directory.appendingPathComponent("stalled.part"))
            let error = await #expect(throws: TransportError.self) {
                _ = try await transport.download(request) { _ in }
            }
            #expect(error?.status == 404)
        }
        await transport.shutdown()
    }
}
