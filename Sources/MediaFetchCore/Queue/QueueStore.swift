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

    /// Adds or updates a row; a new one goes at the end.
    func save(source: String, item: MediaItem, state: DownloadStatus) throws {
        let json = String(decoding: try JSONEncoder().encode(item), as: UTF8.self)
        try database.withLock { database in
            try database.cached(
                """
                INSERT INTO queue (source, item_id, position, state, item, updated_at)
                VALUES (?, ?, (SELECT COALESCE(MAX(position), 0) + 1 FROM queue), ?, ?, ?)
                ON CONFLICT (source, item_id) DO UPDATE SET state = excluded.state, item = excluded.item,
                    updated_at = excluded.updated_at
                """
            ).run([
                .text(source), .text(item.id), .text(state.rawValue), .text(json),
                .real(Date().timeIntervalSince1970),
            ])
        }
    }

    /// Records a new state for a row that exists.
    func update(source: String, itemID: String, state: DownloadStatus) throws {
        try database.withLock { database in
            try database.cached("UPDATE queue SET state = ?, updated_at = ? WHERE source = ? AND item_id = ?")
                .run([.text(state.rawValue), .real(Date().timeIntervalSince1970), .text(source), .text(itemID)])
        }
    }
}
