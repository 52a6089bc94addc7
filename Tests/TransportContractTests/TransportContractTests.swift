import CurlTransport
import Foundation
import FoundationTransport
import MediaFetchCore
import MediaFetchTesting
import Testing
import XCTest

/// Every bundled transport, and the scripted one tests swap in, keeps the public ``TransportContract``: the
/// same function a third party runs on their own transport. A clause a transport cannot meet would be named
/// here with the reason, never skipped silently; there is none.
struct TransportContractTests {
    @Test func curlKeepsTheContract() async throws {
        try await TransportContract.run { settings in
            try CurlTransport(
                .init(
                    concurrency: settings.concurrency, lowSpeedLimit: 1, lowSpeedTime: settings.idleTimeout,
                    maxRedirects: settings.maxRedirects))
        }
    }

    @Test func foundationKeepsTheContract() async throws {
        try await TransportContract.run { settings in
            FoundationTransport(
                .init(
                    concurrency: settings.concurrency, idleTimeout: settings.idleTimeout,
                    maxRedirects: settings.maxRedirects))
        }
    }

    /// FoundationNetworking uploads a range of a file (an s3 part) from a copy beside it: the folder holds nothing
    /// more afterwards (a copy a killed process left goes too, a running one's stays), and a range past the file's
    /// end fails naming the file, before anything is sent.
    @Test func foundationUploadsARangeFromACopyThatLeavesNothingBehind() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("range-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("song.m4a")
        try Data("0123456789".utf8).write(to: file)
        // No process has this id (above Linux's pid_max); this test's own process is running.
        let killed = folder.appendingPathComponent(".upload-range-\(Int32.max)-a1b2c3")
        let running = folder.appendingPathComponent(".upload-range-\(getpid())-d4e5f6")
        try Data("left".utf8).write(to: killed)
        try Data("busy".utf8).write(to: running)
        let transport = FoundationTransport()
        let response = try await transport.upload(
            UploadRequest(url: server.url(path: "/upload/part"), body: .file(file, offset: 2, length: 5))) { _ in }
        #expect(response.status == 200)
        #expect(response.headers["X-Received-SHA256"] == SHA256.hex(of: Data("23456".utf8)))
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
                == [running.lastPathComponent, "song.m4a"])
        try FileManager.default.removeItem(at: running)

        let before = server.requests.count
        let error = await #expect(throws: TransportError.self) {
            _ = try await transport.upload(
                UploadRequest(url: server.url(path: "/upload/late"), body: .file(file, offset: 8, length: 5))) { _ in }
        }
        #expect(error?.description.contains(file.path) == true)
        #expect(error?.description.contains("ended early") == true)
        #expect(server.requests.count == before)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["song.m4a"])
        await transport.shutdown()
    }

    @Test func theScriptedTransportKeepsTheContract() async throws {
        try await TransportContract.run { settings in
            ScriptedTransport(answeringFor: settings.server, settings: settings)
        }
    }

    /// The suite finds a broken transport and names the clause: one that ignores the kept bytes of a resume
    /// and cancellation breaks at least those clauses.
    @Test func aBrokenTransportIsNamedClauseByClause() async throws {
        let error = await #expect(throws: ContractFailure.self) {
            try await TransportContract.run(clauses: [.resumesWithIfRange, .statusAndHeaders]) { _ in
                ScriptedTransport(send: { request in
                    HTTPResponse(status: 200, headers: [:], url: request.url, body: Data())
                })
            }
        }
        #expect(error?.broken.map(\.clause) == ["resume with Range and If-Range", "status and headers"])
        #expect(String(describing: error).contains("TransportContract: 2 clauses broken"))
    }
}

/// The contract uses no test framework of its own: from XCTest it is the same call.
final class TransportContractXCTests: XCTestCase {
    func testTheScriptedTransportKeepsTheContract() async throws {
        try await TransportContract.run(clauses: [.statusAndHeaders, .resumesWithIfRange, .redirectsOnlyToHTTP]) {
            ScriptedTransport(answeringFor: $0.server, settings: $0)
        }
    }
}
