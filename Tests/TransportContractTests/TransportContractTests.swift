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
