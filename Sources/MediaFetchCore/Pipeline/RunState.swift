import Foundation
import Synchronization

/// A store an archive sink has not committed yet, and where its file is kept until it has.
struct UncommittedStore: Sendable {
    var key: LedgerKey
    var record: StoredRecord
    var plannedPath: String
    var keptAt: String
}

/// What the workers of one run share: the tally, the events, the ledger's batching, and the
/// stores an archive sink has not committed yet.
final class RunState: Sendable {
    let ledger: (any RunLedger)?
    let events: @Sendable (PipelineEvent) -> Void
    let tally = Mutex(RunSummary())
    private let uncommitted = Mutex<[UncommittedStore]>([])
    private let stopped = Mutex<String?>(nil)
    private let ledgerTrouble = Mutex(false)
    /// True while this worker of a shared run plans it (its claims may come back short only because it has not
    /// written more yet).
    let planningHere = Mutex(false)
    /// The transfer slots: `concurrency` downloads move bytes at once.
    let transfers: Slots

    /// The staging folder's path (see ``Pipeline/stagingPath(inFolder:source:itemID:asset:)``).
    let stagingFolder: String
    /// Set before the first item when the staging folders held no file as the run began and no item can come
    /// twice: then a staging file exists only for an item the ledger knows of.
    let stagingWasEmpty = Atomic(false)
    /// Downloads under way, from their first attempt to their store, retry delays included: twice the
    /// transfer slots. A store does not hold a place, so a durable one waiting on the disk does not hold the
    /// next download back; a retry does, so that during a run of failures (503s, say) new items do not start
    /// while others wait to try again, and a failure budget stops the run close to its count.
    let underWay: Slots
    /// The planned downloads on their way to the run's workers (a batch run's; see ``JobQueue``).
    let jobs: JobQueue<Pipeline.Job>
    /// Where small downloads for a sink that takes them in memory are kept (``Sink/inMemoryStagingLimit``).
    let stagingMemory = StagingMemory(bytes: Pipeline.inMemoryStagingBudget)

    init(
        ledger: (any RunLedger)?, events: @escaping @Sendable (PipelineEvent) -> Void, transfers: Int, stagingFolder: String
    ) {
        self.ledger = ledger
        self.events = events
        self.transfers = Slots(limit: transfers)
        self.underWay = Slots(limit: 2 * transfers)
        self.jobs = JobQueue(
            capacity: transfers, workerLimit: Pipeline.workerLimit(concurrency: transfers), activeTarget: transfers + 2)
        self.stagingFolder = stagingFolder
    }

    /// Runs `body`, a wait that holds no transfer slot (a store, a retry delay), with its worker parked
    /// (``JobQueue/park()``).
    func parking<T>(_ body: () async throws -> T) async rethrows -> T {
        jobs.park()
        defer { jobs.unpark() }
        return try await body()
    }

    func report(_ event: PipelineEvent) {
        tally.withLock { $0.count(event) }
        events(event)
        // Every event is a chance to commit a due batch, except progress: it comes from the transport's
        // threads (a curl engine's), where a SQLite commit would hold up every transfer of that engine.
        // The run's own ticker commits a long download's validator instead (see ``tickLedger()``).
        if case .progress = event { return }
        flushLedger()
    }

    /// Commits the ledger's due batch every quarter second until cancelled, so that what a long download
    /// learned (its validator) is on disk within a moment even when no other event comes.
    func tickLedger() async {
        guard ledger != nil else { return }
        while (try? await Task.sleep(for: .milliseconds(250))) != nil {
            flushLedger()
        }
    }

    /// Why the run stopped starting new items, if it did.
    var stopReason: String? { stopped.withLock { $0 } }

    func stop(_ reason: String) {
        let first = stopped.withLock { current in
            defer { if current == nil { current = reason } }
            return current == nil
        }
        if first {
            tally.withLock { $0.stopReason = reason }
            events(.notice("stopping: " + reason))
        }
    }

    func transferred(_ bytes: Int64) {
        tally.withLock { $0.bytesTransferred += bytes }
    }

    func deferStored(_ key: LedgerKey, _ record: StoredRecord, plannedPath: String, keptAt path: String) {
        uncommitted.withLock {
            $0.append(UncommittedStore(key: key, record: record, plannedPath: plannedPath, keptAt: path))
        }
    }

    func takeUncommitted() -> [UncommittedStore] {
        uncommitted.withLock { pending in
            defer { pending.removeAll() }
            return pending
        }
    }

    /// Commits the ledger's batch when due (or now). A ledger that cannot be written costs only
    /// re-fetching next time, so the run goes on and says so once.
    /// - Returns: false when the ledger could not be written.
    @discardableResult
    func flushLedger(force: Bool = false) -> Bool {
        guard let ledger else { return true }
        do {
            if force { try ledger.flush() } else { try ledger.flushIfDue() }
            return true
        } catch {
            let first = ledgerTrouble.withLock { seen in
                defer { seen = true }
                return !seen
            }
            if first {
                if let error = error as? LedgerError, error.isUnreachable {
                    // A ledger on a server keeps its writes queued until the server answers again.
                    events(.notice("the ledger does not answer (\(error)); its writes wait until it does"))
                } else {
                    events(
                        .notice(
                            "the ledger could not be written (\(error)); this run's progress will not be remembered"))
                }
            }
            return false
        }
    }
}

/// The head of the answer to one attempt, filled in by the transport's callback.
final class AnswerBox: Sendable {
    private let head = Mutex<DownloadResponse?>(nil)

    func set(_ value: DownloadResponse) { head.withLock { $0 = value } }
    var value: DownloadResponse? { head.withLock { $0 } }
}

/// The memory a run keeps small downloads in, for a sink that takes them so (``Sink/inMemoryStagingLimit``): at most
/// so many bytes at once, whatever the concurrency; a download that does not fit is staged as a file.
final class StagingMemory: Sendable {
    private let free: Mutex<Int64>

    init(bytes: Int64) {
        free = Mutex(bytes)
    }

    /// Takes `bytes` when that much is free.
    func take(_ bytes: Int64) -> Bool {
        free.withLock { free in
            guard free >= bytes else { return false }
            free -= bytes
            return true
        }
    }

    func give(_ bytes: Int64) {
        free.withLock { $0 += bytes }
    }
}

/// One download attempt's part of ``StagingMemory``: taken when its answer announces a length that fits (the
/// request's ``DownloadRequest/keepInMemory``), given back once the file is stored or the attempt has ended.
final class MemoryShare: Sendable {
    private let memory: StagingMemory
    private let limit: Int64
    /// Bytes held, and whether the transport was told it may keep the body in memory.
    private let state = Mutex<(bytes: Int64, granted: Bool)>((0, false))

    init(of memory: StagingMemory, limit: Int64) {
        self.memory = memory
        self.limit = limit
    }

    /// The answer to ``DownloadRequest/keepInMemory``: yes when the file is within the sink's limit and the run's
    /// memory has room for it.
    func grant(_ bytes: Int64) -> Bool {
        // Once per attempt: a transport that asked again would otherwise hold the first grant for good.
        guard bytes >= 0, bytes <= limit, !granted, memory.take(bytes) else { return false }
        state.withLock { $0 = (bytes, true) }
        return true
    }

    /// Whether the body was allowed into memory: then the transport writes no file to follow.
    var granted: Bool { state.withLock { $0.granted } }

    /// Gives the bytes back (once; later calls do nothing).
    func giveBack() {
        let bytes = state.withLock { state in
            defer { state.bytes = 0 }
            return state.bytes
        }
        if bytes > 0 { memory.give(bytes) }
    }
}

/// Thrown into the source when the failure budget stopped the run.
struct StopRequested: Error {}

/// Lets through one progress report per interval.
final class ProgressThrottle: Sendable {
    private let interval: Duration
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    init(interval: Duration) {
        self.interval = interval
    }

    func shouldReport() -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            if let previous = last, now - previous < interval { return false }
            last = now
            return true
        }
    }
}

extension RunSummary {
    mutating func count(_ event: PipelineEvent) {
        switch event {
        case .stored(_, _, _, let bytes):
            stored += 1
            self.bytes += bytes
        case .failed: failed += 1
        case .skipped: skipped += 1
        case .alreadyStored: alreadyStored += 1
        case .itemStarted, .progress, .retrying, .notice, .finished: break
        }
    }
}
