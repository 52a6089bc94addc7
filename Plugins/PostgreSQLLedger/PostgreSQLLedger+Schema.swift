import Foundation
import MediaFetchCore

extension PostgreSQLLedger {
    /// Each migration brings the schema from its index to the next version; the version is the one row of
    /// `mediafetch_schema`. Every run's rows share the tables, keyed by `run`.
    static let migrations = [
        """
        CREATE TABLE mediafetch_items (
            run TEXT NOT NULL,
            source TEXT NOT NULL,
            item_id TEXT NOT NULL,
            asset TEXT NOT NULL,
            title TEXT NOT NULL DEFAULT '',
            url TEXT NOT NULL,
            etag TEXT,
            last_modified TEXT,
            expected_bytes BIGINT,
            received_bytes BIGINT NOT NULL DEFAULT 0,
            sha256 TEXT,
            status TEXT NOT NULL CHECK (status IN ('pending', 'partial', 'verified', 'stored', 'failed')),
            reason TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            location TEXT,
            updated_at DOUBLE PRECISION NOT NULL,
            PRIMARY KEY (run, source, item_id, asset)
        );
        CREATE TABLE mediafetch_source_state (
            run TEXT NOT NULL,
            source TEXT NOT NULL,
            key TEXT NOT NULL,
            updated_at DOUBLE PRECISION NOT NULL,
            value BYTEA NOT NULL,
            PRIMARY KEY (run, source, key)
        );
        """,
        // A shared run: the planner writes each item (its record and planned name) with its place in source order;
        // workers claim rows under a lease, and say how they are doing in mediafetch_workers.
        """
        ALTER TABLE mediafetch_items
            ADD COLUMN seq BIGINT,
            ADD COLUMN item TEXT,
            ADD COLUMN plan_path TEXT,
            ADD COLUMN claimed_by TEXT,
            ADD COLUMN lease_until TIMESTAMPTZ;
        CREATE INDEX mediafetch_items_open ON mediafetch_items (run, seq) WHERE status <> 'stored';
        CREATE TABLE mediafetch_runs (
            run TEXT PRIMARY KEY,
            planned BOOLEAN NOT NULL DEFAULT FALSE,
            planned_items BIGINT NOT NULL DEFAULT 0,
            planner TEXT,
            source_error TEXT,
            started_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            updated_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        CREATE TABLE mediafetch_workers (
            run TEXT NOT NULL,
            worker TEXT NOT NULL,
            state TEXT NOT NULL,
            joined_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            heartbeat_at TIMESTAMPTZ NOT NULL DEFAULT now(),
            stored BIGINT NOT NULL DEFAULT 0,
            bytes BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (run, worker)
        );
        """,
        // What the run in progress has taken (SQLite's run_keys): the planned names, by collation key, and the ids
        // the source emitted.
        """
        CREATE TABLE mediafetch_run_keys (
            run TEXT NOT NULL,
            scope TEXT NOT NULL,
            key TEXT NOT NULL,
            value TEXT,
            PRIMARY KEY (run, scope, key)
        );
        """,
        // Room on each page for a row's next version: a claim (and a download's begin) changes no indexed column,
        // so with room PostgreSQL updates the row in place (a HOT update) instead of adding index entries; the
        // claims of a 2,000-item run cost a third less of the server's time. Pages written from now on get it.
        """
        ALTER TABLE mediafetch_items SET (fillfactor = 50);
        """,
    ]

    /// The lock every migration takes (`pg_advisory_xact_lock`), so that workers starting together migrate once.
    static let migrationLock: Int64 = 0x6D66_6C65_6467_6572

    /// Creates the schema or brings it to ``migrations``' version.
    /// - Throws: ``LedgerError`` when the server's schema is newer than this build knows.
    static func migrate(_ connection: PGConnection, location: String) throws {
        try connection.execute("BEGIN")
        do {
            try connection.query("SELECT pg_advisory_xact_lock($1)", [.text(String(migrationLock))])
            try connection.execute("CREATE TABLE IF NOT EXISTS mediafetch_schema (version INTEGER NOT NULL)")
            let rows = try connection.query("SELECT version FROM mediafetch_schema")
            let version = rows.count == 0 ? 0 : Int(rows.int64(0, 0) ?? 0)
            if rows.count == 0 { try connection.query("INSERT INTO mediafetch_schema (version) VALUES (0)") }
            guard version <= migrations.count else {
                throw LedgerError(
                    "the ledger \(location) has schema version \(version), newer than this build knows "
                        + "(\(migrations.count)); use a newer mediafetch")
            }
            for (index, sql) in migrations.enumerated().dropFirst(version) {
                try connection.execute(sql)
                try connection.query("UPDATE mediafetch_schema SET version = $1", [.text(String(index + 1))])
            }
            try connection.execute("COMMIT")
        } catch {
            if connection.isOK { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    /// The schema version the server holds (for tests and `check`).
    public func schemaVersion() throws -> Int {
        try withConnection { connection in
            Int(try connection.query("SELECT version FROM mediafetch_schema").int64(0, 0) ?? 0)
        }
    }
}
