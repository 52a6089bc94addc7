import Foundation
import MediaFetchCore
import MediaFetchTesting
import PostgreSQLLedger
import Testing

/// The throwaway cluster the shared-run tests use: it starts, stops and starts again on the same port, and the
/// ledger's queued writes survive the server being away.
@Suite("PostgreSQL server", .serialized)
struct PostgreSQLServerTests {
    @Test func aQueuedBatchWaitsOutARestart() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "restart")
                let key = LedgerKey(source: "s", itemID: "1", asset: .preview)
                ledger.begin(key, title: "t", url: URL(fileURLWithPath: "/x"))
                try ledger.flush()
                try server.stop(mode: .immediate)
                ledger.stored(key, StoredRecord(location: "l", size: 1, sha256: nil))
                #expect(throws: LedgerError.self) { try ledger.flush() }
                try server.start()
                try ledger.flush()
                #expect(try ledger.entry(key)?.status == .stored)
            }
        }
    }

    @Test func aPasswordNeverShowsInAnError() async throws {
        try await PostgreSQLServer.with { server in
            let uri = "postgresql://nobody-here:hunter2-secret@127.0.0.1:\(server.port)/postgres"
            await PostgreSQLServer.offThePool {
                do {
                    _ = try PostgreSQLLedger(uri: uri, run: "x")
                    Issue.record("a role that does not exist was let in")
                } catch {
                    let text = String(describing: error)
                    #expect(!text.contains("hunter2"))
                    #expect(text.contains("postgresql://nobody-here:***@127.0.0.1"))
                }
            }
        }
    }
}
