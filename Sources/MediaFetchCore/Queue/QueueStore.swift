import Foundation
import Synchronization

/// The queue's rows, in their own table of the ledger's database (`ledger.sqlite`): which items were asked
/// for, in which order, and what the user wants of each (queued, paused, cancelled) or what became of it
/// (stored, failed). What the downloads themselves got to (bytes, validators, locations, reasons) stays in the
/// ledger's `items`; the two together give every item back after a restart.
///
/// The table is created here (`IF NOT EXISTS`) rather than by a ledger migration: a ledger of an older
/// build gains it without a schema change, and a batch run never touches it.
final class QueueStore: Sendable {
    struct Row: Sendable {
        var item: MediaItem
        var state: DownloadStatus
        var position: Int64
    }

    private let database: Mutex<SQLiteDatabase>

    init(directory: URL) throws {
        let database = try SQLiteDatabase(path: directory.appendingPathComponent(Ledger.fileName).path)
        try database.execute(
            """
            PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
            CREATE TABLE IF NOT EXISTS queue (
                source TEXT NOT NULL,
                item_id TEXT NOT NULL,
                position INTEGER NOT NULL,
                state TEXT NOT NULL,
                item BLOB NOT NULL,
                updated_at REAL NOT NULL,
                PRIMARY KEY (source, item_id)
            );
            """)
        self.database = Mutex(database)
    }

    /// Every row of `source`, in the order they were added; a row this build cannot decode is left out.
    func rows(source: String) throws -> [Row] {
        try database.withLock { database in
            try database.prepare("SELECT item, state, position FROM queue WHERE source = ? ORDER BY position")
                .rows([.text(source)]) { row -> Row? in
                    guard let json = row.text(0),
                        let item = try? JSONDecoder().decode(MediaItem.self, from: Data(json.utf8))
                    else { return nil }
                    return Row(
                        item: item, state: DownloadStatus(rawValue: row.text(1) ?? ""), position: Int64(row.int(2)))
                }
                .compactMap { $0 }
        }
    }

    /// Every row of every source, in the order they were added.
    func allRows() throws -> [Row] {
        try database.withLock { database in
            try database.prepare("SELECT item, state, position FROM queue ORDER BY position").rows([]) { row -> Row? in
                guard let json = row.text(0),
                    let item = try? JSONDecoder().decode(MediaItem.self, from: Data(json.utf8))
                else { return nil }
                return Row(item: item, state: DownloadStatus(rawValue: row.text(1) ?? ""), position: Int64(row.int(2)))
            }
            .compactMap { $0 }
        }
    }

    /// Writes waiting for the next batch, in the order they came (a later one for the same item replaces it).
    private struct Pending {
        var writes: [String: (item: MediaItem, state: DownloadStatus, isNew: Bool)] = [:]
        var order: [String] = []
        var lastFlush = ContinuousClock.now
    }

    private let pending = Mutex(Pending())
    /// A batch is written once it is this old: a transaction per store would cost thousands of commits a run.
    static let batchAge = Duration.milliseconds(200)

    /// Adds a row at the end (`isNew`: the item with its record) or records a row's new state, with the next
    /// batch.
    func save(source: String, item: MediaItem, state: DownloadStatus, isNew: Bool = false) {
        pending.withLock { pending in
            let key = source + "\u{0}" + item.id
            let wasNew = pending.writes[key]?.isNew ?? false
            if pending.writes.updateValue((item, state, isNew || wasNew), forKey: key) == nil {
                pending.order.append(key)
            }
        }
    }

    /// Writes the batch when it is old enough.
    func flushIfDue(source: String) throws {
        let due = pending.withLock { !$0.order.isEmpty && ContinuousClock.now - $0.lastFlush >= Self.batchAge }
        if due { try flush(source: source) }
    }

    /// Writes every waiting row in one transaction.
    func flush(source: String) throws {
        let batch = pending.withLock { pending in
            defer {
                pending.writes.removeAll()
                pending.order.removeAll()
                pending.lastFlush = ContinuousClock.now
            }
            return pending.order.compactMap { pending.writes[$0] }
        }
        guard !batch.isEmpty else { return }
        // Only a new row carries the item's record: a change of state does not encode it again.
        let encoder = JSONEncoder()
        let records = try batch.map { write in
            write.isNew ? String(decoding: try encoder.encode(write.item), as: UTF8.self) : nil
        }
        let now = Date().timeIntervalSince1970
        try database.withLock { database in
            try database.transaction {
                var position = Int64(
                    try database.cached("SELECT COALESCE(MAX(position), 0) FROM queue").rows { $0.int(0) }.first ?? 0)
                let insert = try database.cached(
                    """
                    INSERT INTO queue (source, item_id, position, state, item, updated_at) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (source, item_id) DO UPDATE SET state = excluded.state, item = excluded.item,
                        updated_at = excluded.updated_at
                    """)
                let update = try database.cached(
                    "UPDATE queue SET state = ?, updated_at = ? WHERE source = ? AND item_id = ?")
                for (write, record) in zip(batch, records) {
                    if let record {
                        position += 1
                        try insert.run([
                            .text(source), .text(write.item.id), .integer(position), .text(write.state.rawValue),
                            .text(record), .real(now),
                        ])
                    } else {
                        try update.run([.text(write.state.rawValue), .real(now), .text(source), .text(write.item.id)])
                    }
                }
            }
        }
    }
}
