import Foundation
import MediaFetchCore
import Synchronization

/// The ledger in PostgreSQL (`ledger: postgresql://USER@HOST:PORT/DB` in a config, any libpq URI): what SQLite's
/// ``Ledger`` records, in tables every machine that reaches the server shares, each row under the run's `name:`.
///
/// Writes are queued, as in SQLite, and a batch goes to the server as one transaction in one round trip: libpq's
/// pipeline mode, each kind of statement prepared once per connection, a batch's whole downloads one statement over
/// arrays. A due batch (``flushIfDue()``) is committed on the ledger's own thread, so that the caller, a thread of
/// Swift's task pool, never waits on the network; ``flush()`` commits on the caller's. A batch the server did not
/// take (it restarted, the network dropped) stays queued and goes with the next flush, on a new connection. The schema is versioned in `mediafetch_schema` and migrated by the first
/// connection of a newer build, under an advisory lock so that workers starting together migrate once.
///
/// For several workers of one run it is also a ``SharedRunLedger``: see `PostgreSQLLedger+SharedRun.swift`.
public final class PostgreSQLLedger: Sendable {
    /// The descriptor `BundledPlugins` registers: `postgresql://` and `postgres://` URIs.
    public static let descriptor = LedgerDescriptor(
        schemes: ["postgresql", "postgres"],
        summary: "PostgreSQL (libpq): one run shared by workers on any machine that reaches the server"
    ) { request in
        try PostgreSQLLedger(
            uri: request.selection.uri, run: request.runName, worker: request.worker,
            plannerKeys: request.stateDirectory.appendingPathComponent("planner-keys"))
    }

    /// The URI with the password removed, for messages.
    public let location: String
    /// The run every row belongs to.
    public let run: String
    /// This worker's id in the run.
    public let worker: String
    /// How long a claim lasts without a heartbeat.
    public let lease: Duration
    /// The connection holding the planning lock while this worker plans (a session lock: it goes with the
    /// connection, so a planner killed with `-9` loses it).
    let planning = Mutex<PGConnection?>(nil)
    /// When this worker joined (seconds since 1970): failures older than that are tried again.
    let joinedAt = Mutex(Date().timeIntervalSince1970)
    let uri: String
    let secrets: [String]
    private let batchSize: Int
    private let batchAge: Duration

    /// Writes waiting for the next batch; the lock is held only to add or take writes.
    private struct Queue {
        var pending: [Write] = []
        var lastFlush = ContinuousClock.now
        /// The downloads under way whose writes the last due batch held back (see ``commit(holdingBack:)``).
        var heldBack: Set<LedgerKey> = []
        /// The run keys among `pending`, for lookups before they are committed.
        var runKeys: [RunKeyID: String?] = [:]
    }

    private struct RunKeyID: Hashable {
        var scope: String
        var key: String
    }

    typealias Write = LedgerWrite

    private let queue = Mutex(Queue())
    /// The run keys this process took since its ``resetRunKeys()``, nil before one: on this machine's disk, in a
    /// SQLite ledger of their own (its filter answers most lookups without reading it). The planner resets the keys
    /// and is the only one to take any while it holds the planning lock, so these are all there are: a lookup needs
    /// no round trip, none goes to the server, and the planner holds nothing per item in memory.
    private let takenHere = Mutex<Ledger?>(nil)
    /// Where ``takenHere`` is opened.
    private let plannerKeys: URL
    /// Whether ``plannerKeys`` is a temporary folder of this instance's own, removed with it.
    private let ownsPlannerKeys: Bool
    /// When each claim this worker holds was last known live on the server (taken before the statement that set
    /// its lease was sent): a store within the lease of it needs no round trip to confirm the claim.
    let claimedAt = Mutex<[LedgerKey: ContinuousClock.Instant]>([:])
    /// The thread due batches are committed on (``flushIfDue()``), one at a time.
    private let committer = DispatchQueue(label: "mediafetch.postgresql-ledger.commits")
    private let background = Mutex(Background())
    /// Held from taking a batch to its commit, so that batches reach the server in the order they were queued.
    private let commitGate = Mutex(())
    /// The connection, made again after it broke; held while a batch is written or the ledger read.
    let connection = Mutex<PGConnection?>(nil)
    /// The connection a worker claims by, made at its first claim: a claim need not wait for a batch being
    /// committed, and its plan is the one that fits a claim. The claim takes the lowest open places; the planner
    /// chooses between reading the run's open rows in place order from their index (`mediafetch_items_open`) up
    /// to the limit, and reading every open row of the run and sorting them. Before statistics know the run (a new
    /// run, a table not analyzed yet) it took the second, costing a claim time in proportion to the run's size
    /// (3 ms a claim in a 2,000-item run); `enable_sort = off` on this connection leaves it the first.
    let claimConnection = Mutex<PGConnection?>(nil)

    /// Connects, creates or migrates the schema.
    /// - Parameters:
    ///   - uri: a libpq connection URI or `key=value` string, password and all (it is never shown).
    ///   - run: the run's name.
    /// - Throws: ``LedgerError`` saying what is wrong (unreachable, refused, written by a newer build), with the URI
    ///   redacted.
    ///   - worker: this worker's id in a shared run; nil for host:pid.
    ///   - lease: how long a claim lasts without a heartbeat.
    ///   - batchSize: queued writes that make a batch due (or `batchAge` since the last): a batch is a round trip,
    ///     and a download that spans two batches costs three statements instead of one. (SQLite's batches are
    ///     larger, 2,048, for the WAL pages each one writes.)
    ///   - batchAge: how old a batch may grow before it is due.
    ///   - plannerKeys: the folder where this worker keeps the run's keys (planned names, ids seen) while it plans;
    ///     the run's state directory has one (`planner-keys`). Default: a temporary folder, removed with the ledger.
    public init(
        uri: String, run: String, worker: String? = nil, lease: Duration = .seconds(15), batchSize: Int = 1024,
        batchAge: Duration = .milliseconds(250), plannerKeys: URL? = nil
    ) throws {
        self.plannerKeys =
            plannerKeys
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("mediafetch-planner-keys-\(UUID())")
        ownsPlannerKeys = plannerKeys == nil
        self.uri = uri
        self.run = run
        self.worker = worker ?? LedgerRequest.defaultWorker
        self.lease = lease
        self.location = LedgerSelection.redact(uri)
        self.secrets = [PGConnection.password(in: uri)].compactMap { $0 }
        self.batchSize = batchSize
        self.batchAge = batchAge
        do {
            try PGConnection.validate(uri)
        } catch let error as PGError {
            throw LedgerError("the ledger URI \(location) is not one libpq reads: \(error.message)")
        }
        try withConnection { try Self.migrate($0, location: location) }
    }

    deinit {
        if ownsPlannerKeys { try? FileManager.default.removeItem(at: plannerKeys) }
    }

    /// Runs `body` with the connection, connecting first when there is none; a connection that broke is dropped,
    /// so that the next call connects again.
    /// - Throws: ``LedgerError`` naming the server (redacted), with the ``PGError`` as its cause.
    func withConnection<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try withConnection(connection, body)
    }

    /// ``withConnection(_:)`` on the connection claims go by (``claimConnection``).
    func withClaimConnection<T>(_ body: (PGConnection) throws -> T) throws -> T {
        try withConnection(claimConnection, setUp: "SET enable_sort = off", body)
    }

    private func withConnection<T>(
        _ connection: borrowing Mutex<PGConnection?>, setUp: String? = nil, _ body: (PGConnection) throws -> T
    ) throws -> T {
        try connection.withLock { held in
            do {
                if held == nil || held?.isOK == false {
                    held = nil
                    let made = try PGConnection(uri: uri, secrets: secrets)
                    if let setUp { try made.execute(setUp) }
                    held = made
                }
                guard let open = held else { throw PGError("no connection", connectionLost: true) }
                return try body(open)
            } catch let error as PGError {
                if error.connectionLost { held = nil }
                throw LedgerError(
                    "the PostgreSQL ledger \(location): \(error.message)", cause: error,
                    isUnreachable: error.connectionLost)
            }
        }
    }

    // MARK: Reading

    static let columns = """
        source, item_id, asset, title, url, etag, last_modified, expected_bytes, received_bytes, sha256, status,
        reason, attempts, location, updated_at
        """

    /// ``columns`` of the table aliased `i`.
    static let columnsOfI = columns.split(separator: ",").map {
        "i." + $0.trimmingCharacters(in: .whitespacesAndNewlines)
    }.joined(separator: ", ")

    static func entry(_ rows: PGRows, _ row: Int, offset: Int = 0) throws -> LedgerEntry {
        let column = { (index: Int) in index + offset }
        guard let source = rows.text(row, column(0)), let itemID = rows.text(row, column(1)),
            let asset = rows.text(row, column(2)).flatMap(AssetKind.init),
            let status = rows.text(row, column(10)).flatMap(LedgerStatus.init)
        else {
            throw LedgerError("the ledger holds a row this build cannot read; `mediafetch clean --all` starts over")
        }
        let etag = rows.text(row, column(5))
        let lastModified = rows.text(row, column(6))
        return LedgerEntry(
            key: LedgerKey(source: source, itemID: itemID, asset: asset),
            title: rows.text(row, column(3)) ?? "",
            url: rows.text(row, column(4)) ?? "",
            validator: etag == nil && lastModified == nil ? nil : Validator(etag: etag, lastModified: lastModified),
            expectedBytes: rows.int64(row, column(7)),
            receivedBytes: rows.int64(row, column(8)) ?? 0,
            sha256: rows.text(row, column(9)),
            status: status,
            reason: rows.text(row, column(11)),
            attempts: Int(rows.int64(row, column(12)) ?? 0),
            location: rows.text(row, column(13)),
            updatedAt: Date(timeIntervalSince1970: rows.double(row, column(14)) ?? 0))
    }

    /// Rows of this run that have been begun or planned, as entries.
    private func select(_ filter: String, _ parameters: [PGConnection.Value]) throws -> [LedgerEntry] {
        try flush()
        return try withConnection { connection in
            let rows = try connection.query(
                "SELECT \(Self.columns) FROM mediafetch_items WHERE run = $1\(filter) ORDER BY source, item_id, asset",
                [.text(run)] + parameters)
            return try (0..<rows.count).map { try Self.entry(rows, $0) }
        }
    }

    // MARK: Writing

    private func enqueue(_ write: Write) {
        queue.withLock { $0.pending.append(write) }
    }

    /// Takes the queued writes and sends them in one transaction, pipelined (one round trip, each kind of statement
    /// prepared once per connection); the caller holds ``commitGate``. Writes the server did not take go back to
    /// the head of the queue.
    ///
    /// - Parameter holdingBack: a due batch (not a flush) keeps back the writes of a download under way (begun or
    ///   answered, not yet stored, failed or paused) for one batch more, unless the last batch kept them back
    ///   already: most downloads end within a batch, and their begin, answer and store then fold into one statement
    ///   (``wholeDownloads(_:)``) instead of going as three across two batches. A download's validator is on the
    ///   server within two batches.
    private func commit(holdingBack: Bool = false) throws {
        var writes: [Write] = []
        var runKeys: [RunKeyID: String?] = [:]
        queue.withLock { queue in
            queue.lastFlush = .now
            swap(&writes, &queue.pending)
            swap(&runKeys, &queue.runKeys)
            guard holdingBack else {
                queue.heldBack = []
                return
            }
            var underWay: Set<LedgerKey> = []
            for write in writes {
                switch write {
                case .begin(let key, _, _), .responded(let key, _, _):
                    if !queue.heldBack.contains(key) { underWay.insert(key) }
                case .verified(let key, _, _), .stored(let key, _, _), .failed(let key, _, _), .paused(let key, _),
                    .retrying(let key):
                    underWay.remove(key)
                case .runKey: break
                }
            }
            queue.heldBack = underWay
            guard !underWay.isEmpty else { return }
            // Rows do not depend on each other: what is kept back goes ahead of what came since, in its own order.
            queue.pending = writes.filter { $0.key.map(underWay.contains) == true }
            writes.removeAll { $0.key.map(underWay.contains) == true }
        }
        guard !writes.isEmpty else { return }
        do {
            let now = String(Date().timeIntervalSince1970)
            let merged = Self.wholeDownloads(writes)
            var statements: [PGConnection.Statement] = []
            // The whole downloads, each key's only writes in the batch, go as one statement: rows do not depend on
            // each other, so they may go ahead of the rest.
            if !merged.isEmpty { statements.append(statement(merged, now: now)) }
            for write in writes {
                if let key = write.key, merged[key] != nil { continue }
                statements.append(statement(write, now: now))
            }
            try withConnection { _ = try $0.pipeline(statements) }
        } catch {
            queue.withLock { queue in
                queue.pending.insert(contentsOf: writes, at: 0)
                queue.runKeys.merge(runKeys) { _, newer in newer }
            }
            throw error
        }
    }

    /// A download whose writes in one batch are exactly begun, answered (once or more), stored.
    struct WholeDownload {
        var title: String
        var url: String
        var validator: Validator?
        var record: StoredRecord
    }

    /// The keys of `writes` whose writes are one whole download, folded (the common case: three statements become one).
    static func wholeDownloads(_ writes: [Write]) -> [LedgerKey: WholeDownload] {
        var byKey: [LedgerKey: [Write]] = [:]
        for write in writes {
            if let key = write.key { byKey[key, default: []].append(write) }
        }
        var whole: [LedgerKey: WholeDownload] = [:]
        for (key, list) in byKey where list.count >= 3 {
            guard case .begin(_, let title, let url) = list[0], case .stored(_, let record, _) = list[list.count - 1]
            else { continue }
            var validator: Validator??
            for write in list.dropFirst().dropLast() {
                guard case .responded(_, let answered, _) = write else {
                    validator = nil
                    break
                }
                validator = .some(answered)
            }
            guard let validator else { continue }
            whole[key] = WholeDownload(title: title, url: url, validator: validator, record: record)
        }
        return whole
    }

    /// The one statement of every whole download in a batch: each row as begin, responded and stored leave it,
    /// the values sent as arrays.
    private func statement(_ downloads: [LedgerKey: WholeDownload], now: String) -> PGConnection.Statement {
        let list = Array(downloads)
        func column(_ value: (LedgerKey, WholeDownload) -> String?) -> PGConnection.Value {
            PGConnection.array(list.map { value($0.key, $0.value) })
        }
        return PGConnection.Statement(
            name: "mediafetch_whole",
            sql: """
                INSERT INTO mediafetch_items AS i (run, source, item_id, asset, title, url, etag, last_modified,
                    expected_bytes, received_bytes, sha256, status, attempts, location, updated_at)
                SELECT $1, k.source, k.item_id, k.asset, k.title, k.url, k.etag, k.last_modified, k.size, k.size,
                    k.sha256, 'stored', 1, k.location, $2
                FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[],
                    $10::bigint[], $11::text[], $12::text[])
                    AS k(source, item_id, asset, title, url, etag, last_modified, size, sha256, location)
                ON CONFLICT (run, source, item_id, asset) DO UPDATE SET
                    title = excluded.title, url = excluded.url, etag = excluded.etag,
                    last_modified = excluded.last_modified, expected_bytes = excluded.expected_bytes,
                    received_bytes = excluded.received_bytes, sha256 = excluded.sha256, status = 'stored',
                    reason = NULL, attempts = 1, location = excluded.location, updated_at = excluded.updated_at,
                    claimed_by = NULL, lease_until = NULL
                """,
            parameters: [
                .text(run), .text(now), column { key, _ in key.source }, column { key, _ in key.itemID },
                column { key, _ in key.asset.rawValue }, column { $1.title }, column { $1.url },
                column { $1.validator?.etag }, column { $1.validator?.lastModified },
                column { String($1.record.size) }, column { $1.record.sha256 }, column { $1.record.location },
            ])
    }

    /// The statement of one write. Every statement of a kind has the same text (it is prepared once per
    /// connection); `$1` to `$4` are the row's key where it has one, the values follow.
    private func statement(_ write: Write, now: String) -> PGConnection.Statement {
        func keyed(_ name: String, _ key: LedgerKey, _ sql: String, _ values: [String?]) -> PGConnection.Statement {
            PGConnection.Statement(
                name: "mediafetch_" + name, sql: sql,
                parameters: [.text(run), .text(key.source), .text(key.itemID), .text(key.asset.rawValue)]
                    + values.map { .text($0) })
        }
        let key = "run = $1 AND source = $2 AND item_id = $3 AND asset = $4"
        // A worker whose claim went to another leaves that worker's row alone when it fails or pauses.
        func mine(_ parameter: Int) -> String { "(claimed_by IS NULL OR claimed_by = $\(parameter))" }
        switch write {
        case .begin(let item, let title, let url):
            return keyed(
                "begin", item,
                """
                INSERT INTO mediafetch_items AS i (run, source, item_id, asset, title, url, status, attempts, updated_at)
                VALUES ($1, $2, $3, $4, $5, $6, 'pending', 1, $7)
                ON CONFLICT (run, source, item_id, asset) DO UPDATE SET
                    title = excluded.title, url = excluded.url, attempts = 1,
                    status = CASE WHEN i.status IN ('stored', 'verified') THEN 'pending' ELSE i.status END,
                    updated_at = excluded.updated_at
                """, [title, url, now])
        case .responded(let item, let validator, let expected):
            return keyed(
                "responded", item,
                """
                UPDATE mediafetch_items SET etag = $5, last_modified = $6, expected_bytes = $7, status = 'partial',
                    updated_at = $8
                WHERE \(key) AND status <> 'stored'
                """, [validator?.etag, validator?.lastModified, expected.map(String.init), now])
        case .verified(let item, let size, let sha256):
            return keyed(
                "verified", item,
                """
                UPDATE mediafetch_items SET status = 'verified', location = NULL, received_bytes = $5,
                    expected_bytes = $5, sha256 = $6, reason = NULL, updated_at = $7
                WHERE \(key)
                """, [String(size), sha256, now])
        case .stored(let item, let record, _):
            return keyed(
                "stored", item,
                """
                UPDATE mediafetch_items SET status = 'stored', location = $5, received_bytes = $6, expected_bytes = $6,
                    sha256 = $7, reason = NULL, updated_at = $8, claimed_by = NULL, lease_until = NULL
                WHERE \(key)
                """, [record.location, String(record.size), record.sha256, now])
        case .failed(let item, let reason, let received):
            return keyed(
                "failed", item,
                """
                UPDATE mediafetch_items SET status = 'failed', reason = $5, received_bytes = $6, updated_at = $7,
                    claimed_by = NULL, lease_until = NULL
                WHERE \(key) AND status <> 'stored' AND \(mine(8))
                """, [reason, String(received), now, worker])
        case .retrying(let item):
            return keyed(
                "retrying", item,
                "UPDATE mediafetch_items SET attempts = attempts + 1, updated_at = $5 WHERE \(key)", [now])
        case .runKey(let scope, let name, let value):
            return PGConnection.Statement(
                name: "mediafetch_run_key",
                sql: """
                    INSERT INTO mediafetch_run_keys (run, scope, key, value) VALUES ($1, $2, $3, $4)
                    ON CONFLICT (run, scope, key) DO UPDATE SET value = excluded.value
                    """,
                parameters: [.text(run), .text(scope), .text(name), .text(value)])
        case .paused(let item, let received):
            return keyed(
                "paused", item,
                """
                UPDATE mediafetch_items SET status = 'partial', received_bytes = $5, updated_at = $6,
                    claimed_by = NULL, lease_until = NULL
                WHERE \(key) AND status <> 'stored' AND status <> 'verified' AND \(mine(7))
                """, [String(received), now, worker])
        }
    }
}

extension PostgreSQLLedger: RunLedger {
    public func entry(_ key: LedgerKey) throws -> LedgerEntry? {
        try select(
            " AND source = $2 AND item_id = $3 AND asset = $4",
            [.text(key.source), .text(key.itemID), .text(key.asset.rawValue)]
        ).first
    }

    public func entries() throws -> [LedgerEntry] {
        try select("", [])
    }

    /// Counted by the server: a shared run's status reads one row a status, not the run's entries.
    public func statusCounts() throws -> [LedgerStatus: Int] {
        try flush()
        return try withConnection { connection in
            let rows = try connection.query(
                "SELECT status, count(*) FROM mediafetch_items WHERE run = $1 GROUP BY status", [.text(run)])
            var counts: [LedgerStatus: Int] = [:]
            for row in 0..<rows.count {
                guard let status = rows.text(row, 0).flatMap(LedgerStatus.init(rawValue:)) else { continue }
                counts[status, default: 0] += Int(rows.int64(row, 1) ?? 0)
            }
            return counts
        }
    }

    public func entries(source: String) throws -> [LedgerKey: LedgerEntry] {
        let rows = try select(" AND source = $2", [.text(source)])
        return Dictionary(rows.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func committedEntry(_ key: LedgerKey) throws -> LedgerEntry? {
        try withConnection { connection in
            let rows = try connection.query(
                "SELECT \(Self.columns) FROM mediafetch_items WHERE run = $1 AND source = $2 AND item_id = $3 "
                    + "AND asset = $4",
                [.text(run), .text(key.source), .text(key.itemID), .text(key.asset.rawValue)])
            return rows.count == 0 ? nil : try Self.entry(rows, 0)
        }
    }

    public func forEachEntry(source: String, status: LedgerStatus, _ body: (LedgerEntry) throws -> Void) throws {
        try flush()
        var after = ("", "")
        while true {
            let page = try withConnection { connection in
                let rows = try connection.query(
                    "SELECT \(Self.columns) FROM mediafetch_items WHERE run = $1 AND source = $2 AND status = $3 "
                        + "AND (item_id, asset) > ($4, $5) ORDER BY item_id, asset LIMIT 512",
                    [.text(run), .text(source), .text(status.rawValue), .text(after.0), .text(after.1)])
                return try (0..<rows.count).map { try Self.entry(rows, $0) }
            }
            for entry in page { try body(entry) }
            guard let last = page.last, page.count == 512 else { return }
            after = (last.key.itemID, last.key.asset.rawValue)
        }
    }

    public func resetRunKeys() throws {
        try commitGate.withLock { _ in
            queue.withLock { queue in
                queue.pending.removeAll { if case .runKey = $0 { true } else { false } }
                queue.runKeys.removeAll()
            }
            _ = try withConnection { try $0.query("DELETE FROM mediafetch_run_keys WHERE run = $1", [.text(run)]) }
            try takenHere.withLock { taken in
                let local = try taken ?? Ledger(directory: plannerKeys)
                try local.resetRunKeys()
                taken = local
            }
        }
    }

    public func runKey(scope: String, key: String) throws -> String?? {
        if let taken = takenHere.withLock({ $0 }) { return try taken.runKey(scope: scope, key: key) }
        // The gate first, so that no batch is between the queue and the server while we look.
        return try commitGate.withLock { _ in
            if let queued = queue.withLock({ $0.runKeys[RunKeyID(scope: scope, key: key)] }) { return .some(queued) }
            return try withConnection { connection in
                let rows = try connection.query(
                    "SELECT value FROM mediafetch_run_keys WHERE run = $1 AND scope = $2 AND key = $3",
                    [.text(run), .text(scope), .text(key)])
                return rows.count == 0 ? nil : .some(rows.text(0, 0))
            }
        }
    }

    public func takeRunKey(scope: String, key: String, value: String?) {
        // After a reset this process holds every key there is (see ``takenHere``): none goes to the server.
        if let taken = takenHere.withLock({ $0 }) {
            taken.takeRunKey(scope: scope, key: key, value: value)
            // A batch that cannot be written stays queued, and is looked up there.
            try? taken.flushIfDue()
            return
        }
        queue.withLock { queue in
            queue.pending.append(.runKey(scope: scope, key: key, value: value))
            queue.runKeys[RunKeyID(scope: scope, key: key)] = .some(value)
        }
    }

    public func begin(_ key: LedgerKey, title: String, url: URL) {
        enqueue(.begin(key, title: title, url: url.absoluteString))
    }

    public func responded(_ key: LedgerKey, validator: Validator?, expectedBytes: Int64?) {
        enqueue(.responded(key, validator: validator, expected: expectedBytes))
    }

    public func verified(_ key: LedgerKey, size: Int64, sha256: String?) {
        enqueue(.verified(key, size: size, sha256: sha256))
    }

    public func stored(_ key: LedgerKey, _ record: StoredRecord) {
        enqueue(.stored(key, record, name: nil))
        claimedAt.withLock { _ = $0.removeValue(forKey: key) }
    }

    public func failed(_ key: LedgerKey, reason: String, receivedBytes: Int64) {
        enqueue(.failed(key, reason: reason, received: receivedBytes))
        claimedAt.withLock { _ = $0.removeValue(forKey: key) }
    }

    public func retrying(_ key: LedgerKey) { enqueue(.retrying(key)) }

    public func paused(_ key: LedgerKey, receivedBytes: Int64) {
        enqueue(.paused(key, received: receivedBytes))
        claimedAt.withLock { _ = $0.removeValue(forKey: key) }
    }

    public func flushIfDue() throws {
        let due = queue.withLock { queue in
            !queue.pending.isEmpty
                && (queue.pending.count >= batchSize || ContinuousClock.now - queue.lastFlush >= batchAge)
        }
        guard due else { return }
        // What the last commit in the background met (a server away) is said here, once.
        if let failure = background.withLock({ state -> LedgerError? in
            defer { state.failure = nil }
            return state.failure
        }) {
            throw failure
        }
        let start = background.withLock { state -> Bool in
            defer { state.scheduled = true }
            return !state.scheduled
        }
        guard start else { return }
        // The round trip happens on the ledger's own thread, not on the caller's (a thread of Swift's task pool,
        // of which there is one a core): the caller goes on at once.
        committer.async {
            self.background.withLock { $0.scheduled = false }
            do {
                try self.commitGate.withLock { _ in try self.commit(holdingBack: true) }
            } catch {
                let failure =
                    error as? LedgerError
                    ?? LedgerError("the PostgreSQL ledger \(self.location): \(error)", cause: error)
                self.background.withLock { $0.failure = failure }
            }
        }
    }

    /// Returns once the commits ``flushIfDue()`` started are done (for tests).
    func waitForBackgroundCommits() { committer.sync {} }

    /// Whether a commit in the background is waiting to start, and what the last one failed with.
    private struct Background {
        var scheduled = false
        var failure: LedgerError?
    }

    public func flush() throws {
        try commitGate.withLock { _ in try commit() }
    }

    public func removeAll() throws {
        queue.withLock { $0.pending.removeAll() }
        try withConnection { connection in
            let run = try connection.literal(run)
            try connection.execute(
                """
                BEGIN;
                DELETE FROM mediafetch_items WHERE run = \(run);
                DELETE FROM mediafetch_source_state WHERE run = \(run);
                DELETE FROM mediafetch_run_keys WHERE run = \(run);
                DELETE FROM mediafetch_workers WHERE run = \(run);
                DELETE FROM mediafetch_runs WHERE run = \(run);
                COMMIT;
                """)
        }
    }

    public func forgetPartials() throws {
        try flush()
        _ = try withConnection { connection in
            try connection.query(
                """
                UPDATE mediafetch_items SET status = 'pending', received_bytes = 0
                WHERE run = $1 AND status IN ('partial', 'pending', 'verified')
                """, [.text(run)])
        }
    }

    public func sourceValue(source: String, key: String) throws -> Data? {
        try withConnection { connection in
            let rows = try connection.query(
                "SELECT value FROM mediafetch_source_state WHERE run = $1 AND source = $2 AND key = $3",
                [.text(run), .text(source), .text(key)], binary: true)
            return rows.count == 0 ? nil : rows.bytes(0, 0) ?? Data()
        }
    }

    public func setSourceValues(source: String, _ values: [(key: String, value: Data?)]) throws {
        try withConnection { connection in
            try connection.query("BEGIN")
            do {
                for (key, value) in values {
                    if let value {
                        try connection.query(
                            """
                            INSERT INTO mediafetch_source_state (run, source, key, updated_at, value)
                            VALUES ($1, $2, $3, $4, $5)
                            ON CONFLICT (run, source, key) DO UPDATE SET updated_at = excluded.updated_at,
                                value = excluded.value
                            """,
                            [
                                .text(run), .text(source), .text(key), .text(String(Date().timeIntervalSince1970)),
                                .bytes(value),
                            ])
                    } else {
                        try connection.query(
                            "DELETE FROM mediafetch_source_state WHERE run = $1 AND source = $2 AND key = $3",
                            [.text(run), .text(source), .text(key)])
                    }
                }
                try connection.query("COMMIT")
            } catch {
                if connection.isOK { _ = try? connection.query("ROLLBACK") }
                throw error
            }
        }
    }
}
