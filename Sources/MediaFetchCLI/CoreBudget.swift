import CLinux
import Foundation
import MediaFetchCore

/// When a run keeps to one CPU (``CoreBudget``), decided window by window from the CPU time the process used and the
/// files it stored.
///
/// A run that uses under ``confineBelow`` of one CPU gains nothing from the others, and spread over them it wakes its
/// threads on every core, taking turns from whatever else runs there. When that is the server, on the same machine, a
/// server whose threads share one interpreter lock loses most: Python's `http.server` served 20,000 files of 10 KB to
/// a run spread over both cores of a two-core machine in 8.84-9.41 s, and in 6.74-7.34 s to the same run kept to one
/// core; its own CPU time fell by a fifth (Benchmarks/README).
///
/// So a spread run that used under ``confineBelow`` CPUs in a window tries one CPU, and keeps it while it stores files
/// at least ``keepAtLeast`` as fast as it did spread (two slower windows in a row end that) and needs no more than
/// ``spreadAbove`` of that CPU. Otherwise it spreads again, and tries again after ``retryAfter`` seconds, twice as long
/// after each time in a row it had to spread, up to ``longestWait``.
///
/// The rate a run on one CPU is held to can be stale: a run's first window is often unlike the rest, and a server may
/// slow down for everyone. So the first window after spreading again lasts twice ``windowSeconds``, and when the run
/// stored files on one CPU (in its slow windows, or in the window it needed the whole CPU in) at least ``keepAtLeast``
/// as fast as in that window, spreading did not help: the wait is dropped and the try is not counted as one in a row,
/// so the run goes back to one CPU as soon as that window also used under ``confineBelow``. A run that needed the
/// whole CPU within ``retryAfter`` seconds of moving to it needs more than one: it is not compared, and waits.
///
/// Every ``measureAgain`` seconds on one CPU it spreads for one window, to measure the rate it compares with again (the
/// server or the network may have changed).
struct CorePolicy {
    /// What to do after a look.
    enum Decision: Equatable {
        case stay
        case confine
        case spread
    }

    /// A window is judged once it lasted ``windowSeconds`` and ``windowItems`` files were stored in it, or once it
    /// lasted ``longestWindow`` (large files, or a run slowed down): kept to one CPU, the run is then judged on that
    /// window as on any; spread, it stays spread, as a rate of so few files is no rate to hold a trial to (nor to compare
    /// a rate on one CPU with).
    let windowSeconds = 0.5
    let windowItems = 64
    let longestWindow = 5.0
    /// A spread run tries one CPU when it used less than this many in a window.
    let confineBelow = 0.75
    /// A run on one CPU spreads again when it used more than this much of it in a window: it needs more.
    let spreadAbove = 0.9
    /// A run on one CPU spreads again when it stores files slower than this share of the rate it had spread.
    let keepAtLeast = 0.95
    /// Seconds after spreading again before the next try, doubled for each spread in a row, up to ``longestWait``.
    let retryAfter = 5.0
    let longestWait = 80.0
    /// Seconds on one CPU after which the run spreads for one window to measure the rate to compare with again.
    let measureAgain = 60.0

    /// Whether the run is kept to one CPU.
    private(set) var confined = false
    /// Whether a file was stored yet: windows start with the first (not with the ledger's opening or the source's
    /// first page), so that the rate a trial is held to is a working run's.
    private var begun = false
    /// What the window being filled has seen so far.
    private var window = (seconds: 0.0, cpuSeconds: 0.0, items: 0)
    /// Files a second in the last window judged while spread.
    private var spreadRate = 0.0
    /// The first look after a change is not counted: the threads are moving.
    private var settling = false
    /// Seconds before a spread run may try one CPU again.
    private var waitLeft = 0.0
    /// Times in a row the run had to spread again (reset by a ``measureAgain`` period on one CPU; one less when the
    /// window after showed that spreading did not help).
    private var spreadsInARow = 0
    /// Windows in a row on one CPU slower than ``keepAtLeast`` of the spread rate (one alone may be noise), with the
    /// seconds and files they had together (windows differ in length, so the count is kept beside them).
    private var slow = (windows: 0, seconds: 0.0, items: 0)
    /// The rate on one CPU before the run spread again, which the first window spread after it is compared with; nil
    /// when there is nothing to compare (see ``CorePolicy``), and once that window is judged or a pause started it
    /// again.
    private var rateToBeat: Double?
    /// Seconds on one CPU since the last measure.
    private var confinedFor = 0.0

    /// Counts one look: `seconds` of wall time in which the process used `cpuSeconds` and stored `items` files.
    mutating func record(seconds: Double, cpuSeconds: Double, items: Int) -> Decision {
        waitLeft = max(0, waitLeft - seconds)
        if !begun {
            guard items > 0 else { return .stay }
            begun = true
        }
        if settling {
            settling = false
            return .stay
        }
        // A pause while spread (the source's next page, a slow answer) would lower the rate a trial is held to: the
        // window starts again after it.
        if !confined && items == 0 {
            window = (0, 0, 0)
            rateToBeat = nil
            return .stay
        }
        window.seconds += seconds
        window.cpuSeconds += cpuSeconds
        window.items += items
        let counted = window.items >= windowItems
        let shortest = !confined && rateToBeat != nil ? 2 * windowSeconds : windowSeconds
        guard window.seconds >= shortest, counted || window.seconds >= longestWindow else { return .stay }
        let usage = window.cpuSeconds / window.seconds
        let rate = Double(window.items) / window.seconds
        let (length, stored) = (window.seconds, window.items)
        window = (0, 0, 0)
        if !confined {
            // Only the first window after spreading again is compared with the rate on one CPU.
            let confinedRate = rateToBeat
            rateToBeat = nil
            // Too few files for a rate: nothing to hold a trial to, so a run of large files stays spread.
            guard counted else { return .stay }
            spreadRate = rate
            if let confinedRate, confinedRate >= rate * keepAtLeast {
                // Spread, the run is no faster than it was on one CPU: spreading did not help, and this try does not
                // count as one that had to spread.
                spreadsInARow = max(0, spreadsInARow - 1)
                waitLeft = 0
            }
            guard usage < confineBelow, waitLeft == 0 else { return .stay }
            confined = true
            settling = true
            confinedFor = 0
            slow = (0, 0, 0)
            return .confine
        }
        confinedFor += length
        if rate < spreadRate * keepAtLeast {
            slow = (slow.windows + 1, slow.seconds + length, slow.items + stored)
        } else {
            slow = (0, 0, 0)
        }
        if usage > spreadAbove || slow.windows >= 2 {
            // The next window spread shows whether spreading is what the run lacked. Needing the whole CPU soon after
            // moving to it is the run's own need: coming straight back would only make it spread again.
            if usage > spreadAbove {
                rateToBeat = confinedFor >= retryAfter ? rate : nil
            } else {
                rateToBeat = Double(slow.items) / slow.seconds
            }
            spreadsInARow += 1
            waitLeft = min(longestWait, retryAfter * Double(1 << min(spreadsInARow - 1, 16)))
            return spread()
        }
        if confinedFor >= measureAgain {
            // The next window spread measures the rate again; nothing holds the run back from one CPU after it.
            spreadsInARow = 0
            return spread()
        }
        return .stay
    }

    private mutating func spread() -> Decision {
        confined = false
        settling = true
        return .spread
    }
}

/// Keeps a run's threads on one CPU while that serves it as well as all of them (``CorePolicy``); Linux only, and
/// only within the CPUs the process was given (`taskset`, a cpuset). For the command line's `run`, never for a
/// library: it moves every thread of the process, and the processes they start inherit the one CPU.
///
/// `Sendable`: ``state`` is read and written under ``condition``'s lock only; the rest is immutable, and the policy
/// lives on the watcher's thread.
final class CoreBudget: Sendable {
    private struct State {
        /// The watcher's thread runs (a thread Foundation could not start never does).
        var started = false
        var stopped = false
        /// The watcher gave the CPUs back and ended.
        var ended = false
        /// Files stored since the last look.
        var items = 0
    }

    /// The CPUs the process was started with (MF_CPU_MASK_WORDS words).
    private let allowed: [UInt]
    private let condition = NSCondition()
    private nonisolated(unsafe) var state = State()
    /// Seconds between two looks.
    private static let tick = 0.25
    /// Looks after spreading again on which every thread is given the CPUs again (threads started while the process
    /// moved may have missed it).
    private static let lingeringLooks = 4

    /// Starts watching the process, unless it was given one CPU only or cannot move its threads (no `/proc`, or
    /// affinity refused, as in some sandboxes).
    init?() {
        var mask = [UInt](repeating: 0, count: Int(MF_CPU_MASK_WORDS))
        guard mask.withUnsafeMutableBufferPointer({ mf_get_affinity(0, $0.baseAddress) }) == 0,
            mask.reduce(0, { $0 + $1.nonzeroBitCount }) > 1,
            mask.withUnsafeBufferPointer({ mf_set_affinity(0, $0.baseAddress) }) == 0,
            Self.threads() != nil
        else { return nil }
        allowed = mask
        let thread = Thread { [self] in watch() }
        thread.name = "mediafetch.cores"
        thread.start()
    }

    /// Counts the files stored (other outcomes come in bursts that cost next to nothing: a rate of them says little).
    func note(_ event: PipelineEvent) {
        guard case .stored = event else { return }
        locked { $0.items += 1 }
    }

    /// Ends the watch, and returns once the watcher has given the threads the CPUs the process was given back (a
    /// thread started during that last pass by one still on the one CPU keeps it: the process ends soon after).
    func stop() {
        condition.lock()
        state.stopped = true
        condition.broadcast()
        while state.started && !state.ended { condition.wait() }
        condition.unlock()
    }

    private func locked<T>(_ body: (inout State) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    private func watch() {
        locked { $0.started = true }
        var policy = CorePolicy()
        var confinedTo: [UInt]?
        var lingering = 0
        var last = (clock: ContinuousClock.now, cpu: Self.processCPUSeconds())
        watching: while true {
            condition.lock()
            if !state.stopped { _ = condition.wait(until: Date(timeIntervalSinceNow: Self.tick)) }
            let (stopped, items) = (state.stopped, state.items)
            state.items = 0
            condition.unlock()
            if stopped { break watching }
            let now = (clock: ContinuousClock.now, cpu: Self.processCPUSeconds())
            let decision = policy.record(
                seconds: (now.clock - last.clock).seconds, cpuSeconds: now.cpu - last.cpu, items: items)
            last = now
            switch decision {
            case .confine:
                let mask = oneCPU()
                // The watcher moves itself first: if that is refused, nothing would move, and it stops watching.
                guard mask.withUnsafeBufferPointer({ mf_set_affinity(0, $0.baseAddress) }) == 0 else {
                    break watching
                }
                confinedTo = mask
                Self.apply(mask)
            case .spread:
                confinedTo = nil
                lingering = Self.lingeringLooks
                Self.apply(allowed)
            case .stay:
                // Threads started since, or while the process moved (a thread inherits its parent's CPUs).
                if let confinedTo {
                    Self.apply(confinedTo)
                } else if lingering > 0 {
                    lingering -= 1
                    Self.apply(allowed)
                }
            }
        }
        if confinedTo != nil || lingering > 0 { Self.apply(allowed) }
        locked { $0.ended = true }
        condition.broadcast()
    }

    /// The CPU this thread runs on, if the process may use it; else the last it may (the first, often CPU 0, takes
    /// most of the machine's interrupts).
    private func oneCPU() -> [UInt] {
        let bits = UInt.bitWidth
        let allows = { (cpu: Int) in
            cpu >= 0 && cpu / bits < self.allowed.count && self.allowed[cpu / bits] & (1 << UInt(cpu % bits)) != 0
        }
        let here = Int(sched_getcpu())
        let cpu = allows(here) ? here : (0..<(allowed.count * bits)).last(where: allows) ?? 0
        var mask = [UInt](repeating: 0, count: allowed.count)
        mask[cpu / bits] = 1 << UInt(cpu % bits)
        return mask
    }

    /// The ids of the process's threads, or nil without `/proc`.
    private static func threads() -> [Int32]? {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task"))?.compactMap { Int32($0) }
    }

    /// Sets the CPUs of every thread of the process (a thread that ended meanwhile is passed over).
    private static func apply(_ mask: [UInt]) {
        for id in threads() ?? [] {
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
