import Foundation
import MediaFetchCore

/// Several workers on one run: the planner writes items in source order under a session advisory lock, workers claim
/// with `FOR UPDATE SKIP LOCKED` under leases they renew.
extension PostgreSQLLedger: SharedRunLedger {
    private var leaseSeconds: String {
        let parts = lease.components
        return String(Double(parts.seconds) + Double(parts.attoseconds) / 1e18)
    }

    public func join() throws {
        try flush()
        joinedAt.withLock { $0 = Date().timeIntervalSince1970 }
        _ = try withConnection { connection in
            try connection.execute("BEGIN")
            do {
                // One joiner at a time decides whether a new round begins.
                try connection.query("SELECT pg_advisory_xact_lock(hashtextextended($1, 1))", [.text(run)])
                try connection.query(
                    "INSERT INTO mediafetch_runs (run) VALUES ($1) ON CONFLICT (run) DO NOTHING", [.text(run)])
                let alive = try connection.query(
                    """
                    SELECT count(*) FROM mediafetch_workers WHERE run = $1 AND worker <> $2 AND state = 'running'
                        AND heartbeat_at > now() - ($3 || ' seconds')::interval
                    """, [.text(run), .text(worker), .text(leaseSeconds)])
                if alive.int64(0, 0) == 0 {
                    // Nobody else is at work: a new round, planned again from the source's first item.
                    try connection.query(
                        "UPDATE mediafetch_runs SET planned = FALSE, source_error = NULL, updated_at = now() WHERE run = $1",
                        [.text(run)])
                }
                try connection.query(
                    """
                    INSERT INTO mediafetch_workers (run, worker, state) VALUES ($1, $2, 'running')
                    ON CONFLICT (run, worker) DO UPDATE SET state = 'running', joined_at = now(), heartbeat_at = now(),
                        stored = 0, bytes = 0
                    """, [.text(run), .text(worker)])
                try connection.execute("COMMIT")
            } catch {
                if connection.isOK { try? connection.execute("ROLLBACK") }
                throw error
            }
        }
    }

    public func tryToPlan() throws -> Bool {
        let planned = try withConnection { connection in
            try connection.query("SELECT planned FROM mediafetch_runs WHERE run = $1", [.text(run)]).bool(0, 0)
        }
        guard planned == false else { return false }
        return try planning.withLock { held in
            do {
                let connection = try held ?? PGConnection(uri: uri, secrets: secrets)
                let got = try connection.query(
                    "SELECT pg_try_advisory_lock(hashtextextended($1, 2))", [.text(run)]
                ).bool(0, 0)
                guard got == true else {
                    held = nil
                    return false
                }
                // Someone may have finished planning between the look and the lock.
                let done = try connection.query(
                    "SELECT planned FROM mediafetch_runs WHERE run = $1", [.text(run)]
                ).bool(0, 0)
                if done == true {
                    held = nil
                    return false
                }
                try connection.query(
                    "UPDATE mediafetch_runs SET planner = $2, planned_items = 0, updated_at = now() WHERE run = $1",
                    [.text(run), .text(worker)])
                held = connection
                return true
            } catch let error as PGError {
                held = nil
                throw LedgerError(
                    "the PostgreSQL ledger \(location): \(error.message)", cause: error,
                    isUnreachable: error.connectionLost)
            }
        }
    }

    /// The stored rows among the keys `$2`, `$3` and `$4` (sources, item ids, assets, as arrays) of run `$1`.
    ///
    /// The keys as three arrays (an IN list of 256 rows cost the server more to plan than to run), each looked up
    /// on its own (`LATERAL`, kept from being flattened into a join by its `LIMIT`). As a plain join, a run the
    /// server's statistics had not seen yet was taken for a row or two, and the server hashed every row of the run
    /// to find a batch's keys: a planner's batch of 512 took 110-150 ms at 100,000 items, and a shared run of
    /// 100,000 small files spent most of its time there.
    static let storedEntriesSQL = """
        SELECT \(columnsOfI)
        FROM unnest($2::text[], $3::text[], $4::text[]) AS k(source, item_id, asset)
        CROSS JOIN LATERAL (
            SELECT * FROM mediafetch_items i
            WHERE i.run = $1 AND i.source = k.source AND i.item_id = k.item_id AND i.asset = k.asset
                AND i.status = 'stored'
            LIMIT 1
        ) i
        """

    public func storedEntries(_ keys: [LedgerKey]) throws -> [LedgerKey: LedgerEntry] {
        guard !keys.isEmpty else { return [:] }
        return try withConnection { connection in
            let rows = try connection.query(
                Self.storedEntriesSQL,
                [
                    .text(run), .text(PGConnection.arrayLiteral(keys.map(\.source))),
                    .text(PGConnection.arrayLiteral(keys.map(\.itemID))),
                    .text(PGConnection.arrayLiteral(keys.map(\.asset.rawValue))),
                ])
            var found: [LedgerKey: LedgerEntry] = [:]
            for row in 0..<rows.count {
                let entry = try Self.entry(rows, row)
                found[entry.key] = entry
            }
            return found
        }
    }

    public func addPlanned(_ assets: [PlannedAsset]) throws {
        guard !assets.isEmpty else { return }
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        let items = try assets.map { String(decoding: try encoder.encode($0.item), as: UTF8.self) }
        func keys(_ assets: [PlannedAsset]) -> [PGConnection.Value] {
            [
                PGConnection.array(assets.map(\.key.source)), PGConnection.array(assets.map(\.key.itemID)),
                PGConnection.array(assets.map(\.key.asset.rawValue)),
            ]
        }
        // One transaction in one round trip, the values as arrays (a text of 256 rows of literals took the server
        // longer to parse than to run).
        var statements = [
            PGConnection.Statement(
                name: "mediafetch_planned",
                sql: """
                    INSERT INTO mediafetch_items AS i (run, source, item_id, asset, title, url, status, updated_at, seq,
                        item, plan_path)
                    SELECT $1, k.source, k.item_id, k.asset, k.title, k.url, 'pending', $2, k.seq, k.item, k.plan_path
                    FROM unnest($3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[],
                        $10::text[]) AS k(source, item_id, asset, title, url, seq, item, plan_path)
                    ON CONFLICT (run, source, item_id, asset) DO UPDATE SET seq = excluded.seq, item = excluded.item,
                        plan_path = excluded.plan_path, url = excluded.url, title = excluded.title
                    """,
                // A row already there keeps its status (stored stays stored), and takes this round's name and place.
                parameters: [.text(run), .text(String(Date().timeIntervalSince1970))] + keys(assets) + [
                    PGConnection.array(assets.map(\.item.title)), PGConnection.array(assets.map(\.url.absoluteString)),
                    PGConnection.array(assets.map { String($0.sequence) }), PGConnection.array(items),
                    PGConnection.array(assets.map(\.plan.relativePath)),
                ])
        ]
        // An asset planned with a stored entry is one the sink no longer holds (the planner asked it): pending again.
        // A statement a key, each found by the primary key: joined to the keys as arrays, a run the server's
        // statistics had not seen could be hashed whole for each batch (see ``storedEntriesSQL``).
        for asset in assets where asset.entry?.status == .stored {
            statements.append(
                PGConnection.Statement(
                    name: "mediafetch_refetch",
                    sql: """
                        UPDATE mediafetch_items SET status = 'pending', location = NULL
                        WHERE run = $1 AND source = $2 AND item_id = $3 AND asset = $4
                        """,
                    parameters: [
                        .text(run), .text(asset.key.source), .text(asset.key.itemID), .text(asset.key.asset.rawValue),
                    ]))
        }
        statements.append(
            PGConnection.Statement(
                name: "mediafetch_planned_items",
                sql: """
                    UPDATE mediafetch_runs SET planned_items = GREATEST(planned_items, $2::bigint + 1), updated_at = now()
                    WHERE run = $1
                    """, parameters: [.text(run), .text(String(assets.map(\.sequence).max() ?? 0))]))
        try withConnection { _ = try $0.pipeline(statements) }
    }

    public func finishPlanning(sourceError: String?) throws {
        try flush()
        try withConnection { connection in
            _ = try connection.query(
                "UPDATE mediafetch_runs SET planned = TRUE, source_error = $2, updated_at = now() WHERE run = $1",
                [.text(run), .text(sourceError)])
        }
        abandonPlanning()
    }

    public func abandonPlanning() {
        // Closing the connection ends the session, and with it the lock.
        planning.withLock { $0 = nil }
    }

    public func claim(limit: Int) throws -> [PlannedAsset] {
        let since = joinedAt.withLock { $0 }
        let sent = ContinuousClock.now
        let rows = try withClaimConnection { connection in
            try connection.query(
                """
                UPDATE mediafetch_items i SET claimed_by = $2, lease_until = now() + ($3 || ' seconds')::interval,
                    status = CASE WHEN i.status = 'failed' THEN 'pending' ELSE i.status END
                FROM (
                    SELECT run, source, item_id, asset FROM mediafetch_items
                    WHERE run = $1 AND seq IS NOT NULL AND status <> 'stored'
                        AND (status <> 'failed' OR updated_at < $4)
                        AND (claimed_by IS NULL OR lease_until < now())
                    ORDER BY seq LIMIT $5 FOR UPDATE SKIP LOCKED
                ) c
                WHERE i.run = c.run AND i.source = c.source AND i.item_id = c.item_id AND i.asset = c.asset
                RETURNING \(Self.columnsOfI),
                    i.seq, i.item, i.plan_path
                """,
                [.text(run), .text(worker), .text(leaseSeconds), .text(String(since)), .text(String(limit))])
        }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        var claimed: [PlannedAsset] = []
        for row in 0..<rows.count {
            let entry = try Self.entry(rows, row)
            guard let json = rows.bytes(row, 16), let path = rows.text(row, 17), let url = URL(string: entry.url),
                let item = try? decoder.decode(MediaItem.self, from: json)
            else {
                throw LedgerError(
                    "the ledger holds a planned item this build cannot read (\(entry.key)); "
                        + "`mediafetch clean --all` starts the run over")
            }
            // A failed row claimed again starts as the ledger's pending would.
            var known = entry
            if known.status == .failed { known.status = .pending }
            claimed.append(
                PlannedAsset(
                    key: entry.key, item: item,
                    plan: StoragePlan(item: item.ref, asset: entry.key.asset, relativePath: path), url: url,
                    sequence: rows.int64(row, 15) ?? 0, entry: known))
        }
        claimedAt.withLock { known in
            for asset in claimed { known[asset.key] = sent }
        }
        return claimed.sorted { $0.sequence < $1.sequence }
    }

    public func heartbeat(stored: Int, bytes: Int64) throws {
        let sent = ContinuousClock.now
        // The claims this worker knows it holds, each renewed by its key (what confirmClaim does for one), all in one
        // round trip with the worker's own row. Renewed by `claimed_by` instead, a heartbeat read every open row of
        // the run through the open rows' index, and kept alive the claims of an earlier process of the same name,
        // which no one was working on.
        let held = claimedAt.withLock { $0 }
        let keys = Array(held.keys)
        let beat = PGConnection.Statement(
            name: "mediafetch_heartbeat",
            sql: """
                UPDATE mediafetch_workers SET heartbeat_at = now(), stored = $3, bytes = $4, state = 'running'
                WHERE run = $1 AND worker = $2
                """,
            parameters: [.text(run), .text(worker), .text(String(stored)), .text(String(bytes))])
        let answers = try withConnection { try $0.pipeline(keys.map(confirmation) + [beat]) }
        let renewed = Set(zip(keys, answers).filter { Self.confirmed($0.1) }.map(\.0))
        // Only the claims the server renewed are fresh; one it no longer counts as this worker's is forgotten. One
        // whose time changed while the beat was under way (stored and claimed again, confirmed) is left as it is
        // now, and one stored or given up meanwhile stays gone.
        claimedAt.withLock { known in
            for key in keys where known[key] == held[key] { known[key] = renewed.contains(key) ? sent : nil }
        }
    }

    /// Renews the claim of worker `$5` on the asset `$2`, `$3`, `$4` of run `$1` for `$6` seconds; answers a row
    /// when the worker holds it, true when it is not stored (``confirmed(_:)``).
    ///
    /// Found by its primary key alone. With `status <> 'stored'` among the conditions the server could take the open
    /// rows' index (whose condition that is) for a run its statistics had not seen, and read every open row of the
    /// run to find one; the status is asked in what the update returns instead. (A stored row has no claim: both
    /// statements that store clear it.)
    static let confirmClaimSQL = """
        UPDATE mediafetch_items SET lease_until = now() + ($6 || ' seconds')::interval
        WHERE run = $1 AND source = $2 AND item_id = $3 AND asset = $4 AND claimed_by = $5
        RETURNING status <> 'stored'
        """

    /// ``confirmClaimSQL`` for this worker's claim on `key`.
    private func confirmation(_ key: LedgerKey) -> PGConnection.Statement {
        PGConnection.Statement(
            name: "mediafetch_confirm", sql: Self.confirmClaimSQL,
            parameters: [
                .text(run), .text(key.source), .text(key.itemID), .text(key.asset.rawValue), .text(worker),
                .text(leaseSeconds),
            ])
    }

    /// Whether an answer to ``confirmClaimSQL`` says the claim is held, and open.
    private static func confirmed(_ rows: PGRows) -> Bool { rows.count == 1 && rows.bool(0, 0) == true }

    public func confirmClaim(_ key: LedgerKey) throws -> Bool {
        // Renewed (or claimed) less than two thirds of a lease ago: no one else can have it yet. Leases are measured
        // by the server's clock from a moment after `sent`, so this side's clock only ever errs short.
        let fresh = claimedAt.withLock { known in
            known[key].map { ContinuousClock.now - $0 < lease * 2 / 3 } ?? false
        }
        if fresh { return true }
        let sent = ContinuousClock.now
        let statement = confirmation(key)
        let confirmed = try withConnection { Self.confirmed(try $0.query(statement.sql, statement.parameters)) }
        claimedAt.withLock { $0[key] = confirmed ? sent : nil }
        return confirmed
    }

    public func releaseClaims() throws {
        claimedAt.withLock { $0.removeAll() }
        try flush()
        _ = try withConnection { connection in
            try connection.query(
                """
                UPDATE mediafetch_items SET claimed_by = NULL, lease_until = NULL
                WHERE run = $1 AND claimed_by = $2 AND status <> 'stored'
                """, [.text(run), .text(worker)])
        }
    }

    public func progress() throws -> SharedRunProgress {
        // This worker's own failures and stores must be on the server before it counts what is open.
        try flush()
        let since = joinedAt.withLock { $0 }
        return try withConnection { connection in
            let rows = try connection.query(
                """
                SELECT r.planned, (SELECT count(*) FROM mediafetch_items
                    WHERE run = $1 AND seq IS NOT NULL AND status <> 'stored' AND (status <> 'failed' OR updated_at < $2))
                FROM mediafetch_runs r WHERE r.run = $1
                """, [.text(run), .text(String(since))])
            guard rows.count == 1 else { return SharedRunProgress(planned: false, open: 0) }
            return SharedRunProgress(planned: rows.bool(0, 0) ?? false, open: Int(rows.int64(0, 1) ?? 0))
        }
    }

    /// The run's own row: `progress()` also counts the open rows, a scan of the run's index (0.3 s at a million).
    public func isPlanned() throws -> Bool {
        try withConnection { connection in
            let rows = try connection.query("SELECT planned FROM mediafetch_runs WHERE run = $1", [.text(run)])
            return rows.count == 1 && rows.bool(0, 0) == true
        }
    }

    public func leave(state: String) throws {
        _ = try withConnection { connection in
            try connection.query(
                "UPDATE mediafetch_workers SET state = $3, heartbeat_at = now() WHERE run = $1 AND worker = $2",
                [.text(run), .text(worker), .text(state)])
        }
    }

    public func workers() throws -> [SharedRunWorker] {
        try flush()
        return try withConnection { connection in
            let rows = try connection.query(
                """
                SELECT w.worker, w.state, (SELECT count(*) FROM mediafetch_items i WHERE i.run = w.run
                        AND i.claimed_by = w.worker AND i.status <> 'stored' AND i.lease_until > now()),
                    w.stored, w.bytes, extract(epoch FROM w.joined_at), extract(epoch FROM w.heartbeat_at)
                FROM mediafetch_workers w WHERE w.run = $1 ORDER BY w.joined_at, w.worker
                """, [.text(run)])
            return (0..<rows.count).map { row in
                SharedRunWorker(
                    worker: rows.text(row, 0) ?? "", state: rows.text(row, 1) ?? "",
                    claimed: Int(rows.int64(row, 2) ?? 0), stored: Int(rows.int64(row, 3) ?? 0),
                    bytes: rows.int64(row, 4) ?? 0,
                    joinedAt: Date(timeIntervalSince1970: rows.double(row, 5) ?? 0),
                    lastHeartbeat: Date(timeIntervalSince1970: rows.double(row, 6) ?? 0))
            }
        }
    }
}
