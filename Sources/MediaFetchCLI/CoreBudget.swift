import CLinux
import Foundation
import MediaFetchCore
import Synchronization

/// When a run keeps to one CPU (``CoreBudget``), decided window by window from the CPU time the process used and the
/// items that ended.
///
/// A run that uses less than one CPU gains nothing from the others, and spread over them it wakes its threads on
/// every core, taking turns from whatever else runs there. When that is the server, on the same machine, a server
/// whose threads share one interpreter lock loses most: Python's `http.server` served 20,000 files of 10 KB to a
/// run spread over both cores of a two-core machine in 8.5-9.4 s, and in 6.7-7.4 s to the same run kept to one core
/// (the server's own CPU time fell from 8.2-8.9 s to 6.4-7.1 s). So a run that used under ``confineBelow`` CPUs in a
/// window tries one CPU, keeps it while it finishes items as fast as before (at least ``keepAtLeast`` of the rate
/// spread) and needs no more than ``spreadAbove`` CPUs, and spreads again otherwise. A trial that did worse is not
/// tried again for ``retryAfter`` seconds, twice that after the next, up to ``longestWait``.
struct CorePolicy {
    /// What to do after a window.
    enum Decision: Equatable {
        case stay
        case confine
        case spread
    }

    /// A window is judged once it lasted this long and this many items ended in it.
    var windowSeconds = 0.5
    var windowItems = 64
    /// A run spread over the CPUs tries one when it used fewer than this many in a window.
    var confineBelow = 0.75
    /// A run kept to one CPU spreads again when it used more than this much of it in a window: it needs more.
    var spreadAbove = 0.9
    /// A run kept to one CPU spreads again when it finishes items slower than this share of the rate it had spread.
    var keepAtLeast = 0.95
    /// Seconds after a failed trial before the next, doubling each time up to ``longestWait``.
    var retryAfter = 5.0
    var longestWait = 80.0

    /// Whether the run is kept to one CPU.
    private(set) var confined = false
    private var window = (seconds: 0.0, cpuSeconds: 0.0, items: 0)
    /// Items a second in the last window spread over the CPUs.
    private var spreadRate = 0.0
    /// Kept to one CPU, and no window judged since.
    private var onTrial = false
    /// The first window after a change is skipped: the threads were moving.
    private var settling = false
    private var waitLeft = 0.0
    private var wait: Double

    init() {
        wait = retryAfter
    }

    /// Counts `seconds` of wall time in which the process used `cpuSeconds` and `items` ended.
    mutating func record(seconds: Double, cpuSeconds: Double, items: Int) -> Decision {
        waitLeft = max(0, waitLeft - seconds)
        if settling {
            settling = false
            return .stay
        }
        window.seconds += seconds
        window.cpuSeconds += cpuSeconds
        window.items += items
        guard window.seconds >= windowSeconds, window.items >= windowItems else { return .stay }
        let usage = window.cpuSeconds / window.seconds
        let rate = Double(window.items) / window.seconds
        window = (0, 0, 0)
        if !confined {
            spreadRate = rate
            guard usage < confineBelow, waitLeft == 0 else { return .stay }
            confined = true
            onTrial = true
            settling = true
            return .confine
        }
        let trial = onTrial
        onTrial = false
        guard usage > spreadAbove || rate < spreadRate * keepAtLeast else {
            if trial { wait = retryAfter }
            return .stay
        }
        confined = false
        settling = true
        waitLeft = wait
        if trial { wait = min(longestWait, wait * 2) }
        return .spread
    }
}

/// Keeps a run's threads on one CPU while that serves it as well as all of them (``CorePolicy``); Linux only, and
/// only within the CPUs the process was given (`taskset`, a container's share). For the command line's `run`, never
/// for a library: it moves every thread of the process.
final class CoreBudget: Sendable {
    private struct State {
        var stopped = false
        var items = 0
    }

    /// The CPUs the process was started with (MF_CPU_MASK_WORDS words).
    private let allowed: [UInt]
    private let state = Mutex(State())
    /// Seconds between two looks.
    private static let tick = 0.25

    /// Starts watching the process, unless it was given one CPU only.
    init?() {
        var mask = [UInt](repeating: 0, count: Int(MF_CPU_MASK_WORDS))
        guard mask.withUnsafeMutableBufferPointer({ mf_get_affinity(0, $0.baseAddress) }) == 0,
            mask.reduce(0, { $0 + $1.nonzeroBitCount }) > 1
        else { return nil }
        allowed = mask
        let thread = Thread { [self] in watch() }
        thread.name = "mediafetch.cores"
        thread.start()
    }

    /// Counts the items that end (stored, failed, skipped or found stored).
    func note(_ event: PipelineEvent) {
        switch event {
        case .stored, .failed, .skipped, .alreadyStored: state.withLock { $0.items += 1 }
        default: break
        }
    }

    /// Ends the watch; the process gets every CPU it was given back.
    func stop() {
        state.withLock { $0.stopped = true }
    }

    private func watch() {
        var policy = CorePolicy()
        var confinedTo: [UInt]?
        var last = (clock: ContinuousClock.now, cpu: Self.processCPUSeconds())
        while true {
            Thread.sleep(forTimeInterval: Self.tick)
            let (stopped, items) = state.withLock { state in
                defer { state.items = 0 }
                return (state.stopped, state.items)
            }
            if stopped { break }
            let now = (clock: ContinuousClock.now, cpu: Self.processCPUSeconds())
            let elapsed = now.clock - last.clock
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let decision = policy.record(seconds: seconds, cpuSeconds: now.cpu - last.cpu, items: items)
            last = now
            switch decision {
            case .confine:
                let mask = oneCPU()
                confinedTo = mask
                Self.apply(mask)
            case .spread:
                confinedTo = nil
                Self.apply(allowed)
            case .stay:
                // Threads started since (their parent's CPUs are theirs) or missed while they started.
                if let confinedTo { Self.apply(confinedTo) }
            }
        }
        if confinedTo != nil { Self.apply(allowed) }
    }

    /// The CPU this thread runs on, if the process may use it, else the first it may.
    private func oneCPU() -> [UInt] {
        let bits = UInt.bitWidth
        let here = Int(sched_getcpu())
        let allows = { (cpu: Int) in
            cpu >= 0 && cpu / bits < self.allowed.count && self.allowed[cpu / bits] & (1 << UInt(cpu % bits)) != 0
        }
        let cpu = allows(here) ? here : (0..<(allowed.count * bits)).first(where: allows) ?? 0
        var mask = [UInt](repeating: 0, count: allowed.count)
        mask[cpu / bits] = 1 << UInt(cpu % bits)
        return mask
    }

    /// Sets the CPUs of every thread of the process (a thread that ended meanwhile is passed over).
    static func apply(_ mask: [UInt]) {
        guard let tasks = try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task") else { return }
        for task in tasks {
            guard let id = Int32(task) else { continue }
            _ = mask.withUnsafeBufferPointer { mf_set_affinity(id, $0.baseAddress) }
        }
    }

    /// User and system CPU time of the whole process so far.
    static func processCPUSeconds() -> Double {
        var usage = rusage()
        guard getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage) == 0 else { return 0 }
        let seconds = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec
        return Double(seconds) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
