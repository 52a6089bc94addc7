import Foundation
import Synchronization

/// A store was about to happen after this worker's claim went to another (its lease ran out).
struct ClaimLost: Error {}

/// The shared ledger stayed unreachable longer than the worker waits: it pauses.
struct LedgerAway: Error {
    var message: String
}

extension Pipeline {
    /// How one worker of a shared run behaves, beside the usual options.
    public struct SharedOptions: Sendable {
        /// How long the worker retries an unreachable ledger (with backoff) before it pauses.
        public var patience: Duration
        /// How often the worker looks for work when there was none to claim.
        public var pollInterval: Duration

        public init(patience: Duration = .seconds(60), pollInterval: Duration = .milliseconds(50)) {
            self.patience = patience
            self.pollInterval = pollInterval
        }
    }

    /// Runs as one worker of the shared run `ledger` holds: joins it, plans it when no one else does (the source's
    /// items and their planned names, in source order), and claims and fetches assets until every planned one is
    /// stored or failed, or the task is cancelled (then claims go back at once and the summary says interrupted).
    /// - Precondition: the sink commits each store (an archive cannot be shared by several machines).
    public func runShared(_ ledger: any SharedRunLedger, shared: SharedOptions = SharedOptions()) async -> RunSummary {
        let clock = ContinuousClock()
        let start = clock.now
        var configured = self
        configured.options.ledger = ledger
        configured.options.shared = ledger
        configured.options.sharedPatience = shared.patience
        let pipeline = configured
        let run = RunState(
            ledger: ledger, events: events, transfers: options.concurrency, stagingFolder: options.stagingDirectory.path)
        let retry = LedgerRetry(ledger: ledger, patience: shared.patience, run: run)
        var away: String?
        do {
            try Self.prepareStaging(options.stagingDirectory)
            try await retry { try ledger.join() }
            let ticker = Task { await run.tickLedger() }
            defer { ticker.cancel() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await pipeline.planWhenNeeded(ledger, run, retry, shared) }
                group.addTask { await pipeline.heartbeats(ledger, run) }
                do {
                    try await pipeline.claimAndFetch(ledger, run, retry, shared)
                } catch {
                    group.cancelAll()
                    throw error
                }
                // The planner ends on its own once the round is planned; the heartbeat needs telling.
                group.cancelAll()
                while let next = await group.nextResult() {
                    if case .failure(let error) = next, !(error is CancellationError) { throw error }
                }
            }
        } catch is CancellationError {
            run.tally.withLock { $0.interrupted = true }
        } catch let error as LedgerAway {
            away = error.message
        } catch let error as SourceError {
            run.tally.withLock { $0.sourceError = error.message }
        } catch {
            run.tally.withLock { $0.sourceError = String(describing: error) }
        }
        if Task.isCancelled { run.tally.withLock { $0.interrupted = true } }
        ledger.abandonPlanning()
        // Claims not stored go back at once (also the ones a pause already gave back), so others need not wait out
        // the lease.
        run.flushLedger(force: true)
        try? ledger.releaseClaims()
        let (stored, bytes) = run.tally.withLock { ($0.stored, $0.bytesTransferred) }
        try? ledger.heartbeat(stored: stored, bytes: bytes)
        let interrupted = run.tally.withLock { $0.interrupted }
        try? ledger.leave(state: away != nil ? "paused" : interrupted ? "interrupted" : "done")
        do {
            try await sink.finish()
        } catch {
            run.tally.withLock { $0.sinkError = String(describing: error) }
        }
        await transport.shutdown()
        run.flushLedger(force: true)
        var summary = run.tally.withLock { $0 }
        if let away { summary.stopReason = away }
        summary.wallSeconds = (clock.now - start).seconds
        events(.finished(summary))
        return summary
    }

    /// Plans the round when it is not planned and no one else plans it; waits while another worker does, and takes
    /// over when that one's lock goes (it died).
    private func planWhenNeeded(
        _ ledger: any SharedRunLedger, _ run: RunState, _ retry: LedgerRetry, _ shared: SharedOptions
    ) async throws {
        while true {
            try Task.checkCancellation()
            if try await retry({ try ledger.isPlanned() }) { return }
            if try await retry({ try ledger.tryToPlan() }) {
                run.planningHere.withLock { $0 = true }
                defer { run.planningHere.withLock { $0 = false } }
                do {
                    let sourceError = try await plan(into: ledger, run)
                    try await retry { try ledger.finishPlanning(sourceError: sourceError) }
                } catch {
                    ledger.abandonPlanning()
                    throw error
                }
                return
            }
            try await Task.sleep(for: .seconds(1))
        }
    }

    /// Runs the source from its first item and writes each asset with its planned name, in batches, in source order.
    /// - Returns: the source's failure, if it failed (what it yielded before is planned).
    private func plan(into ledger: any SharedRunLedger, _ run: RunState) async throws -> String? {
        // A takeover plans from the first item again: names come out the same as the first planner's.
        try ledger.resetRunKeys()
        try sink.pathReserver?.keep(in: ledger)
        let context = SourceContext(
            transport: transport, notice: { run.report(.notice($0)) },
            state: SourceState(ledger: ledger, source: options.sourceName, readsStoredValues: !options.refetch),
            seen: SeenIDs(ledger: ledger))
        let batch = Mutex<[PlannedAsset]>([])
        let sequence = Mutex<Int64>(0)
        let sent = Mutex(0)
        let sink = self.sink
        let sourceName = options.sourceName
        // What an earlier round stored is looked up a batch at a time (one query, not one an item); what the sink
        // still holds is reported already stored and left out, the rest is (again) to be fetched.
        @Sendable func send() async throws {
            let assets = batch.withLock { pending in
                defer { pending.removeAll() }
                return pending
            }
            guard !assets.isEmpty else { return }
            let stored = try await LedgerRetry.offThePool { try ledger.storedEntries(assets.map(\.key)) }
            var planned: [PlannedAsset] = []
            for var asset in assets {
                if let entry = stored[asset.key], let record = entry.storedRecord {
                    if (try? await sink.keep(asset.plan, stored: record)) == true {
                        run.report(.alreadyStored(asset.item.ref, asset: asset.key.asset, location: record.location))
                        continue
                    }
                    asset.entry = entry
                }
                planned.append(asset)
            }
            let toPlan = planned
            try await LedgerRetry.offThePool { try ledger.addPlanned(toPlan) }
            sent.withLock { $0 += assets.count }
        }
        do {
            try await source.run(context) { output in
                try Task.checkCancellation()
                switch output {
                case .skipped(let ref, let reason): run.report(.skipped(ref, reason: reason))
                case .failed(let ref, let url, let reason): run.report(.failed(ref, url: url, reason: reason))
                case .item(let item):
                    for asset in sink.assets {
                        guard let url = sink.url(for: asset, of: item) else { continue }
                        let key = LedgerKey(source: sourceName, itemID: item.id, asset: asset)
                        let plan: StoragePlan
                        do {
                            // As in a run of one: the item's own stored file keeps its name for it.
                            plan = try await PathReserver.$planning.withValue(key) {
                                try await sink.plan(item, asset: asset)
                            }
                        } catch {
                            run.report(.failed(item.ref, url: url, reason: String(describing: error)))
                            continue
                        }
                        let place = sequence.withLock { next in
                            defer { next += 1 }
                            return next
                        }
                        let planned = PlannedAsset(key: key, item: item, plan: plan, url: url, sequence: place)
                        let count = batch.withLock { $0.append(planned); return $0.count }
                        // The first few go at once, so that workers start while the source goes on.
                        if count >= (sent.withLock { $0 } == 0 ? 16 : 256) { try await send() }
                    }
                }
            }
        } catch let error as SourceError {
            try await send()
            return error.message
        }
        try await send()
        return nil
    }

    /// Renews this worker's leases every third of the lease until cancelled; a missed beat is tried at the next.
    private func heartbeats(_ ledger: any SharedRunLedger, _ run: RunState) async {
        let interval = ledger.lease / 3
        while (try? await Task.sleep(for: interval)) != nil {
            let (stored, bytes) = run.tally.withLock { ($0.stored, $0.bytesTransferred) }
            try? ledger.heartbeat(stored: stored, bytes: bytes)
        }
    }

    /// Claims batches and fetches them, bounded as a single run is, until the round is planned and nothing open
    /// is left that this worker could claim.
    private func claimAndFetch(
        _ ledger: any SharedRunLedger, _ run: RunState, _ retry: LedgerRetry, _ shared: SharedOptions
    ) async throws {
        let limit = Self.taskLimit(concurrency: options.concurrency)
        try await Self.$storesAtOnce.withValue(limit - options.concurrency) {
            try await claimAndFetch(ledger, run, retry, shared, limit: limit)
        }
    }

    private func claimAndFetch(
        _ ledger: any SharedRunLedger, _ run: RunState, _ retry: LedgerRetry, _ shared: SharedOptions, limit: Int
    ) async throws {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            var running = 0
            var polling = false
            // The last claim got less than it asked for: nothing more is open now, so the next claim waits for the
            // poll (or for this worker to run dry) instead of going with every download that finishes (at the end
            // of a run that was a round trip per download).
            var short = false
            var claimedEver = false
            defer { group.cancelAll() }
            while true {
                try Task.checkCancellation()
                if run.stopReason != nil || overBudget(run) { break }
                var claimedAny = false
                // Claims go in batches: a claim per finished download would cost a round trip each.
                let batch = min(64, max(1, limit / 4))
                // While this worker plans, a short claim says only that it has not written more yet: claim again
                // as downloads finish, as the planner writes.
                if (limit - running >= batch && (!short || run.planningHere.withLock { $0 })) || running == 0 {
                    let room = min(limit - running, 64)
                    let claimed = try await retry(offThePool: true) { try ledger.claim(limit: room) }
                    short = claimed.count < room
                    claimedEver = claimedEver || !claimed.isEmpty
                    for asset in claimed {
                        running += 1
                        let job = Job(
                            item: asset.item, asset: asset.key.asset, url: asset.url, plan: asset.plan, key: asset.key,
                            entry: asset.entry)
                        group.addTask {
                            await self.download(job, run)
                            return true
                        }
                    }
                    claimedAny = !claimed.isEmpty
                    if !claimedAny && running == 0 {
                        let progress = try await retry(offThePool: true) { try ledger.progress() }
                        if progress.planned && progress.open == 0 { break }
                    }
                }
                if claimedAny && limit - running >= batch { continue }
                if !polling {
                    polling = true
                    // Until the first claim the planner is writing its first items: look again soon, so the first
                    // downloads start within milliseconds of them.
                    let interval = claimedEver ? shared.pollInterval : min(shared.pollInterval, .milliseconds(5))
                    group.addTask {
                        try? await Task.sleep(for: interval)
                        return false
                    }
                }
                if let finished = try await group.next() {
                    if finished {
                        running -= 1
                    } else {
                        polling = false
                        short = false
                    }
                }
            }
            // Nothing running but the poll: it need not be waited out.
            if running == 0 { group.cancelAll() }
            while let finished = try await group.next() { if finished { running -= 1 } }
        }
    }
}

/// Retries a ledger call while its store is unreachable, with backoff from a quarter second to four seconds, for
/// at most the worker's patience; says so once, and throws ``LedgerAway`` when the patience runs out.
struct LedgerRetry: Sendable {
    let ledger: any SharedRunLedger
    let patience: Duration
    let run: RunState

    /// - Parameter offThePool: run `body` on a thread of the ledger calls' own, so that its round trip does not
    ///   hold one of the task pool's threads (one a core); for the calls a worker makes often (claims).
    func callAsFunction<T: Sendable>(
        offThePool: Bool = false, _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        let started = ContinuousClock.now
        var wait = Duration.milliseconds(250)
        var told = false
        while true {
            do {
                let value = offThePool ? try await Self.offThePool(body) : try body()
                if told { run.report(.notice("the ledger \(ledger.location) answers again; going on")) }
                return value
            } catch let error as LedgerError where error.isUnreachable {
                if ContinuousClock.now - started >= patience {
                    throw LedgerAway(
                        message: "the ledger \(ledger.location) did not answer for \(patience.seconds) s (\(error.message)); "
                            + "this worker paused, its downloads kept: run it again once the server is back")
                }
                if !told {
                    told = true
                    run.report(
                        .notice(
                            "the ledger \(ledger.location) does not answer (\(error.message)); trying again for up to "
                                + "\(Int(patience.seconds)) s"))
                }
                try await Task.sleep(for: wait)
                wait = min(wait * 2, .seconds(4))
            }
        }
    }

    /// The threads a shared run's ledger calls go on when they are kept off the task pool.
    private static let ledgerThreads = DispatchQueue(label: "mediafetch.shared-ledger", attributes: .concurrent)

    /// Runs `body`, a blocking ledger call, on ``ledgerThreads`` and waits for it without holding a thread.
    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            ledgerThreads.async { continuation.resume(with: Result { try body() }) }
        }
    }
}
