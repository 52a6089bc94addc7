import Foundation
import MediaFetchCore
import MediaFetchTesting
@testable import PostgreSQLLedger
import Testing

/// The one ledger contract, run on both back ends: SQLite in a folder, and PostgreSQL in a throwaway cluster.
@Suite("Ledger contract", .serialized)
struct LedgerContractTests {
    @Test func theSQLiteLedgerKeepsTheContract() async throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("ledger-contract-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: base) }
        try await PostgreSQLServer.offThePool {
            try LedgerContract.run { place in try Ledger(directory: base.appendingPathComponent(place)) }
        }
    }

    @Test func thePostgreSQLLedgerKeepsTheContract() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                try LedgerContract.run { place in try PostgreSQLLedger(uri: uri, run: place) }
            }
        }
    }

    /// Over the unix socket too, and a second build opening the same server finds the schema current.
    @Test func thePostgreSQLLedgerWorksOverItsUnixSocketAndMigratesOnce() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.socketURI
            try await PostgreSQLServer.offThePool {
                let first = try PostgreSQLLedger(uri: uri, run: "a")
                let second = try PostgreSQLLedger(uri: uri, run: "b")
                #expect(try first.schemaVersion() == PostgreSQLLedger.migrations.count)
                #expect(try second.schemaVersion() == PostgreSQLLedger.migrations.count)
                first.begin(LedgerKey(source: "s", itemID: "1", asset: .preview), title: "t", url: URL(fileURLWithPath: "/x"))
                try first.flush()
                // Runs do not see each other's rows.
                #expect(try second.entries().isEmpty)
                #expect(try first.entries().count == 1)
            }
        }
    }
}
