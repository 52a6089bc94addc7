import Foundation
import Synchronization

/// The memory between runs, in SQLite (WAL) in the run's state directory: per item and asset what
/// was stored where, what is partial and with which validator, what is downloaded and verified but waits for
/// its sink to commit, what failed and why.
///
/// Writes are queued and committed in batches (a transaction per batch, not per event); a batch is
/// written at the first chance after it is big or old enough (a chance that finds another batch being
/// written passes), and always by ``flush()``. Losing the last batch in a crash only means re-fetching
/// what it recorded: an item is recorded stored only after the sink committed it, so the ledger never
/// claims more than is on disk.
public final class Ledger: Sendable {
    public static let fileName = "ledger.sqlite"

    /// Each migration brings the schema from its index to the next version.
    static let migrations = [
        """
        CREATE TABLE items (
            source TEXT NOT NULL,
            item_id TEXT NOT NULL,
            asset TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            expected_bytes INTEGER,
            received_bytes INTEGER NOT NULL DEFAULT 0,
            sha256 TEXT,
            status TEXT NOT NULL CHECK (status IN ('pending', 'partial', 'stored', 'failed')),
            reason TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            location TEXT,
            updated_at REAL NOT NULL,
            PRIMARY KEY (source, item_id, asset)
        ) WITHOUT ROWID;
        CREATE INDEX items_by_status ON items (status);
        """,
        // Only `clean` filters on status, rarely and over one catalog's rows; every change of status cost two
        // writes to this index.
        "DROP INDEX IF EXISTS items_by_status;",
        // The status check as a chain of comparisons: SQLite 3.40 evaluates a CHECK's IN list of more than two
        // values by building an ephemeral index on every insert and update (twice for an upsert), which was a
        // third of the ledger's cost. SQLite cannot alter a check, so the table is rebuilt.
        """
        CREATE TABLE items_v3 (
            source TEXT NOT NULL,
            item_id TEXT NOT NULL,
            asset TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            expected_bytes INTEGER,
            received_bytes INTEGER NOT NULL DEFAULT 0,
            sha256 TEXT,
            status TEXT NOT NULL
                CHECK (status = 'pending' OR status = 'partial' OR status = 'stored' OR status = 'failed'),
            reason TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            location TEXT,
            updated_at REAL NOT NULL,
            PRIMARY KEY (source, item_id, asset)
        ) WITHOUT ROWID;
        INSERT INTO items_v3 (source, item_id, asset, title, url, etag, last_modified, expected_bytes,
            received_bytes, sha256, status, reason, attempts, location, updated_at)
        SELECT source, item_id, asset, title, url, etag, last_modified, expected_bytes, received_bytes, sha256,
            status, reason, attempts, location, updated_at FROM items;
        DROP TABLE items;
        ALTER TABLE items_v3 RENAME TO items;
        """,
        // 'verified': a complete, checked download kept in the staging folder until a sink that commits only at
        // its finish (an archive) has done so, so that an interrupted run's files are not fetched again. The
        // check is widened the only way SQLite allows, by rebuilding the table, and stays a chain of comparisons.
        """
        CREATE TABLE items_v4 (
            source TEXT NOT NULL,
            item_id TEXT NOT NULL,
            asset TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            expected_bytes INTEGER,
            received_bytes INTEGER NOT NULL DEFAULT 0,
            sha256 TEXT,
            status TEXT NOT NULL
                CHECK (status = 'pending' OR status = 'partial' OR status = 'verified' OR status = 'stored'
                    OR status = 'failed'),
            reason TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            location TEXT,
            updated_at REAL NOT NULL,
            PRIMARY KEY (source, item_id, asset)
        ) WITHOUT ROWID;
        INSERT INTO items_v4 (source, item_id, asset, title, url, etag, last_modified, expected_bytes,
            received_bytes, sha256, status, reason, attempts, location, updated_at)
        SELECT source, item_id, asset, title, url, etag, last_modified, expected_bytes, received_bytes, sha256,
            status, reason, attempts, location, updated_at FROM items;
        DROP TABLE items;
        ALTER TABLE items_v4 RENAME TO items;
        """,
        // What a source keeps between runs (``SourceState``): a feed's validators and its last body, so that the
        // next run can ask with a conditional GET. A rowid table, since a value may be a whole feed and is written
        // with incremental blob I/O; the value is the last column, so that its zeroblob placeholder is never
        // expanded in memory.
        """
        CREATE TABLE source_state (
            source TEXT NOT NULL,
            key TEXT NOT NULL,
            updated_at REAL NOT NULL,
            value BLOB NOT NULL,
            PRIMARY KEY (source, key)
        );
        """,
        // What the run in progress has taken, so that nothing per item stays in memory: the names its sink planned
        // (keyed by their collation keys, for collision numbering) and the ids its source emitted (for duplicates).
        // See ``takeRunKey(scope:key:value:)``.
        """
        CREATE TABLE run_keys (
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT,
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID;
        """,
        // The name a stored file took (``NameReserver/nameKey(of:)`` of its planned path) and that path, kept from
        // then on: a later run, whatever order its source gives the items in, numbers other items around it instead
        // of handing the name to another item (see ``storedName(_:except:)``). Only rows that have one are indexed.
        """
        ALTER TABLE items ADD COLUMN planned_path TEXT;
        ALTER TABLE items ADD COLUMN name_key TEXT;
        CREATE INDEX items_by_name_key ON items (name_key) WHERE name_key IS NOT NULL;
        """,
    ]

    /// Writes waiting for the next batch. Its lock is held only to add or take writes, never while SQLite
    /// works: a curl engine's thread records each answer here, and must not wait for a commit.
    private struct Queue {
        var pending: [Queued] = []
        var lastFlush = ContinuousClock.now
        /// The run keys among `pending`, for lookups before they are committed (see ``runKey(scope:key:)``).
        var runKeys: [RunKeyID: String?] = [:]
    }

    /// A queued write with its key's ``KeyFilter`` hash (its ledger key's, or its run key's), taken once when it is
    /// queued: the batch groups writes by it, and the run keys waiting in memory are found by it.
    private struct Queued {
        var write: Write
        var hash: UInt64
    }

    /// A run key in ``Queue/runKeys``, hashed by its ``KeyFilter`` hash. Hashing its two strings for the dictionary
    /// (SipHash over every byte) was most of ``takeRunKey(scope:key:value:)``'s cost. Keys are equal when their
    /// bytes are, as SQLite compares them.
    private struct RunKeyID: Hashable {
        var scope: String
        var key: String
        var hash: UInt64

        init(scope: String, key: String) {
            self.scope = scope
            self.key = key
            hash = KeyFilter.hash(scope: scope, key: key)
        }

        static func == (a: Self, b: Self) -> Bool {
            a.hash == b.hash && a.key.hasSameUTF8Bytes(as: b.key) && a.scope.hasSameUTF8Bytes(as: b.scope)
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    private typealias Write = LedgerWrite

    private let queue = Mutex(Queue())
    /// Which run keys may be taken, so that a lookup of one that is not needs no query (see ``KeyFilter``).
    private let runKeyFilter = Mutex(KeyFilter())
    /// Which entries may be on disk, so that a first run's lookups need neither the connection's lock nor a query
    /// (see ``EntryFilter``).
    private let entryFilter: Mutex<EntryFilter>
    /// The connection: held while a batch is written or the ledger is read, so batches land in order.
    private let database: Mutex<SQLiteDatabase>
    public let url: URL
    private let batchSize: Int
    private let batchAge: Duration

    /// Opens (creating, migrating) the ledger in `directory`.
    ///
    /// - Parameters:
    ///   - directory: the state folder; the ledger is `ledger.sqlite` in it (created when missing).
    ///   - batchSize: queued writes that make a batch due (an item makes about four). Each batch writes every page
    ///     its rows touch to the WAL once, so a small batch writes the same pages again and again: 256 wrote two
    ///     4 KiB pages an item on 20,000 small files, 2,048 less than half a page, for about 3.5 MiB more queued.
    ///   - batchAge: the longest a queued write waits for its batch.
    /// - Throws: ``LedgerError`` naming the file: unreadable, or written by a newer MediaFetch.
    public init(directory: URL, batchSize: Int = 2048, batchAge: Duration = .milliseconds(250)) throws {
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw LedgerError("cannot create the state directory \(directory.path): \(error.localizedDescription)")
        }
        url = directory.appendingPathComponent(Self.fileName)
        let database = try SQLiteDatabase(path: url.path)
        try database.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;")
        try Self.migrate(database)
        self.database = Mutex(database)
        self.batchSize = batchSize
        self.batchAge = batchAge
        var entries = EntryFilter()
        entries.keys.reset()
        entryFilter = Mutex(entries)
    }

    /// The entries that may be on disk, for a source that had none when it was first looked up (a first run's).
    /// `keys` takes every key this ledger queues a write for, from its opening on, and only a queued write makes
    /// a row; so an entry of such a source that `keys` does not hold was never on disk. (`keys` is complete only
    /// in that sense: rows of sources in the file before it opened are not in it, and ``hadNone(_:)`` is what says
    /// which sources it answers for.) This holds while this object is the file's only writer, as it is for a run, which
    /// holds its state folder's lock. A source that had entries is looked up a query an item, as before: reading
    /// its keys first cost a re-run of 100,000 stored items more than the lookups it spared.
    private struct EntryFilter: ~Copyable {
        var keys = KeyFilter()
        /// The sources looked up so far (a run has one or a few), each with whether it had no entries on disk at
        /// its first lookup. Names are told apart by their bytes, as SQLite compares them (Swift's `==` would take
        /// two spellings of one accented name for one), and a lookup allocates nothing.
        private var sources: [(name: String, hadNone: Bool)] = []

        /// Whether `source` had no entries at its first lookup; nil when it was not looked up yet.
        func hadNone(_ source: String) -> Bool? {
            sources.first { $0.name.hasSameUTF8Bytes(as: source) }?.hadNone
        }

        mutating func setHadNone(_ source: String, _ hadNone: Bool) {
            if self.hadNone(source) == nil { sources.append((source, hadNone)) }
        }

        /// True when the key's source had no entries at its first lookup and no write for the key was queued
        /// since; nil when the source was not looked up yet.
        func certainlyAbsent(_ key: LedgerKey) -> Bool? {
            hadNone(key.source).map { $0 && !keys.mayContain(key) }
        }
    }

    static func migrate(_ database: SQLiteDatabase) throws {
        let version = try database.userVersion
        guard version <= migrations.count else {
            throw LedgerError(
                "the ledger \(database.path) has schema version \(version), newer than this build "
                    + "knows (\(migrations.count)); use a newer mediafetch, or `mediafetch clean --all` to start over")
        }
        for (index, sql) in migrations.enumerated().dropFirst(version) {
            try database.transaction {
                try database.execute(sql)
                try database.execute("PRAGMA user_version = \(index + 1)")
            }
        }
    }

    // MARK: Reading

    /// What the ledger knows of one asset; pending writes are committed first.
    public func entry(_ key: LedgerKey) throws -> LedgerEntry? {
        try database.withLock { database in
            try commit(database)
            let statement = try database.prepare(Self.select + " WHERE source = ? AND item_id = ? AND asset = ?")
            return try statement.rows([.text(key.source), .text(key.itemID), .text(key.asset.rawValue)], Self.read)
                .first
        }
    }

    /// Every entry, ordered by key for a stable listing.
    public func entries() throws -> [LedgerEntry] {
        try database.withLock { database in
            try commit(database)
            return try database.prepare(Self.select + " ORDER BY source, item_id, asset").rows([], Self.read)
        }
    }

    /// Every entry of one source, by key: one query at the start of a run instead of one per item.
    public func entries(source: String) throws -> [LedgerKey: LedgerEntry] {
        try database.withLock { database in
            try commit(database)
            let rows = try database.prepare(Self.select + " WHERE source = ?").rows([.text(source)], Self.read)
            return Dictionary(rows.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
        }
    }

    /// What the ledger holds on disk for one asset, without committing queued writes first: what earlier runs
    /// left, looked up item by item as a run plans (nothing per item stays in memory). For a source that had no
    /// entries when first looked up, an item this ledger never queued a write for is answered without a query;
    /// every other lookup is one query. Writes this run queued and has not committed yet are not seen.
    public func committedEntry(_ key: LedgerKey) throws -> LedgerEntry? {
        // An entry the filter does not hold is not on disk: no waiting for the connection (which a batch being
        // committed holds), no query.
        if entryFilter.withLock({ $0.certainlyAbsent(key) }) == true { return nil }
        return try database.withLock { database in
            try database.beginSharedRead()
            if entryFilter.withLock({ $0.hadNone(key.source) }) == nil {
                // Under the connection no batch lands meanwhile, and a write queued before it is in the filter.
                let empty = try database.cached("SELECT 1 FROM items WHERE source = ? LIMIT 1")
                    .rows([.text(key.source)]) { $0.int(0) }.isEmpty
                let absent = entryFilter.withLock { filter in
                    filter.setHadNone(key.source, empty)
                    return filter.certainlyAbsent(key) == true
                }
                if absent { return nil }
            }
            return try database.cached(Self.select + " WHERE source = ? AND item_id = ? AND asset = ?")
                .rows(key.values, Self.read).first
        }
    }

    /// Calls `body` with every entry of `source` whose status is `status`, by key, a page at a time (for a walk
    /// over a run of any size without holding it, nor the connection while `body` runs); pending writes are
    /// committed first.
    public func forEachEntry(source: String, status: LedgerStatus, _ body: (LedgerEntry) throws -> Void) throws {
        try page(
            " WHERE source = ? AND status = ? AND (item_id, asset) > (?, ?) ORDER BY item_id, asset",
            first: [.text(source), .text(status.rawValue), .text(""), .text("")],
            after: { [.text(source), .text(status.rawValue), .text($0.itemID), .text($0.asset.rawValue)] }
        ) { entry in
            try body(entry)
            return true
        }
    }

    /// Calls `body` with every entry (or every entry whose status is `status`), of every source, ordered by key, a
    /// page at a time: ``entries()`` without holding them all (what `mediafetch status` walks). Pending writes are
    /// committed first. `body` returns false to stop the walk.
    public func forEachEntry(status: LedgerStatus? = nil, _ body: (LedgerEntry) throws -> Bool) throws {
        let filter: [SQLiteStatement.Value] = status.map { [.text($0.rawValue)] } ?? []
        try page(
            " WHERE \(status == nil ? "" : "status = ? AND ")(source, item_id, asset) > (?, ?, ?)"
                + " ORDER BY source, item_id, asset",
            first: filter + [.text(""), .text(""), .text("")],
            after: { filter + [.text($0.source), .text($0.itemID), .text($0.asset.rawValue)] },
            body)
    }

    /// The walk of both `forEachEntry` methods: pages of 512 entries, `condition` (a WHERE clause after
    /// the last key, and its order) bound first to `first` and then to `after` of the last key read; pending writes
    /// are committed before each page, and the connection is not held while `body` runs (false stops the walk).
    private func page(
        _ condition: String, first: [SQLiteStatement.Value], after: (LedgerKey) -> [SQLiteStatement.Value],
        _ body: (LedgerEntry) throws -> Bool
    ) throws {
        var values = first
        while true {
            let page = try database.withLock { database in
                try commit(database)
                return try database.cached(Self.select + condition + " LIMIT 512").rows(values, Self.read)
            }
            for entry in page where try !body(entry) { return }
            guard let last = page.last, page.count == 512 else { return }
            values = after(last.key)
        }
    }

    /// How many entries each status has (statuses without one are left out); pending writes are committed first.
    public func statusCounts() throws -> [LedgerStatus: Int] {
        try database.withLock { database in
            try commit(database)
            let rows = try database.prepare("SELECT status, COUNT(*) FROM items GROUP BY status").rows([]) { row in
                (row.text(0), row.int(1))
            }
            var counts: [LedgerStatus: Int] = [:]
            for (status, count) in rows {
                if let status = status.flatMap(LedgerStatus.init(rawValue:)) { counts[status, default: 0] += count }
            }
            return counts
        }
    }

    // MARK: Run keys

    /// Forgets every run key (``takeRunKey(scope:key:value:)``): a run starts with none, as it starts with an
    /// empty set of names in memory.
    public func resetRunKeys() throws {
        try database.withLock { database in
            queue.withLock { queue in
                queue.pending.removeAll { if case .runKey = $0.write { true } else { false } }
                queue.runKeys.removeAll()
            }
            // Without a WHERE clause SQLite empties the table in one step instead of row by row.
            try database.execute("DELETE FROM run_keys")
            runKeyFilter.withLock { $0.reset() }
            // What earlier runs stored is looked at again: this ledger may have served one already.
            namesOnDisk.withLock { $0 = nil }
        }
    }

    /// Whether the run took `key` in `scope`, and with which value: the queued writes first, then the disk.
    /// - Returns: nil when the key is not taken; else the value it was taken with (itself nil when taken with none).
    public func runKey(scope: String, key: String) throws -> String?? {
        // A key the filter does not hold was never taken: no lock on the connection, no query. (Keys are added
        // to it before they are queued, and it is emptied under the connection's lock with the table.)
        let id = RunKeyID(scope: scope, key: key)
        guard runKeyFilter.withLock({ $0.mayContain(hash: id.hash) }) else { return nil }
        // The connection is held first, so no batch can be committed between the look at the queue and the query.
        return try database.withLock { database in
            if let queued = queue.withLock({ $0.runKeys[id] }) { return .some(queued) }
            try database.beginSharedRead()
            let rows = try database.cached("SELECT value FROM run_keys WHERE scope = ? AND key = ?")
                .rows([.text(scope), .text(key)]) { $0.text(0) }
            return rows.first.map { .some($0) } ?? nil
        }
    }

    /// Takes `key` in `scope` for this run with `value` (replacing the value it had), queued with the other writes
    /// and seen by ``runKey(scope:key:)`` at once. Scopes keep users apart: a sink's names
    /// (``PathReserver``) and a source's ids (``SourceContext/firstOccurrence(of:at:)``).
    public func takeRunKey(scope: String, key: String, value: String?) {
        let id = RunKeyID(scope: scope, key: key)
        runKeyFilter.withLock { $0.insert(hash: id.hash) }
        queue.withLock { queue in
            queue.pending.append(Queued(write: .runKey(scope: scope, key: key, value: value), hash: id.hash))
            queue.runKeys[id] = .some(value)
        }
    }

    /// Whether any row holds a stored name (``storedName(_:except:)``), looked at once a run (``resetRunKeys()``
    /// forgets it): in a first run none does, and its names (those it stores included) are all among its run keys,
    /// so it asks nothing more.
    private let namesOnDisk = Mutex<Bool?>(nil)

    /// What an earlier run's stored file makes of the name `key` (``NameReserver/nameKey(of:)``) for `owner`: taken
    /// as a file when another item's file has it; the directory, with its spelling, when a stored file lies below it;
    /// nil when neither (or the file is `owner`'s own). Only committed rows are looked at: what this run stores has
    /// its names among its run keys already.
    public func storedName(_ key: String, except owner: LedgerKey?) throws -> TakenName? {
        var heldByOwner = false
        return try storedName(key, except: owner, heldByOwner: &heldByOwner)
    }

    /// ``storedName(_:except:)``, which also says whether the nil it answers is `owner`'s own stored file (the
    /// naming of a re-run then asks the disk nothing about it).
    package func storedName(_ key: String, except owner: LedgerKey?, heldByOwner: inout Bool) throws -> TakenName? {
        heldByOwner = false
        if namesOnDisk.withLock({ $0 }) == false { return nil }
        return try database.withLock { database in
            try database.beginSharedRead()
            if namesOnDisk.withLock({ $0 }) == nil {
                let any = try database.cached("SELECT 1 FROM items WHERE name_key IS NOT NULL LIMIT 1")
                    .rows([]) { $0.int(0) }
                namesOnDisk.withLock { $0 = !any.isEmpty }
                if any.isEmpty { return nil }
            }
            // Compared as SQLite compares them, by their bytes.
            let ownerValues = owner.map { [$0.source, $0.itemID, $0.asset.rawValue] }
            let holders = try database.cached("SELECT source, item_id, asset FROM items WHERE name_key = ? LIMIT 2")
                .rows([.text(key)]) { row in [row.text(0) ?? "", row.text(1) ?? "", row.text(2) ?? ""] }
            let others = holders.contains { holder in
                guard let ownerValues else { return true }
                return !zip(holder, ownerValues).allSatisfy { $0.hasSameUTF8Bytes(as: $1) }
            }
            if others { return TakenName(directory: nil) }
            if !holders.isEmpty {
                heldByOwner = true
                return nil
            }
            // A stored file below the key: the keys of the names under it run from `key/` to just before `key0`.
            let below = try database.cached(
                "SELECT planned_path FROM items WHERE name_key > ? AND name_key < ? LIMIT 1"
            ).rows([.text(key + "/"), .text(key + "0")]) { $0.text(0) }
            let depth = key.utf8.reduce(0) { $1 == UInt8(ascii: "/") ? $0 + 1 : $0 }
            guard let path = below.first ?? nil else { return nil }
            let components = path.split(separator: "/")
            guard depth >= 1, components.count > depth else { return nil }
            return TakenName(directory: String(components[depth - 1]))
        }
    }

    private static let select = """
        SELECT source, item_id, asset, title, url, etag, last_modified, expected_bytes, received_bytes, sha256,
               status, reason, attempts, location, updated_at FROM items
        """

    private static func read(_ row: SQLiteRow) throws -> LedgerEntry {
        guard let source = row.text(0), let itemID = row.text(1), let asset = row.text(2).flatMap(AssetKind.init),
            let status = row.text(10).flatMap(LedgerStatus.init)
        else {
            throw LedgerError("the ledger holds a row this build cannot read; `mediafetch clean --all` starts over")
        }
        let etag = row.text(5)
        let lastModified = row.text(6)
        return LedgerEntry(
            key: LedgerKey(source: source, itemID: itemID, asset: asset),
            title: row.text(3) ?? "",
            url: row.text(4) ?? "",
            validator: etag == nil && lastModified == nil ? nil : Validator(etag: etag, lastModified: lastModified),
            expectedBytes: row.optionalInt64(7),
            receivedBytes: row.optionalInt64(8) ?? 0,
            sha256: row.text(9),
            status: status,
            reason: row.text(11),
            attempts: row.int(12),
            location: row.text(13),
            updatedAt: Date(timeIntervalSince1970: row.double(14)))
    }

    // MARK: Writing (queued)

    /// A download of `key` is about to start.
    public func begin(_ key: LedgerKey, title: String, url: URL) {
        enqueue(.begin(key, title: title, url: url.absoluteString))
    }

    /// The server answered: what to resume against, and how big the whole file is.
    public func responded(_ key: LedgerKey, validator: Validator?, expectedBytes: Int64?) {
        enqueue(.responded(key, validator: validator, expected: expectedBytes))
    }

    /// The file is complete and checked (`size` bytes, and `sha256` when the run computed it) and stays in the
    /// staging folder until the sink commits it: the sink's ``Sink/commitsEachStore`` is false. A later run
    /// that finds the file still there and matching stores it without fetching it again.
    public func verified(_ key: LedgerKey, size: Int64, sha256: String?) {
        enqueue(.verified(key, size: size, sha256: sha256))
    }

    /// The sink committed the file.
    public func stored(_ key: LedgerKey, _ record: StoredRecord) { enqueue(.stored(key, record, name: nil)) }

    /// The sink committed the file at `plannedPath` (its plan's relative path), whose name stays this item's in
    /// later runs (``storedName(_:except:)``).
    public func stored(_ key: LedgerKey, _ record: StoredRecord, plannedPath: String) {
        enqueue(.stored(key, record, name: StoredPath(path: plannedPath)))
    }

    public func failed(_ key: LedgerKey, reason: String, receivedBytes: Int64) {
        enqueue(.failed(key, reason: reason, received: receivedBytes))
    }

    /// Another attempt at the download begins in this run (after a retryable failure): `attempts` counts it.
    public func retrying(_ key: LedgerKey) { enqueue(.retrying(key)) }

    /// The run stopped with `receivedBytes` of the file kept for a resume.
    public func paused(_ key: LedgerKey, receivedBytes: Int64) { enqueue(.paused(key, received: receivedBytes)) }

    /// Commits queued writes when the batch is big or old enough. When another thread is writing a batch
    /// already, returns at once: the writes wait for the next chance rather than the caller for the disk.
    public func flushIfDue() throws {
        let due = queue.withLock { queue in
            !queue.pending.isEmpty
                && (queue.pending.count >= batchSize || ContinuousClock.now - queue.lastFlush >= batchAge)
        }
        guard due else { return }
        try database.withLockIfAvailable { try commit($0) }
    }

    /// Commits every queued write.
    public func flush() throws {
        try database.withLock { try commit($0) }
    }

    /// Forgets everything (`mediafetch clean --all`).
    public func removeAll() throws {
        try database.withLock { database in
            queue.withLock { queue in
                queue.pending.removeAll()
                queue.runKeys.removeAll()
            }
            try database.execute("DELETE FROM items; DELETE FROM source_state; DELETE FROM run_keys;")
        }
    }

    /// Forgets partial progress: partial and verified entries go back to pending (`mediafetch clean`, which
    /// deletes their staging files).
    public func forgetPartials() throws {
        try database.withLock { database in
            try commit(database)
            try database.execute(
                "UPDATE items SET status = 'pending', received_bytes = 0 "
                    + "WHERE status IN ('partial', 'pending', 'verified')")
        }
    }

    // MARK: Source state

    /// The value `source` stored under `key` (``SourceState``), or nil.
    public func sourceValue(source: String, key: String) throws -> Data? {
        try database.withLock { database in
            let select = "SELECT rowid, length(value) FROM source_state WHERE source = ? AND key = ?"
            let found = try database.cached(select).rows([.text(source), .text(key)]) {
                (rowID: Int64($0.int(0)), count: $0.int(1))
            }.first
            guard let found else { return nil }
            guard found.count > 0 else { return Data() }
            return try database.readBlob(
                table: "source_state", column: "value", rowID: found.rowID, count: found.count)
        }
    }

    /// Writes `values` for `source` in one transaction, written through at once (not queued): a nil value
    /// removes its key.
    public func setSourceValues(source: String, _ values: [(key: String, value: Data?)]) throws {
        try database.withLock { database in
            let now = Date().timeIntervalSince1970
            try database.transaction {
                for (key, value) in values {
                    try database.cached("DELETE FROM source_state WHERE source = ? AND key = ?")
                        .run([.text(source), .text(key)])
                    guard let value else { continue }
                    // A value may be a whole feed: the row gets a blob of its size, and the bytes go straight
                    // into it, never copied into a statement.
                    try database.cached(
                        "INSERT INTO source_state (source, key, updated_at, value) VALUES (?, ?, ?, zeroblob(?))"
                    ).run([.text(source), .text(key), .real(now), .integer(Int64(value.count))])
                    if !value.isEmpty {
                        try database.writeBlob(
                            value, table: "source_state", column: "value", rowID: database.lastInsertRowID)
                    }
                }
            }
        }
    }

    /// Runs `body` while holding the connection, as writing a batch does (for tests of what must not wait).
    func whileHoldingTheConnection<T>(_ body: () -> T) -> T {
        database.withLock { _ in body() }
    }

    private func enqueue(_ write: Write) {
        // Into the filter before the queue: a row is never on disk before its key is in the filter. (Every write
        // of a key, not only the `begin` that makes its row: one that makes a row later must not slip past.)
        var hash: UInt64 = 0
        if let key = write.key {
            hash = KeyFilter.hash(key)
            entryFilter.withLock { $0.keys.insert(hash: hash) }
        }
        queue.withLock { $0.pending.append(Queued(write: write, hash: hash)) }
    }

    /// Takes the queued writes and commits them in one transaction; the caller holds ``database``.
    private func commit(_ database: SQLiteDatabase) throws {
        var writes: [Queued] = []
        var runKeys: [RunKeyID: String?] = [:]
        queue.withLock { queue in
            queue.lastFlush = .now
            swap(&writes, &queue.pending)
            swap(&runKeys, &queue.runKeys)
            // The next batch is likely as big: room for it now spares growing step by step (each step rehashes every
            // key).
            queue.pending.reserveCapacity(writes.count)
            queue.runKeys.reserveCapacity(runKeys.count)
        }
        guard !writes.isEmpty else { return }
        do {
            try Self.apply(writes, to: database, at: Date().timeIntervalSince1970)
        } catch {
            // The transaction was rolled back, and the writes wait in memory, first in line, for the next commit
            // (as ``RunLedger`` promises). A run key forgotten here could be handed out twice, and a second file
            // would replace the first; a stored file forgotten would be fetched and stored again next time.
            queue.withLock { queue in
                queue.pending.insert(contentsOf: writes, at: 0)
                queue.runKeys.merge(runKeys) { newer, _ in newer }
            }
            throw error
        }
    }

    /// The common life of a download: begun, answered (once or more), stored (or verified, for a sink that
    /// commits at its finish). A batch that holds all of it for a key, or the part before or after the answer,
    /// writes that key with one statement instead of two or three; any other mix of writes for a key runs
    /// write by write.
    private struct Download {
        /// How the download ended: the row's status, and what it records.
        struct End {
            var status: String
            var location: String?
            var size: Int64
            var sha256: String?
            var name: StoredPath?
        }

        var begun: (title: String, url: String)?
        var answer: (validator: Validator?, expected: Int64?)?
        var stored: End?

        /// The fold of a key's first write, or nil when it starts no download.
        init?(_ write: Write) {
            switch write {
            case .begin(_, let title, let url): begun = (title, url)
            case .responded(_, let validator, let expected): answer = (validator, expected)
            default: return nil
            }
        }

        /// The fold with one more write, or nil when the two no longer make a download.
        func then(_ write: Write) -> Download? {
            var next = self
            switch write {
            case .responded(_, let validator, let expected) where stored == nil:
                next.answer = (validator, expected)
            case .stored(_, let record, let name) where answer != nil && stored == nil:
                next.stored = End(
                    status: "stored", location: record.location, size: record.size, sha256: record.sha256, name: name)
            case .verified(_, let size, let sha256) where answer != nil && stored == nil:
                next.stored = End(status: "verified", location: nil, size: size, sha256: sha256)
            default: return nil
            }
            return next
        }

        /// Whether one statement stands for more than one write.
        var merges: Bool { answer != nil && (begun != nil || stored != nil) }
    }

    /// A ledger key in a batch, hashed by the ``KeyFilter`` hash it was queued with; equal when its bytes are, as
    /// SQLite compares them (two spellings of one accented id are two rows there, so they are two keys here).
    private struct BatchKey: Hashable {
        var key: LedgerKey
        var hash: UInt64

        static func == (a: Self, b: Self) -> Bool {
            a.hash == b.hash && a.key.itemID.hasSameUTF8Bytes(as: b.key.itemID)
                && a.key.asset.rawValue.hasSameUTF8Bytes(as: b.key.asset.rawValue)
                && a.key.source.hasSameUTF8Bytes(as: b.key.source)
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }
    }

    private static func apply(_ queued: [Queued], to database: SQLiteDatabase, at now: Double) throws {
        // Each write's key is found by the hash it was queued with: its writes fold into `downloads` at the key's
        // ordinal, and the second pass goes by ordinal. (A dictionary of folds, looked up twice in each pass, hashed
        // each key's three strings a dozen times an item, a fifth of a batch's time; hashing them once a write was
        // still a twentieth of a first run's ledger, in callgrind counts.)
        var ordinals: [BatchKey: Int] = [:]
        ordinals.reserveCapacity(queued.count)
        var downloads: [Download?] = []
        var ordinalOfWrite = [Int](repeating: -1, count: queued.count)
        for (index, entry) in queued.enumerated() {
            guard let key = entry.write.key else { continue }
            let batchKey = BatchKey(key: key, hash: entry.hash)
            if let ordinal = ordinals[batchKey] {
                downloads[ordinal] = downloads[ordinal]?.then(entry.write)
                ordinalOfWrite[index] = ordinal
            } else {
                ordinals[batchKey] = downloads.count
                ordinalOfWrite[index] = downloads.count
                downloads.append(Download(entry.write))
            }
        }
        var merged = [Bool](repeating: false, count: downloads.count)
        try database.transaction {
            var runKeys: [SQLiteStatement.Value] = []
            for (index, entry) in queued.enumerated() {
                let write = entry.write
                if case .runKey(let scope, let key, let value) = write {
                    // Run keys are rows of their own table, which no other write reads: they go in together below.
                    runKeys += [.text(scope), .text(key), .text(value)]
                    continue
                }
                let ordinal = ordinalOfWrite[index]
                guard ordinal >= 0, let key = write.key, let download = downloads[ordinal], download.merges else {
                    try apply(write, to: database, at: now)
                    continue
                }
                // Rows do not depend on each other: the key's first write runs the statement for all of its writes.
                if !merged[ordinal] {
                    merged[ordinal] = true
                    try apply(download, key, to: database, at: now)
                }
            }
            try insert(runKeys: runKeys, into: database)
        }
    }

    /// The rows of `runKeys` (scope, key and value of each, in the order they were taken) into `run_keys`, up to 64 a
    /// statement: with a statement a row, each row also paid for a statement's start and end (two rows an item in a
    /// first run). In the order given, so the last value taken for a key is the one that stays.
    private static func insert(runKeys values: [SQLiteStatement.Value], into database: SQLiteDatabase) throws {
        var start = 0
        while start < values.count {
            // The largest power of two of rows left, so that at most seven statements are prepared.
            let rows = min(1 << (runKeyInserts.count - 1), (values.count - start) / 3)
            let shape = Int.bitWidth - 1 - rows.leadingZeroBitCount
            let end = start + (3 << shape)
            try database.cached(runKeyInserts[shape]).run(Array(values[start..<end]))
            start = end
        }
    }

    /// `INSERT` statements into `run_keys` of 1, 2, 4 ... 64 rows.
    private static let runKeyInserts: [String] = (0...6).map { shape in
        "INSERT INTO run_keys (scope, key, value) VALUES "
            + repeatElement("(?, ?, ?)", count: 1 << shape).joined(separator: ", ")
            + " ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value"
    }

    /// One statement for a download's writes (see ``Download``); each leaves the row as the writes would.
    private static func apply(
        _ download: Download, _ key: LedgerKey, to database: SQLiteDatabase, at now: Double
    )
        throws
    {
        let validator = download.answer?.validator ?? nil
        switch (download.begun, download.stored) {
        case (let (title, url)?, let end?):
            try database.cached(
                """
                INSERT INTO items (source, item_id, asset, title, url, etag, last_modified, expected_bytes,
                    received_bytes, sha256, status, attempts, location, updated_at, planned_path, name_key)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?)
                ON CONFLICT (source, item_id, asset) DO UPDATE SET
                    title = excluded.title, url = excluded.url, etag = excluded.etag,
                    last_modified = excluded.last_modified, expected_bytes = excluded.expected_bytes,
                    received_bytes = excluded.received_bytes, sha256 = excluded.sha256, status = excluded.status,
                    reason = NULL, attempts = 1, location = excluded.location,
                    updated_at = excluded.updated_at, planned_path = coalesce(excluded.planned_path, planned_path),
                    name_key = coalesce(excluded.name_key, name_key)
                """
            ).run(
                key.values + [
                    .text(title), .text(url), .text(validator?.etag), .text(validator?.lastModified),
                    .integer(end.size), .integer(end.size), .text(end.sha256), .text(end.status), .text(end.location),
                    .real(now), .text(end.name?.path), .text(end.name?.key),
                ])
        case (let (title, url)?, nil):
            try database.cached(
                """
                INSERT INTO items (source, item_id, asset, title, url, etag, last_modified, expected_bytes, status,
                    attempts, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'partial', 1, ?)
                ON CONFLICT (source, item_id, asset) DO UPDATE SET
                    title = excluded.title, url = excluded.url, etag = excluded.etag,
                    last_modified = excluded.last_modified, expected_bytes = excluded.expected_bytes,
                    status = 'partial', attempts = 1, updated_at = excluded.updated_at
                """
            ).run(
                key.values + [
                    .text(title), .text(url), .text(validator?.etag), .text(validator?.lastModified),
                    .integer(download.answer?.expected ?? nil), .real(now),
                ])
        case (nil, let end?):
            try database.cached(
                """
                UPDATE items SET etag = ?, last_modified = ?, status = ?, location = ?, received_bytes = ?,
                    expected_bytes = ?, sha256 = ?, reason = NULL, updated_at = ?,
                    planned_path = coalesce(?, planned_path), name_key = coalesce(?, name_key)
                WHERE source = ? AND item_id = ? AND asset = ?
                """
            ).run(
                [
                    .text(validator?.etag), .text(validator?.lastModified), .text(end.status), .text(end.location),
                    .integer(end.size), .integer(end.size), .text(end.sha256), .real(now), .text(end.name?.path),
                    .text(end.name?.key),
                ] + key.values)
        case (nil, nil):
            // A lone answer merges nothing (``Download/merges``); written as it is, for completeness.
            try apply(
                .responded(key, validator: validator, expected: download.answer?.expected ?? nil), to: database, at: now
            )
        }
    }

    private static func apply(_ write: Write, to database: SQLiteDatabase, at now: Double) throws {
        switch write {
        case .begin(let key, let title, let url):
            try database.cached(
                """
                INSERT INTO items (source, item_id, asset, title, url, status, attempts, updated_at)
                VALUES (?, ?, ?, ?, ?, 'pending', 1, ?)
                ON CONFLICT (source, item_id, asset) DO UPDATE SET
                    title = excluded.title, url = excluded.url, attempts = 1,
                    status = CASE WHEN status = 'stored' OR status = 'verified' THEN 'pending' ELSE status END,
                    updated_at = excluded.updated_at
                """
            ).run(key.values + [.text(title), .text(url), .real(now)])
        case .responded(let key, let validator, let expected):
            try database.cached(
                """
                UPDATE items SET etag = ?, last_modified = ?, expected_bytes = ?, status = 'partial',
                    updated_at = ? WHERE source = ? AND item_id = ? AND asset = ?
                """
            ).run(
                [.text(validator?.etag), .text(validator?.lastModified), .integer(expected), .real(now)]
                    + key.values)
        case .verified(let key, let size, let sha256):
            try database.cached(
                """
                UPDATE items SET status = 'verified', location = NULL, received_bytes = ?, expected_bytes = ?,
                    sha256 = ?, reason = NULL, updated_at = ? WHERE source = ? AND item_id = ? AND asset = ?
                """
            ).run([.integer(size), .integer(size), .text(sha256), .real(now)] + key.values)
        case .stored(let key, let record, let name):
            try database.cached(
                """
                UPDATE items SET status = 'stored', location = ?, received_bytes = ?, expected_bytes = ?,
                    sha256 = ?, reason = NULL, updated_at = ?, planned_path = coalesce(?, planned_path),
                    name_key = coalesce(?, name_key)
                WHERE source = ? AND item_id = ? AND asset = ?
                """
            ).run(
                [
                    .text(record.location), .integer(record.size), .integer(record.size),
                    .text(record.sha256), .real(now), .text(name?.path), .text(name?.key),
                ] + key.values)
        case .failed(let key, let reason, let received):
            try database.cached(
                """
                UPDATE items SET status = 'failed', reason = ?, received_bytes = ?, updated_at = ?
                WHERE source = ? AND item_id = ? AND asset = ?
                """
            ).run([.text(reason), .integer(received), .real(now)] + key.values)
        case .retrying(let key):
            try database.cached(
                "UPDATE items SET attempts = attempts + 1, updated_at = ? WHERE source = ? AND item_id = ? AND asset = ?"
            ).run([.real(now)] + key.values)
        case .runKey(let scope, let key, let value):
            try database.cached(
                "INSERT INTO run_keys (scope, key, value) VALUES (?, ?, ?) ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value"
            ).run([.text(scope), .text(key), .text(value)])
        case .paused(let key, let received):
            try database.cached(
                """
                UPDATE items SET status = 'partial', received_bytes = ?, updated_at = ?
                WHERE source = ? AND item_id = ? AND asset = ? AND status != 'stored' AND status != 'verified'
                """
            ).run([.integer(received), .real(now)] + key.values)
        }
    }
}

/// Which asset of which item of which source.
public struct LedgerKey: Sendable, Hashable, CustomStringConvertible {
    public var source: String
    public var itemID: String
    public var asset: AssetKind

    public init(source: String, itemID: String, asset: AssetKind) {
        self.source = source
        self.itemID = itemID
        self.asset = asset
    }

    public var description: String { "\(source):\(itemID):\(asset.rawValue)" }

    fileprivate var values: [SQLiteStatement.Value] {
        [.text(source), .text(itemID), .text(asset.rawValue)]
    }
}

/// Where an entry is: pending, partial, verified (staged, awaiting the sink's commit), stored or failed.
///
/// An ``OpenEnumeration``: more statuses may come in a later version, so a `switch` over them needs a `default`.
public struct LedgerStatus: OpenEnumeration, Codable {
    /// The name, as the ledger stores it: `stored`.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    public static let pending = Self("pending")
    public static let partial = Self("partial")
    /// Downloaded and checked, kept in the staging folder until the sink commits it (an archive's finish).
    public static let verified = Self("verified")
    public static let stored = Self("stored")
    public static let failed = Self("failed")

    public static let allCases: [Self] = [.pending, .partial, .verified, .stored, .failed]
}

/// One row of the ledger.
public struct LedgerEntry: Sendable, Hashable {
    public var key: LedgerKey
    public var title: String
    public var url: String
    public var validator: Validator?
    public var expectedBytes: Int64?
    public var receivedBytes: Int64
    public var sha256: String?
    public var status: LedgerStatus
    public var reason: String?
    /// Attempts at the download in the latest run that worked on it: 1, and one more for each retry. A failure's
    /// reason says "after N attempts" with the same N.
    public var attempts: Int
    public var location: String?
    public var updatedAt: Date

    public init(
        key: LedgerKey, title: String, url: String, validator: Validator?, expectedBytes: Int64?, receivedBytes: Int64,
        sha256: String?, status: LedgerStatus, reason: String?, attempts: Int, location: String?, updatedAt: Date
    ) {
        self.key = key
        self.title = title
        self.url = url
        self.validator = validator
        self.expectedBytes = expectedBytes
        self.receivedBytes = receivedBytes
        self.sha256 = sha256
        self.status = status
        self.reason = reason
        self.attempts = attempts
        self.location = location
        self.updatedAt = updatedAt
    }

    /// What the sink was told, when the entry is stored.
    public var storedRecord: StoredRecord? {
        guard status == .stored, let location else { return nil }
        return StoredRecord(location: location, size: receivedBytes, sha256: sha256)
    }
}
