import CCurl
import Foundation
import MediaFetchCore
import Synchronization

/// Runs its share of a transport's transfers on one multi handle, driven by one dedicated thread.
///
/// Other threads never touch the multi handle: they leave commands in a locked inbox, and wake the thread
/// with `curl_multi_wakeup` when it is waiting in `curl_multi_poll`. The thread applies them between polls,
/// so libcurl is only ever called from it.
///
/// `@unchecked Sendable`: ``inbox`` is behind a `Mutex`; ``multi`` is only used by the engine thread apart
/// from `wakeup`, which is thread-safe and made under ``waking`` (as is the engine's replacing of its handle,
/// so that a wakeup never meets a freed one); ``running`` and ``connections`` are atomics; ``draining`` is the engine
/// thread's alone; the rest is immutable.
final class CurlEngine: @unchecked Sendable {
    private enum Command {
        /// A transfer to run once its server's ramp gives it a place.
        case add(CurlTransfer)
        /// A transfer that waited in its server's ramp and now has its place.
        case admit(CurlTransfer)
        case cancel(CurlTransfer)
        /// New connection limits; on standby, the engine closes its idle connections once its transfers end.
        case resize(connections: Int, perHost: Int, standby: Bool)
    }

    private struct Inbox {
        var commands: [Command] = []
        var stopping = false
        var stopped = false
        /// Whether the thread is in `curl_multi_poll`, or about to be, and nobody woke it yet: only then does a
        /// command need a wakeup. A busy engine finds new commands at the top of its loop, and sparing the wakeup
        /// spares a write to libcurl's socket pair and a round of the loop for every transfer.
        var polling = false
        var stopWaiters: [CheckedContinuation<Void, Never>] = []
        /// Why the engine stopped (its shutdown, or an error from libcurl): what a transfer handed in after that
        /// ends with.
        var stopReason: TransportError?
    }

    /// What a transfer ends with when the engine stops (for `reason`), or when it is handed to an engine that stopped:
    /// the reason, named after `transfer`'s URL.
    private static func refusal(_ reason: TransportError?, for transfer: CurlTransfer) -> TransportError {
        TransportError(
            reason?.code ?? .cancelled, url: transfer.easy.url, detail: reason?.detail ?? "the transport was shut down")
    }

    private let multi: CurlMulti
    private let inbox = Mutex(Inbox())
    /// Held for a wakeup and for replacing the multi handle: a lock of its own, so that a command's sender does not
    /// hold the inbox (which the engine takes twice a round) through the wakeup's system call.
    private let waking = Mutex(())
    private let running = Atomic(0)
    /// Transfers reserved for this engine since it began (for tests).
    let started = Atomic(0)
    /// Connections this engine may open: what its load is measured against.
    private let connections: Atomic<Int>

    /// The transport's ramps, shared by its engines: a transfer added waits in its server's line there until the
    /// server may take one more request.
    private let ramps: TransferRamps

    /// Failed transfers reading the rest of their answer (``CurlTransfer/drainingSince``), which the engine ends once
    /// ``CurlTransfer/drainTime`` has passed. Only the engine thread touches it: libcurl calls back there.
    private var draining: [CurlTransfer] = []

    init(
        maxConnections: Int, maxPerHost: Int, ramps: TransferRamps, name: String = "mediafetch.curl"
    ) throws(TransportError) {
        self.ramps = ramps
        multi = try CurlMulti(maxConnections: maxConnections, maxPerHost: maxPerHost)
        connections = Atomic(max(1, maxConnections))
        // The thread holds the engine until it ends, so the multi handle outlives every call libcurl makes.
        let thread = Thread { [self] in run() }
        thread.name = name
        thread.start()
    }

    /// Transfers reserved for this engine and not yet ended, as a share of its connections.
    var load: Double {
        Double(running.load(ordering: .relaxed)) / Double(connections.load(ordering: .relaxed))
    }

    /// Gives the engine new connection limits, from the next transfer it starts on. `standby` says that no
    /// transfer will come for a while: once those it runs have ended, it closes the connections it keeps.
    func resize(connections: Int, perHost: Int, standby: Bool) {
        self.connections.store(max(1, connections), ordering: .relaxed)
        send { $0.commands.append(.resize(connections: connections, perHost: perHost, standby: standby)) }
    }

    /// Counts a transfer that ``perform(_:)`` will run; the caller picks an engine and reserves it in one step.
    func reserve() {
        running.add(1, ordering: .relaxed)
        started.add(1, ordering: .relaxed)
    }

    /// Runs a transfer reserved with ``reserve()`` to its end. Cancelling the calling task removes this
    /// transfer only.
    func perform(_ transfer: CurlTransfer) async throws {
        defer { running.subtract(1, ordering: .relaxed) }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                transfer.continuation = continuation
                transfer.engine = self
                // A cancel that came first (onCancel runs first when the task was cancelled already) has marked the
                // transfer `cancelled`: the engine ends it when it gets this.
                if let refusal = hand(.add(transfer), transfer) {
                    transfer.continuation = nil
                    continuation.resume(throwing: refusal)
                }
            }
        } onCancel: {
            send { $0.commands.append(.cancel(transfer)) }
        }
    }

    /// Hands the engine a transfer its server's ramp gave a place (``RampWaiter/mayStart(with:)``), from whichever
    /// thread saw the answer that freed it.
    /// - Returns: nil when the engine took it; the error it ends with when the engine stopped (it is then the
    ///   caller's to end).
    func admit(_ transfer: CurlTransfer) -> TransportError? {
        hand(.admit(transfer), transfer)
    }

    /// Leaves `command` for `transfer` in the inbox: nil; or, when the engine stopped, the error the transfer ends with.
    private func hand(_ command: Command, _ transfer: CurlTransfer) -> TransportError? {
        let refused: TransportError?? = send { inbox in
            guard !inbox.stopping else { return .some(inbox.stopReason) }
            inbox.commands.append(command)
            return .none
        }
        guard case .some(let reason) = refused else { return nil }
        return Self.refusal(reason, for: transfer)
    }

    /// Changes the inbox under its lock (leaving commands), then wakes the thread if it waits in
    /// `curl_multi_poll`; a thread that is busy finds the commands at the top of its loop. Only the first sender
    /// after the thread began to wait wakes it: the others' commands are in the inbox it reads once awake. (Each
    /// sender used to wake it until it came back from the poll, each time a write to libcurl's socket pair, and a
    /// byte that sent a later poll straight back when the thread was awake already: on 20,000 small files about 2,900
    /// wakeups became 2,000, and 61,000 polls 53,000.)
    private func send<T: Sendable>(_ change: (inout Inbox) -> T) -> T {
        let (result, polling) = inbox.withLock { inbox in
            defer { inbox.polling = false }
            return (change(&inbox), inbox.polling)
        }
        if polling { wake() }
        return result
    }

    private func wake() {
        waking.withLock { _ in multi.wakeup() }
    }

    /// Asks the thread to end, failing what is still running; returns at once.
    func stop() {
        inbox.withLock { $0.stopping = true }
        wake()
    }

    /// Asks the thread to end and waits until it did.
    func shutdown() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = inbox.withLock { inbox in
                inbox.stopping = true
                if !inbox.stopped { inbox.stopWaiters.append(continuation) }
                return inbox.stopped
            }
            if done { continuation.resume() } else { wake() }
        }
    }

    // MARK: The engine thread

    /// Called by a failed transfer, on the engine thread, when it begins to drop the rest of its answer.
    func watchDraining(_ transfer: CurlTransfer) {
        draining.append(transfer)
    }

    /// Ends the draining transfers whose time is up (with their failure: libcurl closes their connections), forgets
    /// those that ended; returns the earliest time one of the others is up.
    private func endDrainsDue(in active: inout [UnsafeMutableRawPointer: CurlTransfer]) -> ContinuousClock.Instant? {
        let now = ContinuousClock.now
        var earliest: ContinuousClock.Instant?
        draining.removeAll { transfer in
            let handle = transfer.easy.handle
            guard active[handle] === transfer, let since = transfer.drainingSince else { return true }
            let due = since + CurlTransfer.drainTime
            guard due <= now else {
                earliest = min(earliest ?? due, due)
                return false
            }
            active[handle] = nil
            try? multi.remove(transfer.easy)
            transfer.complete(CURLE_ABORTED_BY_CALLBACK)
            return true
        }
        return earliest
    }

    /// How long a poll may wait: a second, or until the earliest paused transfer may go on (at least 1 ms).
    static func pollTimeout(until wake: ContinuousClock.Instant?) -> Int32 {
        guard let wake else { return 1000 }
        // Rounded up, so the poll does not wake just before its time and spin.
        let milliseconds = CurlTransport.milliseconds(wake - .now) + 1
        return Int32(clamping: max(1, min(1000, milliseconds)))
    }

    private func run() {
        // Running transfers by their easy handle: the key libcurl hands back when one finishes.
        var active: [UnsafeMutableRawPointer: CurlTransfer] = [:]
        // Whether any transfer added since the engine started pays into a rate limit: without one no transfer
        // ever pauses, and the two looks at every active transfer each round are spared.
        var mayPause = false
        // Whether the transport sends this engine nothing for now, and whether it closed its connections since.
        var standby = false
        var closed = false
        // This engine's transfers in their server's line, which their timeouts reach there too.
        var waiting: [ObjectIdentifier: CurlTransfer] = [:]
        var problem: TransportError?
        while problem == nil {
            let (commands, stopping) = inbox.withLock { inbox in
                defer { inbox.commands.removeAll(keepingCapacity: true) }
                return (inbox.commands, inbox.stopping)
            }
            for command in commands {
                switch command {
                case .add(let transfer):
                    // Cancelled before it was added (the cancel came first): it ends here.
                    if transfer.cancelled {
                        transfer.completeCancelled()
                        continue
                    }
                    transfer.origin = transfer.easy.originKey
                    switch ramps.enter(transfer, origin: transfer.origin) {
                    case .wait:
                        transfer.waitingSince = .now
                        waiting[ObjectIdentifier(transfer)] = transfer
                        continue
                    case .go(let ticket): transfer.ticket = ticket
                    }
                    if start(transfer, in: &active, mayPause: &mayPause) { closed = false }
                case .admit(let transfer):
                    waiting[ObjectIdentifier(transfer)] = nil
                    // Cancelled while it waited, after the ramp had given it its place; or out of time.
                    if let stop = transfer.cancelled
                        ? TransportError(.cancelled, url: transfer.easy.url) : Self.timeLeft(after: transfer)
                    {
                        transfer.complete(stopped: stop)
                        continue
                    }
                    if start(transfer, in: &active, mayPause: &mayPause) { closed = false }
                case .cancel(let transfer):
                    // A cancel that arrives after its transfer finished finds nothing, or another transfer.
                    guard active[transfer.easy.handle] === transfer else {
                        if ramps.withdraw(transfer, origin: transfer.origin) {
                            waiting[ObjectIdentifier(transfer)] = nil
                            transfer.completeCancelled()
                        } else {
                            // Not added yet, or its place is on the way as an `admit`: it ends when that comes.
                            transfer.cancelled = true
                        }
                        continue
                    }
                    active[transfer.easy.handle] = nil
                    try? multi.remove(transfer.easy)
                    transfer.completeCancelled()
                case .resize(let connections, let perHost, let resting):
                    do {
                        try multi.setLimits(connections: connections, perHost: perHost)
                    } catch {
                        problem = error
                    }
                    standby = resting
                    closed = false
                }
            }
            if stopping || problem != nil { break }
            // Transfers the rate limit paused go on when their time has come.
            if mayPause {
                let now = ContinuousClock.now
                for (handle, transfer) in active {
                    guard let until = transfer.pausedUntil, until <= now else { continue }
                    transfer.pausedUntil = nil
                    let code = transfer.easy.unpause()
                    if code != CURLE_OK {
                        // It cannot go on (a callback may have failed it already): it ends here with that error.
                        active[handle] = nil
                        try? multi.remove(transfer.easy)
                        transfer.complete(code)
                    }
                }
            }
            do {
                try multi.perform()
                for (handle, result) in multi.finished() {
                    guard let transfer = active.removeValue(forKey: handle) else { continue }
                    try? multi.remove(transfer.easy)
                    transfer.complete(result)
                }
                // Idle connections of an engine on standby would count against the limits that the engine taking
                // its transfers now has: closed once its last transfer ended.
                if standby && !closed && active.isEmpty {
                    try waking.withLock { _ throws(TransportError) in try multi.closeConnections() }
                    closed = true
                }
                // Transfers whose time ran out in line end there (one whose place is on its way ends when it comes).
                var lineDeadline: ContinuousClock.Instant?
                if !waiting.isEmpty {
                    let now = ContinuousClock.now
                    for (id, transfer) in waiting {
                        let deadline = (transfer.waitingSince ?? now) + transfer.timeout
                        if deadline > now {
                            lineDeadline = min(lineDeadline ?? deadline, deadline)
                        } else if ramps.withdraw(transfer, origin: transfer.origin) {
                            waiting[id] = nil
                            transfer.complete(stopped: Self.timedOutInLine(transfer))
                        }
                    }
                }
                // Pauses are set while libcurl runs the callbacks: the poll wakes for the earliest to end, or for the
                // first transfer in line to run out of time.
                var wake = mayPause ? active.values.lazy.compactMap(\.pausedUntil).min() : nil
                if let lineDeadline { wake = min(wake ?? lineDeadline, lineDeadline) }
                if !draining.isEmpty, let due = endDrainsDue(in: &active) { wake = min(wake ?? due, due) }
                // Declared under the inbox's lock, so that a command either is seen here or sends a wakeup.
                let idle = inbox.withLock { inbox in
                    guard inbox.commands.isEmpty, !inbox.stopping else { return false }
                    inbox.polling = true
                    return true
                }
                if idle {
                    defer { inbox.withLock { $0.polling = false } }
                    try multi.poll(milliseconds: Self.pollTimeout(until: wake))
                }
            } catch {
                problem = error
            }
        }
        let reason = problem ?? TransportError(.cancelled, url: nil, detail: "the transport was shut down")
        // From here on the inbox takes no transfer: those handed in now end with the reason.
        let late = inbox.withLock { inbox in
            inbox.stopping = true
            inbox.stopReason = reason
            defer { inbox.commands = [] }
            return inbox.commands
        }
        // This engine's transfers still in a ramp's line, and those handed in too late: none reached libcurl. Taken
        // out of the lines before the running transfers end, so that the places those give back go to other engines'
        // transfers, not to these.
        var unstarted = ramps.withdrawAll { ($0 as? CurlTransfer)?.engine === self }.compactMap { $0 as? CurlTransfer }
        for command in late {
            switch command {
            case .add(let transfer), .admit(let transfer): unstarted.append(transfer)
            case .cancel, .resize: break
            }
        }
        for transfer in active.values {
            try? multi.remove(transfer.easy)
            transfer.complete(stopped: Self.refusal(reason, for: transfer))
        }
        for transfer in unstarted { transfer.complete(stopped: Self.refusal(reason, for: transfer)) }
        // Each held its engine: kept, the two would keep each other.
        draining = []
        let waiters = inbox.withLock { inbox in
            inbox.stopped = true
            defer { inbox.stopWaiters = [] }
            return inbox.stopWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// The error a transfer that waited in its server's line ends with when its time ran out there; otherwise nil,
    /// and its easy handle is given the time it has left.
    private static func timeLeft(after transfer: CurlTransfer) -> TransportError? {
        guard let since = transfer.waitingSince else { return nil }
        let left = transfer.timeout - (ContinuousClock.now - since)
        guard left > .zero else { return timedOutInLine(transfer) }
        do {
            // At least a millisecond: 0 would be no timeout at all to libcurl.
            try transfer.easy.set(CURLOPT_TIMEOUT_MS, max(1, CurlTransport.milliseconds(left)), "CURLOPT_TIMEOUT_MS")
            return nil
        } catch {
            return error
        }
    }

    private static func timedOutInLine(_ transfer: CurlTransfer) -> TransportError {
        TransportError(
            .timedOut, url: transfer.easy.url,
            detail: "waited \(transfer.timeout) for the server to answer earlier requests"
                + " (at most \(TransferRamps.limit) wait for a server's first answer)")
    }

    /// Hands `transfer` to libcurl, or ends it with the error that refused it; true when libcurl has it.
    private func start(
        _ transfer: CurlTransfer, in active: inout [UnsafeMutableRawPointer: CurlTransfer], mayPause: inout Bool
    ) -> Bool {
        do {
            try multi.add(transfer.easy)
            active[transfer.easy.handle] = transfer
            if transfer.mayPause { mayPause = true }
            return true
        } catch {
            transfer.complete(stopped: error)
            return false
        }
    }
}
