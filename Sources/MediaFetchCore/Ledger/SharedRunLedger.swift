import Foundation

/// An asset the planner wrote into a shared run: the item, where the sink will store it, and its place in source
/// order. Workers claim these and fetch them.
public struct PlannedAsset: Sendable {
    public var key: LedgerKey
    public var item: MediaItem
    public var plan: StoragePlan
    public var url: URL
    /// The asset's place in source order (0 for the first).
    public var sequence: Int64
    /// What the ledger knew of it when it was claimed (a partial download's validator, say).
    public var entry: LedgerEntry?

    public init(
        key: LedgerKey, item: MediaItem, plan: StoragePlan, url: URL, sequence: Int64, entry: LedgerEntry? = nil
    ) {
        self.key = key
        self.item = item
        self.plan = plan
        self.url = url
        self.sequence = sequence
        self.entry = entry
    }
}

/// Where a shared run stands, as one worker sees it.
public struct SharedRunProgress: Sendable, Hashable {
    /// The planner has written every item of this round.
    public var planned: Bool
    /// Assets not stored and not failed: pending, partial or claimed by someone.
    public var open: Int

    public init(planned: Bool, open: Int) {
        self.planned = planned
        self.open = open
    }
}

/// A ledger that several workers (processes, machines) share for one named run (PostgreSQL's).
///
/// One worker at a time plans: it holds the planning lock (``tryToPlan()``), runs the source, and writes the assets
/// with their planned names in source order (``addPlanned(_:)``), so that names do not depend on how many workers
/// there are. Every worker claims assets in batches (``claim(limit:)``) under a lease it renews
/// (``heartbeat(stored:bytes:)``); a lease not renewed expires and its assets go to others. A worker confirms its
/// claim before it stores (``confirmClaim(_:)``).
///
/// Implementation requirements: claims never overlap while leases are live; the planning lock is released when its
/// holder's connection ends (a worker killed with `-9` loses it); every method may fail with a ``LedgerError``
/// whose ``LedgerError/isUnreachable`` says the store could not be reached,, which the worker retries with backoff.
public protocol SharedRunLedger: RunLedger {
    /// This worker's id in the run (`--worker`, default host:pid).
    var worker: String { get }

    /// How long a claim lasts without a heartbeat.
    var lease: Duration { get }

    /// Joins the run as ``worker``. When no other worker is alive, a new round begins: the run is to be planned
    /// again (what is stored stays stored), so a later run picks up what the source has new.
    func join() throws

    /// Takes the planning lock when the round is not planned and no one holds it.
    /// - Returns: true when this worker is now the planner.
    func tryToPlan() throws -> Bool

    /// The stored entries among `keys` (the planner asks the sink whether it still holds them).
    func storedEntries(_ keys: [LedgerKey]) throws -> [LedgerKey: LedgerEntry]

    /// Writes planned assets (in source order); an asset already in the run keeps its status, and takes the
    /// planned name and place given here.
    func addPlanned(_ assets: [PlannedAsset]) throws

    /// The planner is done (or the source failed, with `sourceError`): the round is planned, the lock released.
    func finishPlanning(sourceError: String?) throws

    /// Gives up the planning lock without finishing (interrupted).
    func abandonPlanning()

    /// Claims up to `limit` open assets, lowest place first, skipping what others hold.
    func claim(limit: Int) throws -> [PlannedAsset]

    /// Renews the leases of the claims this worker took (``claim(limit:)``) and has not stored, failed or given
    /// back, and says how it is doing. A claim the worker's name holds that it did not take (an earlier process of
    /// the same name left it) is not renewed: its lease runs out, and it is claimed again.
    func heartbeat(stored: Int, bytes: Int64) throws

    /// Whether this worker still holds its claim on `key` (and renews it): checked right before a store.
    func confirmClaim(_ key: LedgerKey) throws -> Bool

    /// Gives back every claim this worker holds not yet stored (interrupted, paused).
    func releaseClaims() throws

    /// Where the run stands.
    func progress() throws -> SharedRunProgress

    /// Whether the round is planned (``progress()``'s `planned`), without counting the open assets: a planner's
    /// wait and `mediafetch status` ask only this. The default asks ``progress()``.
    func isPlanned() throws -> Bool

    /// Leaves the run, saying how this worker ended (`done`, `interrupted`, `paused`).
    func leave(state: String) throws

    /// Every worker that joined the run, with what it holds and has done (`mediafetch status`).
    func workers() throws -> [SharedRunWorker]
}

extension SharedRunLedger {
    public func isPlanned() throws -> Bool { try progress().planned }
}

/// One worker of a shared run, as `mediafetch status` shows it.
public struct SharedRunWorker: Sendable, Hashable, Codable {
    public var worker: String
    /// `running`, `done`, `interrupted` or `paused` (as it said when it left; a killed worker stays `running` with
    /// an old heartbeat).
    public var state: String
    /// Assets it holds under a live lease now.
    public var claimed: Int
    /// Files it stored since it joined.
    public var stored: Int
    /// Bytes it downloaded since it joined.
    public var bytes: Int64
    public var joinedAt: Date
    public var lastHeartbeat: Date

    public init(
        worker: String, state: String, claimed: Int, stored: Int, bytes: Int64, joinedAt: Date, lastHeartbeat: Date
    ) {
        self.worker = worker
        self.state = state
        self.claimed = claimed
        self.stored = stored
        self.bytes = bytes
        self.joinedAt = joinedAt
        self.lastHeartbeat = lastHeartbeat
    }

    /// Bytes per second over the time it has worked.
    public var bytesPerSecond: Double {
        let seconds = lastHeartbeat.timeIntervalSince(joinedAt)
        return seconds > 0 ? Double(bytes) / seconds : 0
    }

    /// Files per second over the time it has worked.
    public var storedPerSecond: Double {
        let seconds = lastHeartbeat.timeIntervalSince(joinedAt)
        return seconds > 0 ? Double(stored) / seconds : 0
    }
}

