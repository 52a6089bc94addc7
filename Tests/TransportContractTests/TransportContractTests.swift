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

    /// All but one clause: FoundationNetworking on Linux sends a body stream chunked, without the Content-Length
    /// an object store requires, so the foundation transport uploads whole files and refuses a range of one
    /// (``TransportError/Code/unsupported``); the s3 sink's multipart parts need the curl transport.
    @Test func foundationKeepsTheContract() async throws {
        try await TransportContract.run(clauses: TransportContract.Clause.all.filter { $0 != .uploadsAFileRange }) {
            settings in
            FoundationTransport(
                .init(
                    concurrency: settings.concurrency, idleTimeout: settings.idleTimeout,
                    maxRedirects: settings.maxRedirects))
        }
    }

    /// The one clause the foundation transport does not meet fails as documented, before anything is sent.
    @Test func foundationRefusesARangeOfAFile() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("range-\(UUID().uuidString)")
        try Data("0123456789".utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let transport = FoundationTransport()
        let url = try #require(URL(string: "http://127.0.0.1:9/never"))
        let error = await #expect(throws: TransportError.self) {
            _ = try await transport.upload(UploadRequest(url: url, body: .file(file, offset: 2, length: 5))) { _ in }
        }
        #expect(error?.code == .unsupported)
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
