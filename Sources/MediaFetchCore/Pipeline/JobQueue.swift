import Synchronization

/// The planned downloads of a run on their way to its workers: the feeder puts them in, and a worker takes the
/// next when it is done with its last (see ``Pipeline`` `feedWorkers`).
///
/// A task an item, most of them waiting for a transfer slot, cost more than four task switches an item (its
/// start, its wait for a slot, the transport's answer, the feeder woken for the next). A worker that finds a job
/// waiting takes it without a switch, and with about a worker a slot few wait for one.
///
/// The feeder waits when ``capacity`` jobs wait, until half of them are taken (see ``waitUntil(atMost:)``). It starts
/// a worker more (up to ``workerLimit``) when jobs wait, no worker is free to take one, and fewer than
/// ``activeTarget`` workers are active, that is not parked (storing, or waiting out a retry delay): a run whose
/// stores are quick keeps about a worker a transfer slot, so that few wait for one, and one whose stores wait on
/// the disk grows to the limit, the waiting stores holding workers and not slots. A worker that parks wakes a
/// waiting feeder when a worker more is wanted.
final class JobQueue<Job: Sendable>: Sendable {
    private struct State {
        /// The waiting jobs.
        var jobs = FIFOQueue<Job>()
        /// Workers waiting for a job, first come first served.
        var idle: [CheckedContinuation<Job?, Never>] = []
        /// The feeder, waiting until at most `feederWaitsFor` jobs wait (or a worker more is wanted).
        var feeder: CheckedContinuation<Void, Never>?
        var feederWaitsFor = 0
        var finished = false
        var workers = 0
        var parked = 0

        var waiting: Int { jobs.count }

        func wantsWorker(limit: Int, activeTarget: Int) -> Bool {
            waiting > 0 && idle.isEmpty && workers < limit && workers - parked < activeTarget
        }

        /// The oldest waiting job, and the feeder to wake when taking it left few enough waiting.
        mutating func take() -> (job: Job, feeder: CheckedContinuation<Void, Never>?)? {
            guard let job = jobs.popFirst() else { return nil }
            guard waiting <= feederWaitsFor, let woken = feeder else { return (job, nil) }
            feeder = nil
            return (job, woken)
        }
    }

    private let state = Mutex(State())
    /// Jobs that may wait before the feeder waits too.
    let capacity: Int
    /// Workers at most.
    let workerLimit: Int
    /// Active workers wanted: the transfer slots, and two for the moments between one job and the next.
    let activeTarget: Int

    init(capacity: Int, workerLimit: Int, activeTarget: Int) {
        self.capacity = max(2, capacity)
        self.workerLimit = max(1, workerLimit)
        self.activeTarget = max(1, activeTarget)
    }

    /// Hands `job` to a waiting worker, or queues it. It never waits: the feeder calls ``waitUntil(atMost:)`` after.
    func put(_ job: Job) {
        let worker: CheckedContinuation<Job?, Never>? = state.withLock { state in
            if !state.idle.isEmpty { return state.idle.removeFirst() }
            state.jobs.append(job)
            return nil
        }
        worker?.resume(returning: job)
    }

    /// Counts a worker more when one is wanted (see the type's summary); the caller then starts it.
    func addWorkerIfWanted() -> Bool {
        state.withLock { state in
            guard state.wantsWorker(limit: workerLimit, activeTarget: activeTarget) else { return false }
            state.workers += 1
            return true
        }
    }

    /// A worker parks: it holds no transfer slot for a while.
    func park() {
        let feeder: CheckedContinuation<Void, Never>? = state.withLock { state in
            state.parked += 1
            guard state.wantsWorker(limit: workerLimit, activeTarget: activeTarget) else { return nil }
            defer { state.feeder = nil }
            return state.feeder
        }
        feeder?.resume()
    }

    /// A parked worker is active again.
    func unpark() {
        state.withLock { $0.parked -= 1 }
    }

    /// Whether ``capacity`` jobs wait.
    var isFull: Bool {
        state.withLock { $0.waiting >= capacity }
    }

    /// Jobs waiting for a worker.
    var waiting: Int {
        state.withLock { $0.waiting }
    }

    /// Returns when at most `count` jobs wait, or when a worker more is wanted (at once if either is so already).
    /// The feeder waits with half of ``capacity`` while the source goes on, and with 0 after the last job, still
    /// adding the workers wanted: a worker parked in a store that waits for the stores behind it must not wait for
    /// ever.
    func waitUntil(atMost count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.waiting <= count || state.wantsWorker(limit: workerLimit, activeTarget: activeTarget) {
                    return true
                }
                state.feeder = continuation
                state.feederWaitsFor = count
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// The oldest waiting job, waiting for one if none waits; nil once the queue is finished and empty.
    func take() async -> Job? {
        let (taken, done) = state.withLock { state in (state.take(), state.finished) }
        if let taken {
            taken.feeder?.resume()
            return taken.job
        }
        if done { return nil }
        return await withCheckedContinuation { (continuation: CheckedContinuation<Job?, Never>) in
            // Between the two locks the feeder may have put a job (and begun to wait) or finished: look again
            // before waiting.
            let (job, feeder, waits): (Job?, CheckedContinuation<Void, Never>?, Bool) = state.withLock { state in
                if let taken = state.take() { return (taken.job, taken.feeder, false) }
                if state.finished { return (nil, nil, false) }
                state.idle.append(continuation)
                return (nil, nil, true)
            }
            feeder?.resume()
            if !waits { continuation.resume(returning: job) }
        }
    }

    /// Workers waiting for a job, the feeder waiting for room, and the workers counted (for tests).
    var waiters: (workers: Int, feeder: Bool, started: Int) {
        state.withLock { ($0.idle.count, $0.feeder != nil, $0.workers) }
    }

    /// No job comes after this: workers take what waits, then get nil.
    func finish() {
        let idle = state.withLock { state in
            state.finished = true
            defer { state.idle = [] }
            return state.idle
        }
        // Idle workers exist only when no job waits.
        for worker in idle { worker.resume(returning: nil) }
    }
}
