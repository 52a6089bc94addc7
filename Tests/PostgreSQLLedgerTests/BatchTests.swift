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

    /// A batch's keys are looked up one by one, also in a run the server's statistics have not seen: a join the
    /// server planned for a run of one row hashed every row of the run for each batch.
    @Test func storedEntriesReadOnlyTheirKeysRowsInARunTheStatisticsHaveNotSeen() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "unseen")
                let keys = (0..<8).map { Self.key("f\($0 * 1_000)") }
                let explained = try ledger.withConnection { connection in
                    try Self.addUnseenRun("unseen", status: "stored", connection)
                    return try connection.query(
                        "EXPLAIN (ANALYZE, FORMAT JSON) " + PostgreSQLLedger.storedEntriesSQL,
                        [
                            .text("unseen"), .text(PGConnection.arrayLiteral(keys.map(\.source))),
                            .text(PGConnection.arrayLiteral(keys.map(\.itemID))),
                            .text(PGConnection.arrayLiteral(keys.map(\.asset.rawValue))),
                        ]
                    ).text(0, 0)
                }
                let plan = try #require(explained)
                let tree = try JSONSerialization.jsonObject(with: Data(plan.utf8))
                let rowsRead = Self.rowsRead(from: "mediafetch_items", in: tree)
                #expect(
                    rowsRead <= keys.count,
                    "the server read \(rowsRead) rows of the run for \(keys.count) keys:\n\(plan)")
                #expect(Set(try ledger.storedEntries(keys).keys) == Set(keys))
            }
        }
    }

    /// A worker confirms only its own claim of an open asset, and finds it by its key alone: the open rows' index
    /// cannot serve the statement. (With `status <> 'stored'`, the index's condition, among its conditions, the
    /// server took that index for a run its statistics had not seen, and read every open row of the run, 0.7 s at
    /// 100,000; how large the tables must be for that choice is the planner's, so what is checked here is that the
    /// index is out of its reach: with the primary key gone and sequential scans all but forbidden, it still does
    /// not take it.)
    @Test func aClaimIsConfirmedByItsKeyForItsWorkerWhileOpen() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "claims", worker: "w1")
                let claimed = Self.key("f5000")
                let explained = try ledger.withConnection { connection in
                    try Self.addUnseenRun("claims", status: "pending", connection)
                    try connection.execute(
                        """
                        UPDATE mediafetch_items SET claimed_by = 'w1', lease_until = now() + interval '1 minute'
                        WHERE run = 'claims' AND item_id IN ('f5000', 'f6000')
                        """)
                    try connection.execute("BEGIN")
                    defer { try? connection.execute("ROLLBACK") }
                    try connection.execute("ALTER TABLE mediafetch_items DROP CONSTRAINT mediafetch_items_pkey")
                    try connection.execute("SET LOCAL enable_seqscan = off")
                    return try connection.query(
                        "EXPLAIN (FORMAT JSON) " + PostgreSQLLedger.confirmClaimSQL,
                        [
                            .text("claims"), .text(claimed.source), .text(claimed.itemID),
                            .text(claimed.asset.rawValue), .text("w1"), .text("15"),
                        ]
                    ).text(0, 0)
                }
                let plan = try #require(explained)
                #expect(!plan.contains("mediafetch_items_open"), "the open rows' index serves the statement:\n\(plan)")
                // What it answers, asked of the server (a ledger that claimed nothing itself has no fresh claims).
                #expect(try ledger.confirmClaim(claimed))
                #expect(try !ledger.confirmClaim(Self.key("f7000")), "an asset no one claimed")
                let other = try PostgreSQLLedger(uri: uri, run: "claims", worker: "w2")
                #expect(try !other.confirmClaim(claimed), "another worker's claim")
                try ledger.withConnection { connection in
                    try connection.execute(
                        "UPDATE mediafetch_items SET status = 'stored' WHERE run = 'claims' AND item_id = 'f6000'")
                }
                #expect(
                    try !ledger.confirmClaim(Self.key("f6000")), "a stored asset, even with the worker's name on it")
            }
        }
    }

    /// A heartbeat renews the claims this worker holds, each by its key, and says how the worker is doing; a claim
    /// left under the same name by an earlier process, which no one works on, is left to expire, and a stored one
    /// is forgotten.
    @Test func aHeartbeatRenewsTheClaimsThisWorkerHoldsAndNoOthers() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "beats", worker: "w1")
                try ledger.join()
                let assets = ["a", "b", "c", "left"].enumerated().map { place, id in
                    let item = MediaItem(id: id, title: id)
                    return PlannedAsset(
                        key: Self.key(id), item: item,
                        plan: StoragePlan(item: item.ref, asset: .preview, relativePath: "\(id).m4a"),
                        url: Self.url, sequence: Int64(place))
                }
                try ledger.addPlanned(assets)
                #expect(try ledger.claim(limit: 3).map(\.key.itemID) == ["a", "b", "c"])
                ledger.stored(Self.key("c"), StoredRecord(location: "c.m4a", size: 1, sha256: nil))
                try ledger.flush()
                // Every lease about to end, "left" claimed under this name by a process before this one, and "b"
                // stored by another worker that took it over (its record tells that a second store left nothing).
                try ledger.withConnection { connection in
                    try connection.execute(
                        """
                        UPDATE mediafetch_items SET lease_until = now() + interval '2 seconds' WHERE run = 'beats';
                        UPDATE mediafetch_items SET claimed_by = 'w1' WHERE run = 'beats' AND item_id = 'left';
                        UPDATE mediafetch_items SET status = 'stored', claimed_by = NULL, lease_until = NULL
                        WHERE run = 'beats' AND item_id = 'b'
                        """)
                }
                #expect(ledger.claimedAt.withLock { $0[Self.key("b")] } != nil)
                try ledger.heartbeat(stored: 1, bytes: 7)
                // The claim the server no longer counts as this worker's is forgotten; the renewed one is kept.
                #expect(ledger.claimedAt.withLock { $0[Self.key("b")] } == nil)
                #expect(ledger.claimedAt.withLock { $0[Self.key("a")] } != nil)
                let (leases, worker) = try ledger.withConnection { connection in
                    let leases = try connection.query(
                        """
                        SELECT item_id, lease_until > now() + interval '10 seconds' FROM mediafetch_items
                        WHERE run = 'beats' ORDER BY item_id
                        """)
                    let worker = try connection.query(
                        """
                        SELECT stored, bytes, heartbeat_at > now() - interval '10 seconds' FROM mediafetch_workers
                        WHERE run = 'beats' AND worker = 'w1'
                        """)
                    let renewed = (0..<leases.count).map {
                        "\(leases.text($0, 0) ?? "?"): \(leases.bool($0, 1).map(String.init) ?? "none")"
                    }
                    let said = (0..<worker.count).map {
                        [worker.int64($0, 0), worker.int64($0, 1), worker.bool($0, 2) == true ? 1 : 0]
                    }
                    return (renewed, said)
                }
                // Stored ones are not renewed: c's lease, set above after its store, and b's, cleared by its store.
                #expect(leases == ["a: true", "b: none", "c: false", "left: false"])
                #expect(worker == [[1, 7, 1]])
            }
        }
    }

    /// Whether the round is planned reads the run's own row, and says what progress() says of it.
    @Test func isPlannedFollowsTheRoundsPlanning() async throws {
        try await PostgreSQLServer.with { server in
            let uri = server.uri
            try await PostgreSQLServer.offThePool {
                let ledger = try PostgreSQLLedger(uri: uri, run: "rounds", worker: "w1")
                #expect(try !ledger.isPlanned(), "a run no one joined")
                try ledger.join()
                #expect(try !ledger.isPlanned())
                #expect(try ledger.tryToPlan())
                try ledger.finishPlanning(sourceError: nil)
                #expect(try ledger.isPlanned())
                #expect(try ledger.progress().planned)
                // Joined again with no one else at work: a new round, to be planned again.
                try ledger.leave(state: "done")
                try ledger.join()
                #expect(try !ledger.isPlanned())
                #expect(try !ledger.progress().planned)
            }
        }
    }

    /// Adds 20,000 rows with `status` to `run`, under statistics taken while the table held another run only, of
    /// 20,000 stored rows (and autovacuum off, so that none are taken after): the server then expects next to no
    /// row of `run`, and next to no open row at all.
    static func addUnseenRun(_ run: String, status: String, _ connection: PGConnection) throws {
        let rows = { (run: String, status: String, count: Int) in
            """
            INSERT INTO mediafetch_items (run, source, item_id, asset, url, status, location, updated_at, seq)
            SELECT '\(run)', 's', 'f' || g, 'preview', 'http://127.0.0.1/f' || g, '\(status)', 'f' || g, 0, g
            FROM generate_series(0, \(count - 1)) g
            """
        }
        try connection.execute("ALTER TABLE mediafetch_items SET (autovacuum_enabled = false)")
        try connection.execute(rows("earlier " + run, "stored", 20_000))
        try connection.execute("ANALYZE mediafetch_items")
        try connection.execute(rows(run, status, 20_000))
    }

    /// The rows the scans of `table` in an `EXPLAIN (ANALYZE, FORMAT JSON)` plan returned, over all their loops.
    static func rowsRead(from table: String, in plan: Any) -> Int {
        if let list = plan as? [Any] { return list.map { rowsRead(from: table, in: $0) }.reduce(0, +) }
        guard let node = plan as? [String: Any] else { return 0 }
        var rows = 0
        if node["Relation Name"] as? String == table, (node["Node Type"] as? String)?.hasSuffix("Scan") == true {
            rows += ((node["Actual Rows"] as? Int) ?? 0) * ((node["Actual Loops"] as? Int) ?? 1)
        }
        for (key, value) in node where key == "Plan" || key == "Plans" { rows += rowsRead(from: table, in: value) }
        return rows
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
