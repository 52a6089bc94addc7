import Foundation
import MediaFetchTesting
import Testing

@testable import MediaFetchCLI

/// A run that needs less than one CPU keeps to one while that serves it as well (``CorePolicy``, ``CoreBudget``).
struct CoreBudgetTests {
    /// Feeds `policy` windows of half a second with `usage` CPUs and `rate` items a second; the decisions.
    static func windows(
        _ policy: inout CorePolicy, _ count: Int, usage: Double, rate: Double
    ) -> [CorePolicy.Decision] {
        (0..<count).map { _ in policy.record(seconds: 0.5, cpuSeconds: usage * 0.5, items: Int(rate * 0.5)) }
    }

    @Test func aRunThatNeedsLessThanOneCPUKeepsToOneWhileItIsAsFastThere() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        // The look the threads move in is not counted; the next window is as fast: it stays on one CPU.
        #expect(Self.windows(&policy, 5, usage: 0.7, rate: 2_000) == [.stay, .stay, .stay, .stay, .stay])
        #expect(policy.confined)
        // Faster on one CPU (the server on the machine has a core of its own): it stays too. 95% of the rate is
        // enough; less, twice in a row, is not (once may be noise).
        #expect(Self.windows(&policy, 2, usage: 0.7, rate: 2_600) == [.stay, .stay])
        #expect(Self.windows(&policy, 1, usage: 0.7, rate: 1_902) == [.stay])
        #expect(Self.windows(&policy, 1, usage: 0.7, rate: 1_898) == [.stay])
        #expect(Self.windows(&policy, 1, usage: 0.7, rate: 1_902) == [.stay])
        #expect(Self.windows(&policy, 2, usage: 0.7, rate: 1_898) == [.stay, .spread])
    }

    @Test func aRunThatNeedsMoreThanOneCPUNeverKeepsToOne() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 20, usage: 1.4, rate: 12_000).allSatisfy { $0 == .stay })
        #expect(!policy.confined)
        // The line is strict: exactly 0.75 stays spread.
        #expect(Self.windows(&policy, 3, usage: 0.75, rate: 12_000).allSatisfy { $0 == .stay })
    }

    @Test func aRunKeptToOneCPUSpreadsWhenItNeedsMore() {
        var policy = CorePolicy()
        _ = Self.windows(&policy, 3, usage: 0.5, rate: 1_000)
        #expect(policy.confined)
        // The work grew (bigger bodies, a faster server): a whole CPU is not enough.
        #expect(Self.windows(&policy, 1, usage: 0.95, rate: 1_500) == [.spread])
        #expect(!policy.confined)
    }

    @Test func spreadingAgainWaitsLongerEachTimeInARow() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        // Slower on one CPU (another program holds it), two windows in a row: back to all of them.
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_000) == [.stay, .stay, .spread])
        // Not tried again for 5 s: nine windows of half a second, then the tenth.
        #expect(Self.windows(&policy, 9, usage: 0.6, rate: 2_000).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        // Slower again: now 10 s.
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_000) == [.stay, .stay, .spread])
        #expect(Self.windows(&policy, 19, usage: 0.6, rate: 2_000).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        // As fast now, for a minute on one CPU: it spreads for one window to measure the rate again, and comes back
        // at once; the waits start over at 5 s.
        #expect(Self.windows(&policy, 2, usage: 0.6, rate: 2_000) == [.stay, .stay])
        #expect(Self.windows(&policy, 118, usage: 0.6, rate: 2_000).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.spread])
        #expect(Self.windows(&policy, 2, usage: 0.6, rate: 2_000) == [.stay, .confine])
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_000) == [.stay, .stay, .spread])
        #expect(Self.windows(&policy, 9, usage: 0.6, rate: 2_000).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
    }

    /// Squeezed on its one CPU (another program holds it), a run stores few files and uses little CPU: the windows
    /// of 5 s it then makes are held to the spread rate all the same.
    @Test func aRunSlowedDownOnItsOneCPUSpreads() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        for _ in 0..<40 { #expect(policy.record(seconds: 0.25, cpuSeconds: 0.005, items: 2) == .stay) }
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.005, items: 2) == .spread)
    }

    /// The rate a run on one CPU is held to can be stale: the first window of a run is often its slowest, or the
    /// fastest, and a server can slow down for everyone. The window after spreading again (a second long) says whether
    /// spreading helped; when it did not, the run goes back to one CPU at once, and the try is not counted.
    @Test func aRunNoFasterSpreadGoesBackToOneCPUAtOnce() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        // The run slowed down on its one CPU, to below 95% of the rate it had spread...
        #expect(Self.windows(&policy, 3, usage: 0.5, rate: 1_800) == [.stay, .stay, .spread])
        // ...and spread it is no faster (1,800 is over 95% of 1,800): one CPU again, without waiting.
        #expect(Self.windows(&policy, 3, usage: 0.5, rate: 1_800) == [.stay, .stay, .confine])
        // Held to that rate now. Slower on one CPU again, and this time faster spread: it stays spread, and waits
        // 5 s as after a first failed try (not 10 s: the try before did not count).
        #expect(Self.windows(&policy, 3, usage: 0.5, rate: 1_000) == [.stay, .stay, .spread])
        #expect(Self.windows(&policy, 9, usage: 0.5, rate: 1_800).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.5, rate: 1_800) == [.confine])
    }

    /// The rate on one CPU is that of the slow windows together, and it must reach 95% of the window spread.
    @Test func theRateComparedIsTheSlowWindowsAnd95PercentOfTheSpreadOne() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_712) == [.stay, .stay, .spread])
        // 1,712 is 95.1% of 1,800: back at once.
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_800) == [.stay, .stay, .confine])
        // 1,708 is 94.9% of it: it waits its 5 s.
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_708) == [.stay, .stay, .spread])
        #expect(Self.windows(&policy, 9, usage: 0.6, rate: 1_800).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 1_800) == [.confine])
        // Slow windows of 1,500 and 1,700: 1,600 on one CPU, under 95% of 1,760 (the last alone, 1,700, is over).
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 1_800) == [.stay])
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 1_500) == [.stay])
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 1_700) == [.spread])
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_760).allSatisfy { $0 == .stay })
        #expect(!policy.confined)
    }

    /// A run that used most of its one CPU spreads; when that came after a while on one CPU, the window after says
    /// whether it needed the others. Soon after moving, it is the run's own need: it waits, and does not go to and fro.
    @Test func aRunThatNeededTheWholeCPUAfterAWhileMayGoBack() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        #expect(Self.windows(&policy, 11, usage: 0.7, rate: 2_000).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.95, rate: 2_400) == [.spread])
        // Spread, it stores no more files and needs less than 0.75 of a CPU: the high usage was a moment's.
        #expect(Self.windows(&policy, 3, usage: 0.7, rate: 2_300) == [.stay, .stay, .confine])
        // The whole CPU again at once: it spreads and waits 5 s, however the window after goes.
        #expect(Self.windows(&policy, 2, usage: 0.95, rate: 2_400) == [.stay, .spread])
        #expect(Self.windows(&policy, 9, usage: 0.7, rate: 2_300).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.7, rate: 2_300) == [.confine])
    }

    /// Only the first window after spreading again is compared with the rate on one CPU: when it had too few files for
    /// a rate (large files came), or a pause started it again, a later window is not held to a rate of long ago.
    @Test func onlyTheFirstWindowSpreadIsComparedWithTheRateOnOneCPU() {
        var policy = CorePolicy()
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_000) == [.stay, .stay, .spread])
        #expect(Self.windows(&policy, 9, usage: 0.6, rate: 2_000).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 2_000) == [.confine])
        // Its second spread in a row: a wait of 10 s.
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_800) == [.stay, .stay, .spread])
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.05, items: 5) == .stay)
        // Five seconds, ten files: no rate.
        #expect(policy.record(seconds: 5, cpuSeconds: 1.5, items: 10) == .stay)
        // As fast as on one CPU before, but that was a while ago: the wait runs out first.
        #expect(Self.windows(&policy, 9, usage: 0.6, rate: 1_800).allSatisfy { $0 == .stay })
        #expect(Self.windows(&policy, 1, usage: 0.6, rate: 1_800) == [.confine])
        // Slower again (a third time: 20 s), and a pause before the window spread: not compared either.
        #expect(Self.windows(&policy, 3, usage: 0.6, rate: 1_700) == [.stay, .stay, .spread])
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.05, items: 5) == .stay)
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.01, items: 0) == .stay)
        #expect(Self.windows(&policy, 4, usage: 0.6, rate: 1_700).allSatisfy { $0 == .stay })
        #expect(!policy.confined)
    }

    /// A pause while spread (the source's next page) starts the window again, so that the rate a trial is held to is
    /// a working run's.
    @Test func aPauseWhileSpreadStartsTheWindowAgain() {
        var policy = CorePolicy()
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.1, items: 100) == .stay)
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.01, items: 0) == .stay)
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.1, items: 100) == .stay)
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.1, items: 100) == .confine)
    }

    @Test func windowsStartWithTheFirstFileAndLargeFilesStaySpread() {
        var policy = CorePolicy()
        // Opening the ledger, reading the first page: no window yet.
        for _ in 0..<8 { #expect(policy.record(seconds: 0.25, cpuSeconds: 0.01, items: 0) == .stay) }
        // Looks of a quarter second add up to a window of half a second.
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.1, items: 100) == .stay)
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.1, items: 100) == .confine)
        // Large files: few stored in a window. After 5 s it is judged on CPU time alone; this one needed more.
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.2, items: 1) == .stay)
        for _ in 0..<19 { #expect(policy.record(seconds: 0.25, cpuSeconds: 0.24, items: 1) == .stay) }
        #expect(policy.record(seconds: 0.25, cpuSeconds: 0.24, items: 1) == .spread)
        // Spread, with no rate to hold a trial to, it stays spread however little CPU it uses.
        for _ in 0..<200 { #expect(policy.record(seconds: 0.25, cpuSeconds: 0.02, items: 1) == .stay) }
        #expect(!policy.confined)
    }

    /// The whole process moves: a `mediafetch run` served slowly (a small share of one CPU) ends up with every thread
    /// on one CPU. Needs a machine with two CPUs or more.
    @Test(.enabled(if: ProcessInfo.processInfo.activeProcessorCount > 1, "one CPU: nothing to keep to"))
    func aSlowRunHasEveryThreadOnOneCPU() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        // 200 answers a second: long enough to be watched, far under one CPU's work.
        server.setFaultHook { _ in .delay(seconds: 0.02) }
        try Self.serveList(of: 4_000, on: server, in: scratch)
        try Data(
            """
            source: {use: urls, file: list.txt}
            transport: {use: curl, concurrency: 4}
            sink: {use: directory, path: out, sync: false}
            """.utf8
        ).write(to: scratch.appendingPathComponent("slow.yaml"))
        let child = try CommandRunner.start(["run", "slow.yaml", "--quiet"], in: scratch)
        let tasks = "/proc/\(child.process.processIdentifier)/task"
        // Every thread's CPUs, as the kernel lists them ("0-1", "1").
        let allowed = { () -> Set<String> in
            let ids = (try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []
            return Set(
                ids.compactMap { id in
                    (try? String(contentsOfFile: "\(tasks)/\(id)/status", encoding: .utf8))?
                        .split(separator: "\n").first { $0.hasPrefix("Cpus_allowed_list:") }?
                        .split(separator: "\t").last.map(String.init)
                })
        }
        // Polled every 20 ms (each look reads every thread's status); the lists that were on one CPU are kept. The
        // child must have started on more than one, or there was nothing to move.
        var during = allowed()
        let startedSpread = !during.isEmpty && !Self.oneCPU(during)
        let deadline = ContinuousClock.now + .seconds(20)
        while !Self.oneCPU(during), child.process.isRunning, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            during = allowed()
        }
        let running = child.process.isRunning
        child.process.terminate()
        _ = try await child.wait()
        #expect(startedSpread, "the run started on one CPU: \(during)")
        #expect(running, "the run ended before its threads were kept to one CPU")
        #expect(Self.oneCPU(during), "the threads' CPUs: \(during)")
    }

    /// Serves `count` files of 100 bytes at `/files/N.bin` and lists their URLs in `list.txt` in `scratch`.
    static func serveList(of count: Int, on server: MockCatalogServer, in scratch: URL) throws {
        let lines = (0..<count).map { index in
            server.addFile(path: "/files/\(index).bin", size: 100, seed: UInt64(index))
            return server.url(path: "/files/\(index).bin").absoluteString
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: scratch.appendingPathComponent("list.txt"))
    }

    /// Whether the threads' CPU lists are one, naming one CPU alone ("1", not "0-1" or "0,2").
    static func oneCPU(_ lists: Set<String>) -> Bool {
        lists.count == 1 && lists.first.map { !$0.contains("-") && !$0.contains(",") } == true
    }

    @Test func coresTakesAutoOrAll() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        try Self.serveList(of: 3, on: server, in: scratch)
        for (mode, folder) in [("auto", "a"), ("all", "b")] {
            try Data(
                """
                source: {use: urls, file: list.txt}
                sink: {use: directory, path: \(folder), sync: false}
                state: \(folder).state
                """.utf8
            ).write(to: scratch.appendingPathComponent("\(folder).yaml"))
            let outcome = try await CommandRunner.run(["run", "\(folder).yaml", "--cores", mode], in: scratch)
            #expect(outcome.status == 0, "--cores \(mode): \(outcome.stderr)")
            #expect(outcome.stdout.contains("3 stored, 0 failed"), "--cores \(mode): \(outcome.stdout)")
        }
        let refused = try await CommandRunner.run(["run", "a.yaml", "--cores", "some"], in: scratch)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("--cores takes auto or all, not `some`"))
    }
}
