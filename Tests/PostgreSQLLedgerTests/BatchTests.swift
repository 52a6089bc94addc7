import Foundation
import MediaFetchCore
import MediaFetchTesting
@testable import PostgreSQLLedger
import Testing

/// How the PostgreSQL ledger sends its writes: a batch is one pipeline of prepared statements, all or none; a due
/// batch holds a download under way back once; keys of any text survive the arrays they are sent in.
@Suite("PostgreSQL batches", .serialized)
struct BatchTests {
    static let url = URL(fileURLWithPath: "/x")

    static func key(_ id: String) -> LedgerKey { LedgerKey(source: "s", itemID: id, asset: .preview) }

    @Test func aBatchTheServerRefusesIsRolledBackWholeAndStaysQueued() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "refused")
                try ledger.withConnection {
                    try $0.execute(
                        "ALTER TABLE mediafetch_items ADD CONSTRAINT test_refused CHECK (item_id <> 'refused')")
                }
                for id in ["a", "refused", "b"] { ledger.begin(Self.key(id), title: "t", url: Self.url) }
                let error = #expect(throws: LedgerError.self) { try ledger.flush() }
                #expect(error?.isUnreachable == false, "a refused statement is no lost connection")
                // The pipeline's statements before the refused one were rolled back with it.
                #expect(try ledger.committedEntry(Self.key("a")) == nil)
                // The same connection goes on (it left pipeline mode), and the batch is still queued.
                try ledger.withConnection { try $0.execute("ALTER TABLE mediafetch_items DROP CONSTRAINT test_refused") }
                try ledger.flush()
                #expect(try ledger.entries().map(\.key.itemID) == ["a", "b", "refused"])
            }
        }
    }

    @Test func aDueBatchHoldsADownloadUnderWayBackOnce() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                // Every flushIfDue is due.
                let ledger = try PostgreSQLLedger(uri: uri, run: "held", batchSize: 1, batchAge: .zero)
                let running = Self.key("running")
                let done = Self.key("done")
                ledger.begin(running, title: "t", url: Self.url)
                ledger.responded(running, validator: Validator(etag: "\"e\"", lastModified: nil), expectedBytes: 9)
                ledger.begin(done, title: "t", url: Self.url)
                ledger.stored(done, StoredRecord(location: "done.m4a", size: 3, sha256: nil))
                try ledger.flushIfDue()
                ledger.waitForBackgroundCommits()
                #expect(try ledger.committedEntry(done)?.status == .stored)
                #expect(try ledger.committedEntry(running) == nil, "a download under way went with the first batch")
                // Still under way at the next batch: it goes now (a validator reaches the server within two).
                try ledger.flushIfDue()
                ledger.waitForBackgroundCommits()
                let entry = try ledger.committedEntry(running)
                #expect(entry?.status == .partial, "held back twice")
                #expect(entry?.validator?.etag == "\"e\"")
                #expect(entry?.expectedBytes == 9)
                // A flush holds nothing back.
                let other = Self.key("other")
                ledger.begin(other, title: "t", url: Self.url)
                try ledger.flush()
                #expect(try ledger.committedEntry(other)?.status == .pending)
            }
        }
    }

    @Test func storedEntriesFindKeysOfAnyText() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "texts")
                let ids = [
                    "plain", "with \"quotes\"", "back\\slash", "a,b", "{braces}", "NULL", "", " spaced ", "näive ✓",
                    "'single'",
                ]
                for id in ids {
                    ledger.begin(Self.key(id), title: "t", url: Self.url)
                    ledger.stored(Self.key(id), StoredRecord(location: "\(id).m4a", size: 1, sha256: nil))
                }
                ledger.begin(Self.key("pending"), title: "t", url: Self.url)
                try ledger.flush()
                let found = try ledger.storedEntries(ids.map(Self.key) + [Self.key("pending"), Self.key("absent")])
                #expect(Set(found.keys) == Set(ids.map(Self.key)))
                #expect(found[Self.key("back\\slash")]?.location == "back\\slash.m4a")
            }
        }
    }

    /// The planner's batch goes as arrays: every value comes back from a claim as written, and an asset planned with
    /// a stored entry (the sink lost its file) is pending again.
    @Test func plannedAssetsComeBackFromAClaimAsWritten() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "planned", worker: "w1")
                try ledger.join()
                let lost = Self.key("lost \"one\"")
                ledger.begin(lost, title: "t", url: Self.url)
                ledger.stored(lost, StoredRecord(location: "gone.m4a", size: 1, sha256: nil))
                try ledger.flush()
                let stored = try #require(try ledger.entry(lost))
                let ids = ["a,{b}", "back\\slash", "lost \"one\""]
                let assets = ids.enumerated().map { place, id in
                    let item = MediaItem(id: id, title: "Title \(place) \"quoted\"", artist: "Ärtist")
                    return PlannedAsset(
                        key: Self.key(id), item: item,
                        plan: StoragePlan(item: item.ref, asset: .preview, relativePath: "dir/\(id).m4a"),
                        url: URL(string: "http://127.0.0.1/\(place)?q=1")!, sequence: Int64(place),
                        entry: id == lost.itemID ? stored : nil)
                }
                try ledger.addPlanned(assets)
                let claimed = try ledger.claim(limit: 10)
                #expect(claimed.map(\.key.itemID) == ids)
                #expect(claimed.map(\.sequence) == [0, 1, 2])
                #expect(claimed.map(\.plan.relativePath) == ids.map { "dir/\($0).m4a" })
                #expect(claimed.map(\.item.title) == assets.map(\.item.title))
                #expect(claimed.map(\.item.artist) == ["Ärtist", "Ärtist", "Ärtist"])
                #expect(claimed.map(\.url) == assets.map(\.url))
                #expect(claimed.last?.entry?.status == .pending, "a stored asset planned again is not pending")
                #expect(claimed.last?.entry?.location == nil)
            }
        }
    }

    /// A due batch is committed on the ledger's own thread; when the server is away there, the next flushIfDue
    /// says so, and the writes wait for it.
    @Test func aDueBatchThatFailsInTheBackgroundIsSaidAndKept() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "background", batchSize: 1, batchAge: .zero)
                let item = Self.key("kept")
                try server.stop(mode: .immediate)
                ledger.begin(item, title: "t", url: Self.url)
                ledger.stored(item, StoredRecord(location: "kept.m4a", size: 1, sha256: nil))
                try ledger.flushIfDue()
                ledger.waitForBackgroundCommits()
                let error = #expect(throws: LedgerError.self) { try ledger.flushIfDue() }
                #expect(error?.isUnreachable == true)
                ledger.waitForBackgroundCommits()
                try server.start()
                try ledger.flush()
                #expect(try ledger.committedEntry(item)?.status == .stored)
            }
        }
    }
}
