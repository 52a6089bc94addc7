import Foundation
import Synchronization

/// Runs one pipeline: the source's items are planned by the sink in source order, checked against
/// the ledger, downloaded by a bounded number of workers into staging files (resuming what an
/// earlier run left), verified, stored, and recorded.
///
/// A sink that commits only at its ``Sink/finish()`` (an archive, ``Sink/commitsEachStore`` false) leaves each
/// staging file in place: the pipeline records it verified in the ledger before the store, keeps it until the
/// finish has committed, records it stored and only then deletes it. A run interrupted before the commit (Ctrl-C,
/// `kill -9`, a failed finish) so keeps every checked download, and the next run stores those again from their
/// kept files without a request (``Ledger/verified(_:size:sha256:)``). The price is disk: until the commit, the
/// kept files take as much again as the files stored in this run.
public struct Pipeline: Sendable {
    public struct Options: Sendable {
        /// How many downloads run at once.
        public var concurrency: Int
        /// Where partial downloads live until the sink takes them; kept between runs for resuming.
        public var stagingDirectory: URL
        /// The least time between two progress events of one download.
        public var progressInterval: Duration
        /// The source's plugin name: with an item's id it keys the ledger.
        public var sourceName: String
        /// The memory between runs; without one every run starts from nothing.
        public var ledger: (any RunLedger)?
        /// Ignore what the ledger says is stored or partial, and fetch everything again.
        public var refetch: Bool
        /// Retries, limits and the failure budget.
        public var policy: DownloadPolicy
        /// Per-item pause and cancel (a ``DownloadQueue``'s); nil for a batch run.
        public var control: ItemControl?
        /// Set when this run is one worker of a shared run: every store happens under a confirmed claim.
        var shared: (any SharedRunLedger)?
        /// How long a worker of a shared run waits for an unreachable ledger.
        var sharedPatience: Duration = .seconds(60)

        public init(
            concurrency: Int,
            stagingDirectory: URL,
            progressInterval: Duration = .milliseconds(250),
            sourceName: String = "source",
            ledger: (any RunLedger)? = nil,
            refetch: Bool = false,
            policy: DownloadPolicy = DownloadPolicy(),
            control: ItemControl? = nil
        ) {
            self.concurrency = max(1, concurrency)
            self.stagingDirectory = stagingDirectory
            self.progressInterval = progressInterval
            self.sourceName = sourceName
            self.ledger = ledger
            self.refetch = refetch
            self.policy = policy
            self.control = control
        }
    }

    public var source: any Source
    public var transport: any Transport
    public var sink: any Sink
    public var options: Options
    public var events: @Sendable (PipelineEvent) -> Void

    public init(
        source: any Source,
        transport: any Transport,
        sink: any Sink,
        options: Options,
        events: @escaping @Sendable (PipelineEvent) -> Void = { _ in }
    ) {
        self.source = source
        self.transport = transport
        self.sink = sink
        self.options = options
        self.events = events
    }

    /// Runs to the end, or until the calling task is cancelled (then in-flight downloads stop and
    /// keep their bytes for a resume, nothing half-done is stored, and the summary says `interrupted`).
    public func run() async -> RunSummary {
        let clock = ContinuousClock()
        let start = clock.now
        let run = RunState(
            ledger: options.ledger, events: events, transfers: options.concurrency,
            stagingFolder: options.stagingDirectory.path)

        do {
            try Self.prepareStaging(options.stagingDirectory)
            // A queue may bring an item back after a pause in the same run, with its bytes kept.
            if options.control == nil, Self.holdsNoPartialFile(options.stagingDirectory) {
                run.stagingWasEmpty.store(true, ordering: .relaxed)
            }
            let keysInLedger = keepRunKeys(run)
            let ticker = Task { await run.tickLedger() }
            defer { ticker.cancel() }
            // The sink may size what its stores wait for by the stores that can wait at once (``storesAtOnce``).
            try await Self.$storesAtOnce.withValue(run.jobs.workerLimit - options.concurrency) {
                try await feedWorkers(run, seen: SeenIDs(ledger: keysInLedger ? options.ledger : nil))
            }
        } catch is CancellationError {
            run.tally.withLock { $0.interrupted = true }
        } catch let error as SourceError {
            run.tally.withLock { $0.sourceError = error.message }
        } catch {
            run.tally.withLock { $0.sourceError = String(describing: error) }
        }
        if Task.isCancelled { run.tally.withLock { $0.interrupted = true } }

        do {
            try await sink.finish()
            // Only now are an archive's files durable, so only now does the ledger say so.
            let committed = run.takeUncommitted()
            for store in committed { options.ledger?.stored(store.key, store.record, plannedPath: store.plannedPath) }
            // The kept files go once the ledger says stored: a crash before that stores them again from them.
            if !sink.commitsEachStore, run.flushLedger(force: true) { removeKeptFiles(committed.map(\.keptAt)) }
        } catch {
            run.tally.withLock { summary in
                summary.sinkError = String(describing: error)
                // An archive that was not completed holds nothing: what it took is fetched again next time.
                if !sink.commitsEachStore {
                    summary.stored = 0
                    summary.bytes = 0
                }
            }
        }
        if options.ledger == nil {
            // Nothing remembers kept files for a next run: they are of no use once the sink is done.
            for store in run.takeUncommitted() { _ = unlink(store.keptAt) }
        }
        await transport.shutdown()
        run.flushLedger(force: true)

        var summary = run.tally.withLock { $0 }
        summary.wallSeconds = (clock.now - start).seconds
        events(.finished(summary))
        return summary
    }

    /// Moves the run's names and the ids its source emits into the ledger (emptied of the last run's), so that
    /// nothing per item stays in memory. A ledger that cannot take them leaves them in memory, and the run goes on.
    /// - Returns: whether they are in the ledger.
    private func keepRunKeys(_ run: RunState) -> Bool {
        guard let ledger = options.ledger else { return false }
        do {
            try ledger.resetRunKeys()
            try sink.pathReserver?.keep(in: ledger)
            return true
        } catch {
            run.report(.notice("the ledger cannot keep this run's names (\(error)); they are kept in memory"))
            return false
        }
    }

    /// Reads the source in a child task, plans each item's assets in source order, and queues them (``RunState/jobs``)
    /// for workers that take one after another, up to ``workerLimit(concurrency:openFiles:)`` of them, started as
    /// ``JobQueue`` wants them. At most `concurrency` move bytes at once (``RunState/transfers``), and twice that are
    /// under way (``RunState/underWay``: transferring or waiting out a retry delay); the other workers wait for their
    /// turn or are storing, so that a store waiting on the disk, or a retry waiting out its delay, does not hold a
    /// transfer back. A retry takes its places again ahead of downloads that have not started. A source failure stops
    /// new work but lets queued and started downloads finish.
    private func feedWorkers(_ run: RunState, seen: SeenIDs) async throws {
        let (outputs, continuation) = AsyncThrowingStream.makeStream(of: SourceOutput.self)
        // The source runs a little ahead of the downloads, never the whole catalog ahead.
        let credits = Slots(limit: max(64, options.concurrency * 4))
        // Credits the source took and has not spent. It takes a quarter of them at a time: taken one by one, a
        // source held back by the downloads was woken for each item the consumer took, a task switch an item.
        let creditsInHand = CreditsInHand()
        let creditsAtOnce = credits.limit / 4
        let state = options.ledger.map {
            SourceState(ledger: $0, source: options.sourceName, readsStoredValues: !options.refetch)
        }
        let context = SourceContext(
            transport: transport, notice: { run.report(.notice($0)) }, state: state, seen: seen)

        try await withThrowingTaskGroup(of: Bool.self) { group in
            // The producer's task answers false and the workers true, so the bound counts only workers.
            group.addTask { [source] in
                do {
                    try await source.run(context) { output in
                        // A run stopped by its failure budget asks the source for nothing more.
                        if run.stopReason != nil { throw StopRequested() }
                        do {
                            let spent = creditsInHand.count.withLock { inHand in
                                guard inHand > 0 else { return false }
                                inHand -= 1
                                return true
                            }
                            if !spent {
                                try await credits.acquire(creditsAtOnce)
                                creditsInHand.count.withLock { $0 = creditsAtOnce - 1 }
                            }
                        } catch {
                            // The consumer stopped taking outputs: the budget, or the run's end.
                            throw run.stopReason != nil ? StopRequested() : error
                        }
                        continuation.yield(output)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
                return false
            }

            let jobs = run.jobs
            func addWorkerIfWanted() {
                guard jobs.addWorkerIfWanted() else { return }
                group.addTask {
                    while let job = await jobs.take() {
                        if let control = options.control {
                            await control.perform(job.item.id, asset: job.asset) { await self.download(job, run) }
                        } else {
                            await self.download(job, run)
                        }
                    }
                    return true
                }
            }
            var sourceFailure: (any Error)?
            do {
                outputs: for try await output in outputs {
                    credits.release()
                    try Task.checkCancellation()
                    switch output {
                    case .skipped(let ref, let reason):
                        run.report(.skipped(ref, reason: reason))
                    case .failed(let ref, let url, let reason):
                        run.report(.failed(ref, url: url, reason: reason))
                    case .item(let item):
                        if run.stopReason != nil { break outputs }
                        for job in try await plan(item, run) {
                            while jobs.isFull {
                                addWorkerIfWanted()
                                await jobs.waitUntil(atMost: jobs.capacity / 2)
                            }
                            // The wait may have ended because the run was cancelled or went over its failure
                            // budget: queue nothing new then.
                            try Task.checkCancellation()
                            if overBudget(run) { break outputs }
                            jobs.put(job)
                            addWorkerIfWanted()
                        }
                    }
                }
            } catch is StopRequested {
                // The failure budget ended the source on purpose; that is not the source failing.
            } catch {
                sourceFailure = error
            }
            // The workers take what waits (a download of a stopped or cancelled run ends before it starts), then end.
            jobs.finish()
            while jobs.waiting > 0 {
                addWorkerIfWanted()
                await jobs.waitUntil(atMost: 0)
            }
            // A source waiting for a credit must not wait for a consumer that has left the loop.
            credits.close()
            // Started downloads finish (or see the cancellation) before the run reports.
            while try await group.next() != nil {}
            if let sourceFailure { throw sourceFailure }
            try Task.checkCancellation()
        }
    }

    /// The source's credits taken and not yet spent (see ``feedWorkers(_:seen:)``); only the source's task uses it.
    private final class CreditsInHand: Sendable {
        let count = Mutex(0)
    }

    /// Downloads a shared run's worker has claimed and started at once, storing and waiting ones included: eight
    /// per transfer slot, and at most 112 beyond the slots (more would claim items other machines could fetch).
    ///
    /// Durable stores wait for a group flush (a `syncfs`, then a folder's `fsync`), and when every task counted
    /// against twice the slots the waiting stores filled every place while slots stood idle. With stores
    /// outside ``RunState/underWay`` and room for eight tasks a slot, 2,000 files with the defaults at
    /// concurrency 16 took 1.73 s against 1.87 s (median of 7, alternating), for 1.5 MiB more. Without `sync`
    /// it makes no difference.
    static func taskLimit(concurrency: Int) -> Int {
        min(concurrency * 8, concurrency + 112)
    }

    /// How many stores of the run in progress may wait at once beside its transfers, within a run's download
    /// tasks (for a batch or queue run, also within its source's and its planning); nil elsewhere. For a batch or
    /// queue run, the workers it may start beyond its transfer slots: 31 a slot, 496 at most, and no more than a
    /// third of the open files the process may have (`RLIMIT_NOFILE`); for a worker of a shared run, the downloads
    /// it claims beyond them: 7 a slot, 112 at most.
    ///
    /// A sink whose stores wait for each other (a flush, an upload, shared by a group) can size its groups by it:
    /// a group that waits for more stores than can wait is never full, and it holds every store until they stop
    /// coming while the transfers stand still.
    @TaskLocal public static var storesAtOnce: Int?

    /// The workers of a batch or queue run at most (``JobQueue/workerLimit``): 32 per transfer slot, and at most 496
    /// beyond the slots. The queue starts them only as stores park them, so a run whose stores are quick keeps about a
    /// worker a slot; durable stores each wait for two group flushes, and the more of them wait, the fewer flushes a
    /// run makes. At 20,000 x 10 KB with the durable default, up to 496 waiting stores and a flush that waited for 256
    /// of them (now 248, ``storesAtOnce`` halved) made 251 `syncfs` where 112 and 64 made 544, and the run took 0.93x
    /// the time (8 pairs, alternating) for 8-9 MiB more. A waiting store holds up to two file descriptors (its unnamed
    /// file, and its folder), so the workers beyond the slots also stay within a third of `openFiles` (the process's
    /// soft limit, `RLIMIT_NOFILE`, which the `mediafetch` tool raises towards the hard limit, to 8,192 at most): under
    /// the usual 1,024, that is 341 of them.
    static func workerLimit(concurrency: Int, openFiles: Int = openFileLimit()) -> Int {
        concurrency + max(0, min(concurrency * 31, 496, openFiles / 3))
    }

    /// The process's soft limit of open files, `Int.max` when it has none.
    static func openFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else {
            return .max
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// Whether the failures so far reached the download section's `max-failures`; the first time, the run
    /// stops starting items and says why.
    func overBudget(_ run: RunState) -> Bool {
        let limit = options.policy.maxFailures
        let failed = run.tally.withLock { $0.failed }
        guard limit > 0, failed >= limit else { return false }
        run.stop(
            "\(failed) failures reached the download section's max-failures (\(limit)); no further items were started")
        return true
    }

    /// One planned download. A class, not a struct: a job is handed from the planner through the queue to a worker
    /// and into each step of its download, and as a struct it was copied about 28 times an item, each copy retaining
    /// its strings (callgrind, 2,000 small files: 55,952 copies, 223,808 string retains).
    final class Job: Sendable {
        let item: MediaItem
        let asset: AssetKind
        let url: URL
        let plan: StoragePlan
        let key: LedgerKey
        let entry: LedgerEntry?

        init(item: MediaItem, asset: AssetKind, url: URL, plan: StoragePlan, key: LedgerKey, entry: LedgerEntry?) {
            self.item = item
            self.asset = asset
            self.url = url
            self.plan = plan
            self.key = key
            self.entry = entry
        }
    }

    /// Asks the sink where each asset goes, in source order (also for stored ones, so that names do
    /// not depend on what is already there), and drops what an earlier run stored and the sink kept. What an
    /// earlier run left is looked up in the ledger item by item (a re-run streams through it).
    private func plan(_ item: MediaItem, _ run: RunState) async throws -> [Job] {
        var jobs: [Job] = []
        let missing = sink.assets.filter { sink.url(for: $0, of: item) == nil }
        // An item none of whose wanted files exists is skipped, and so is one without the preview most runs
        // want; a missing artwork beside a preview is no news.
        if !missing.isEmpty, missing.contains(.preview) || missing.count == sink.assets.count {
            run.report(.skipped(item.ref, reason: "no " + missing.map(\.rawValue).joined(separator: " or ") + " URL"))
        }
        for asset in sink.assets {
            guard let url = sink.url(for: asset, of: item) else { continue }
            let key = LedgerKey(source: options.sourceName, itemID: item.id, asset: asset)
            let plan: StoragePlan
            do {
                plan = try await PathReserver.$planning.withValue(key) { try await sink.plan(item, asset: asset) }
            } catch {
                run.report(.failed(item.ref, url: url, reason: String(describing: error)))
                continue
            }
            let entry = options.refetch ? nil : try ledgerEntry(key)
            // A sink that cannot tell whether it still has the file gets it fetched again.
            if let record = entry?.storedRecord, (try? await sink.keep(plan, stored: record)) == true {
                run.report(.alreadyStored(item.ref, asset: asset, location: record.location))
                continue
            }
            jobs.append(Job(item: item, asset: asset, url: url, plan: plan, key: key, entry: entry))
        }
        return jobs
    }

    func download(_ job: Job, _ run: RunState) async {
        let ref = job.item.ref
        let stagingPath = Self.stagingPath(
            inFolder: run.stagingFolder, source: options.sourceName, itemID: job.item.id, asset: job.asset)
        let ledger = options.ledger
        let policy = options.policy
        if let entry = job.entry, entry.status == .verified, !Task.isCancelled,
            await run.parking({ await storeKept(job, entry, path: stagingPath, run) })
        {
            return
        }
        // Stopped before its turn came (a slot freed by the stop itself may still reach it): nothing was
        // started, so nothing is paused either. Failures may also have used up the budget meanwhile.
        guard (try? await run.underWay.acquire()) != nil else { return }
        var underWay = true
        defer { if underWay { run.underWay.release() } }
        guard (try? await run.transfers.acquire()) != nil else { return }
        if Task.isCancelled || overBudget(run) {
            run.transfers.release()
            return
        }
        var holdsSlot = true
        var (resumeFrom, validator) = resumePoint(job, path: stagingPath, run)
        var expected = job.entry?.expectedBytes
        ledger?.begin(job.key, title: job.item.title, url: job.url)
        run.report(.itemStarted(ref, asset: job.asset, url: job.url, resumeFrom: resumeFrom))

        let started = ContinuousClock.now
        var attempt = 0
        var transferred: Int64 = 0
        // A small file for a sink that takes it in memory skips the staging folder; only one that starts at byte
        // zero (kept bytes are on disk), and only for a sink that never needs the file kept until a commit.
        let inMemoryLimit = sink.commitsEachStore ? sink.inMemoryStagingLimit : 0
        while true {
            let answer = AnswerBox()
            let share = inMemoryLimit > 0 && resumeFrom == 0
                ? MemoryShare(of: run.stagingMemory, limit: inMemoryLimit) : nil
            // Given back when the attempt ends: stored (the bytes were uploaded), failed or paused.
            defer { share?.giveBack() }
            do {
                if !underWay {
                    try await run.underWay.acquire(ahead: true)
                    underWay = true
                }
                if !holdsSlot {
                    // A retry goes before downloads that have not started, so that what was started ends first.
                    try await run.transfers.acquire(ahead: true)
                    holdsSlot = true
                }
                let fetched: Result<Fetched, any Error>
                do {
                    fetched = .success(
                        try await fetch(
                            job, stagingPath: stagingPath, resumeFrom: resumeFrom, validator: validator,
                            expected: expected, answer: answer, share: share,
                            digest: policy.computesDigests || sink.needsDigests, run))
                } catch {
                    fetched = .failure(error)
                }
                // The bytes are in (or the attempt ended): checking, storing and retry delays need no slot.
                run.transfers.release()
                holdsSlot = false
                let result = try fetched.get()
                guard policy.accepts(contentType: result.contentType, for: job.asset) else {
                    try? FileManager.default.removeItem(atPath: stagingPath)
                    throw PipelineError(
                        "served as \(result.contentType ?? "?"), which is not "
                            + IndefiniteArticle.before(job.asset.rawValue)
                            + " (the download section's \(job.asset.rawValue)-types lists what is accepted)")
                }
                let size = try result.size ?? Self.fileSize(atPath: stagingPath)
                let staged = StagedFile(
                    path: stagingPath, size: size, sha256: result.sha256, sourceURL: result.url,
                    contents: result.contents)
                // A store (waiting on the disk, when durable) lets the next download get under way.
                run.underWay.release()
                underWay = false
                let location = try await run.parking {
                    try await store(job, staged, keptAt: stagingPath, verifiedBefore: false, run)
                }
                run.transferred(transferred + result.transferred)
                run.report(.stored(ref, asset: job.asset, location: location, bytes: size))
                return
            } catch {
                // A body kept in memory is in the file now (or gone): its memory is not held through a retry's wait.
                share?.giveBack()
                var kept = (try? Self.fileSize(atPath: stagingPath)) ?? 0
                let response = answer.value
                if let response {
                    // Bytes this attempt brought before it failed (what a success brings is counted above).
                    transferred += max(0, kept - (response.restarts || response.status == 200 ? 0 : resumeFrom))
                }
                if let away = error as? LedgerAway {
                    // The ledger stayed away: the download is kept for later, and the worker stops taking work.
                    run.stop(away.message)
                    pause(job, kept: kept, transferred: transferred, run)
                    return
                }
                if error is ClaimLost {
                    run.report(.notice("\(ref): another worker took it over (this worker's lease ran out); left to it"))
                    return
                }
                let transportError = error as? TransportError
                let cancelled = error is CancellationError || (transportError?.code == .cancelled && Task.isCancelled)
                if Task.isCancelled || cancelled {
                    // Paused: the bytes stay for the next run to resume from.
                    pause(job, kept: kept, transferred: transferred, run)
                    return
                }
                attempt += 1
                let decision = RetryDecision(
                    error: error, response: response, keptBytes: kept, attempt: attempt,
                    elapsed: ContinuousClock.now - started, policy: policy)
                switch decision.kept {
                case .unchanged: break
                case .resume(let offset, let answered, let size):
                    (resumeFrom, validator, expected) = (offset, answered, size)
                case .discard:
                    (resumeFrom, validator, kept) = (0, nil, 0)
                    try? FileManager.default.removeItem(atPath: stagingPath)
                }
                if decision.next != .giveUp, overBudget(run) {
                    // The run's failures reached its budget while this attempt ran: paused, not tried again.
                    pause(job, kept: kept, transferred: transferred, run)
                    return
                }
                if case .retry(let wait) = decision.next {
                    ledger?.retrying(job.key)
                    run.report(
                        .retrying(
                            ref, asset: job.asset, attempt: attempt, after: wait, reason: String(describing: error)))
                    // Paused rather than tried again once the run's failures reach its budget: the next run goes on
                    // with it.
                    guard (try? await run.parking({ try await Task.sleep(for: wait) })) != nil, !overBudget(run) else {
                        pause(job, kept: kept, transferred: transferred, run)
                        return
                    }
                    continue
                }
                let reason = String(describing: error) + (attempt > 1 ? " (after \(attempt) attempts)" : "")
                ledger?.failed(job.key, reason: reason, receivedBytes: kept)
                run.transferred(transferred)
                run.report(.failed(ref, url: job.url, reason: reason))
                return
            }
        }
    }

    /// Hands a checked file to the sink and records it: stored at once when the sink commits each store; else
    /// verified first (unless an earlier run recorded that already), and stored after the sink's finish(), the
    /// file left at `keptAt` until then.
    /// - Returns: what the sink answered.
    private func store(
        _ job: Job, _ staged: StagedFile, keptAt path: String, verifiedBefore: Bool, _ run: RunState
    ) async throws -> String {
        let ledger = options.ledger
        if !sink.commitsEachStore && !verifiedBefore {
            ledger?.verified(job.key, size: staged.size, sha256: staged.sha256)
        }
        if let shared = options.shared {
            // The store happens under the claim: a worker whose lease ran out leaves the item to its new claimant.
            let retry = LedgerRetry(ledger: shared, patience: options.sharedPatience, run: run)
            guard try await retry({ try shared.confirmClaim(job.key) }) else { throw ClaimLost() }
            // A claimant before this one may have stored it and died before recording it: recorded, not stored again.
            let expected = StoredRecord(location: job.plan.relativePath, size: staged.size, sha256: staged.sha256)
            if (try? await sink.keep(job.plan, stored: expected)) == true {
                ledger?.stored(job.key, expected, plannedPath: job.plan.relativePath)
                return expected.location
            }
        }
        let location = try await sink.store(staged, as: job.plan)
        let record = StoredRecord(location: location, size: staged.size, sha256: staged.sha256)
        if sink.commitsEachStore {
            ledger?.stored(job.key, record, plannedPath: job.plan.relativePath)
        } else {
            run.deferStored(job.key, record, plannedPath: job.plan.relativePath, keptAt: path)
        }
        return location
    }

    /// Stores the file an earlier run downloaded, checked and kept for a sink that did not commit it (see the
    /// type's doc), without a request: when it is still there with the size, and the SHA-256 when one was
    /// recorded, that the ledger says, for the same URL. A file that no longer matches is deleted.
    /// - Returns: false when the item must be fetched as usual.
    private func storeKept(_ job: Job, _ entry: LedgerEntry, path: String, _ run: RunState) async -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        let size = Int64(info.st_size)
        var sha256 = entry.sha256
        var matches = entry.url == job.url.absoluteString && size == entry.receivedBytes
        if matches && (sha256 != nil || options.policy.computesDigests || sink.needsDigests) {
            // Read again: the bytes go into the sink under this digest, and a file changed since must not.
            let digest = try? FileFollower.digest(of: URL(fileURLWithPath: path, isDirectory: false))
            matches = digest != nil && (sha256 == nil || digest == sha256)
            sha256 = digest
        }
        guard matches else {
            _ = unlink(path)
            return false
        }
        let ref = job.item.ref
        run.report(.itemStarted(ref, asset: job.asset, url: job.url, resumeFrom: size))
        // The modification time is when its last byte arrived; the URL after redirects was not recorded.
        let finished = Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec))
        let staged = StagedFile(path: path, size: size, sha256: sha256, sourceURL: job.url, downloadedAt: finished)
        do {
            let location = try await store(job, staged, keptAt: path, verifiedBefore: true, run)
            run.report(.stored(ref, asset: job.asset, location: location, bytes: size))
        } catch {
            if Task.isCancelled { return true }
            let reason = String(describing: error)
            options.ledger?.failed(job.key, reason: reason, receivedBytes: size)
            run.report(.failed(ref, url: job.url, reason: reason))
        }
        return true
    }

    /// Deletes the files kept for the sink once it has committed them: `paths`, this run's, and those of items
    /// the ledger records as stored, which a run killed between its commit and this clean-up left (looked for
    /// only when the staging folder holds files at all).
    private func removeKeptFiles(_ paths: [String]) {
        for path in paths { _ = unlink(path) }
        let left = Self.partialFiles(in: options.stagingDirectory)
        guard !left.isEmpty, let ledger = options.ledger else { return }
        // What is left is few files; the stored entries may be a million, so they are walked, not held.
        var byName = Dictionary(left.map { ($0.lastPathComponent, $0.path) }, uniquingKeysWith: { first, _ in first })
        try? ledger.forEachEntry(source: options.sourceName, status: .stored) { entry in
            let name = Self.stagingName(source: entry.key.source, itemID: entry.key.itemID, asset: entry.key.asset)
            if let path = byName.removeValue(forKey: name) { _ = unlink(path) }
        }
    }

    /// The run stopped while `job` was under way: its bytes stay for the next run to resume from.
    private func pause(_ job: Job, kept: Int64, transferred: Int64, _ run: RunState) {
        options.ledger?.paused(job.key, receivedBytes: kept)
        run.transferred(transferred)
        run.tally.withLock {
            $0.paused += 1
            $0.pausedBytes += kept
        }
    }

    /// What one attempt brought.
    private struct Fetched {
        var url: URL
        var contentType: String?
        var transferred: Int64
        /// The whole file's SHA-256, when asked for.
        var sha256: String?
        /// The staging file's size, when this attempt looked (it does after a transfer).
        var size: Int64?
        /// The body, when the transport kept it in memory (no staging file was written).
        var contents: Data?
    }

    /// One attempt at the bytes of `job` into `staging`, from `resumeFrom`.
    /// One attempt, with the file hashed as it arrives when `digest` is asked for.
    private func fetch(
        _ job: Job, stagingPath: String, resumeFrom: Int64, validator: Validator?, expected: Int64?, answer: AnswerBox,
        share: MemoryShare?, digest: Bool, _ run: RunState
    ) async throws -> Fetched {
        guard digest else {
            return try await transfer(
                job, stagingPath: stagingPath, resumeFrom: resumeFrom, validator: validator, expected: expected,
                answer: answer, share: share, written: nil, run)
        }
        let (written, feed) = AsyncStream.makeStream(of: Int64.self, bufferingPolicy: .bufferingNewest(1))
        return try await withThrowingTaskGroup(of: String.self) { group in
            let staging = URL(fileURLWithPath: stagingPath, isDirectory: false)
            group.addTask { try await FileFollower.digest(of: staging, following: written) }
            do {
                var fetched = try await transfer(
                    job, stagingPath: stagingPath, resumeFrom: resumeFrom, validator: validator, expected: expected,
                    answer: answer, share: share, written: feed, run)
                if let contents = fetched.contents {
                    // No file to follow: the follower goes, and the bytes in memory are hashed in one pass.
                    group.cancelAll()
                    feed.finish()
                    fetched.sha256 = SHA256.hex(of: contents)
                    return fetched
                }
                feed.finish()
                fetched.sha256 = try await group.next()
                return fetched
            } catch {
                feed.finish()
                group.cancelAll()
                throw error
            }
        }
    }

    private func transfer(
        _ job: Job, stagingPath: String, resumeFrom: Int64, validator: Validator?, expected: Int64?, answer: AnswerBox,
        share: MemoryShare?, written: AsyncStream<Int64>.Continuation?, _ run: RunState
    ) async throws -> Fetched {
        if let expected, resumeFrom == expected, validator != nil {
            // Killed after the last byte and before the store: nothing left to fetch.
            return Fetched(url: job.url, contentType: nil, transferred: 0)
        }
        let ledger = options.ledger
        let ref = job.item.ref
        let throttle = ProgressThrottle(interval: options.progressInterval)
        var request = DownloadRequest(
            url: job.url, destinationPath: stagingPath, resumeFrom: resumeFrom, validator: validator,
            maxBytes: options.policy.maxSize,
            onResponse: { head in
                answer.set(head)
                ledger?.responded(job.key, validator: head.validator, expectedBytes: head.expectedSize)
            })
        if let share { request.keepInMemory = { share.grant($0) } }
        do {
            let result = try await transport.download(request) { progress in
                // A body kept in memory has no file for the follower (the transport was told so before any byte).
                if let written, share?.granted != true { written.yield(progress.received) }
                if throttle.shouldReport() {
                    run.report(.progress(ref, asset: job.asset, progress))
                }
            }
            if let contents = result.contents {
                // Only a body this run made room for, of the length announced: anything else is a transport's bug.
                guard share?.granted == true else {
                    throw TransportError(
                        .other, url: job.url, detail: "the transport kept the body in memory without being allowed to")
                }
                let announced = answer.value?.expectedSize ?? result.fileSize
                guard Int64(contents.count) == result.fileSize, result.fileSize == announced else {
                    throw TransportError(
                        .truncated(expected: announced, received: Int64(contents.count)), url: job.url,
                        detail: "the body kept in memory is not what the transport reported")
                }
                return Fetched(
                    url: result.url, contentType: result.headers["Content-Type"], transferred: result.bytesWritten,
                    size: result.fileSize, contents: contents)
            }
            let onDisk = try Self.fileSize(atPath: stagingPath)
            guard onDisk == result.fileSize else {
                throw TransportError(
                    .truncated(expected: result.fileSize, received: onDisk), url: job.url,
                    detail: "the staging file does not hold what the transport reported")
            }
            return Fetched(
                url: result.url, contentType: result.headers["Content-Type"],
                transferred: result.bytesWritten, size: onDisk)
        } catch let error as TransportError where error.status == 416 && resumeFrom > 0 {
            // A range past the end: complete when the server's size is what we hold.
            guard error.headers?["Content-Range"].flatMap(ContentRange.unsatisfiedLength) == resumeFrom else {
                try? FileManager.default.removeItem(atPath: stagingPath)
                throw error
            }
            return Fetched(url: job.url, contentType: nil, transferred: 0)
        }
    }

    /// Where a download can go on from (``ResumePoint``); kept bytes it cannot go on from are removed.
    private func resumePoint(_ job: Job, path: String, _ run: RunState) -> (Int64, Validator?) {
        // Nothing to resume without an entry, and no file to remove when the staging folders held none as the run
        // began: an item the ledger does not know was not fetched before in this run (ids are not repeated, and a
        // queue, which can bring an item again, is not such a run). The `stat` of a file that is not there was a
        // few percent of a many-small-files run.
        if job.entry == nil && run.stagingWasEmpty.load(ordering: .relaxed) { return (0, nil) }
        let size = (try? Self.fileSize(atPath: path)) ?? 0
        let point = ResumePoint.decide(kept: size, entry: job.entry, url: job.url, refetch: options.refetch)
        if size > 0 && point.offset == 0 { _ = unlink(path) }
        return (point.offset, point.validator)
    }
}
