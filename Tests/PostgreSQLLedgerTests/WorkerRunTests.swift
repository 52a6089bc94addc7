import Foundation
import MediaFetchCore
import MediaFetchTesting
import PostgreSQLLedger
import Synchronization
import Testing

/// The built `mediafetch` as several workers of one run through a real PostgreSQL: every item stored once, under
/// the names one worker gives them, whatever happens to the workers.
@Suite("Workers share one run", .serialized)
struct WorkerRunTests {
    /// The mock catalog (each preview answered after a short delay, so that a run lasts long enough to kill a worker
    /// in the middle) and a folder for configs, collections and state.
    struct Setup {
        let server: MockCatalogServer
        let folder: URL
        let uri: String

        init(database: PostgreSQLServer, previewDelay: Double = 0.15, gate: PreviewGate? = nil) throws {
            server = try MockCatalogServer()
            server.setFaultHook { request in
                guard request.path.hasPrefix("/itunes-assets/") else { return nil }
                gate?.pass()
                return .delay(seconds: previewDelay)
            }
            folder = FileManager.default.temporaryDirectory.appendingPathComponent("workers-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            uri = database.uri
        }

        func close() {
            server.stop()
            try? FileManager.default.removeItem(at: folder)
        }

        /// A config for run `name` storing into `collection`, with the shared ledger; returns its path.
        func config(name: String, collection: String, items: Int = 60) throws -> String {
            let text = """
                name: \(name)
                ledger: \(uri)
                source:
                  use: itunes
                  term: love
                  max-items: \(items)
                  requests-per-minute: 0
                  endpoint: \(server.baseURL.absoluteString)
                transport:
                  use: curl
                  concurrency: 2
                sink:
                  use: directory
                  path: \(collection)
                state: state-\(name)
                """
            let url = folder.appendingPathComponent("\(name).yaml")
            try Data(text.utf8).write(to: url)
            return url.path
        }

        /// Every file under `collection`, by relative path, with its bytes.
        func files(_ collection: String) throws -> [String: Data] {
            let root = folder.appendingPathComponent(collection).path
            var result: [String: Data] = [:]
            guard let walker = FileManager.default.enumerator(atPath: root) else { return result }
            while let relative = walker.nextObject() as? String {
                var info = stat()
                guard lstat(root + "/" + relative, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                    !(relative as NSString).lastPathComponent.hasPrefix(".")
                else { continue }
                result[relative] = try Data(contentsOf: URL(fileURLWithPath: root + "/" + relative))
            }
            return result
        }
    }

    static func summary(_ outcome: WorkerChild.Outcome) -> RunSummary? {
        try? JSONDecoder().decode(WorkerReport.self, from: Data(outcome.stdout.utf8)).summary
    }

    struct WorkerReport: Decodable {
        var summary: RunSummary
    }

    struct StatusReport: Decodable {
        struct Worker: Decodable {
            var worker: String
            var state: String
            var claimed: Int
            var stored: Int
        }

        var run: String
        var totals: [String: Int]
        var workers: [Worker]
    }

    @Test func threeWorkersOneKilledStoreEveryItemOnceUnderTheNamesOfOne() async throws {
        try await PostgreSQLServer.with { database in
            let gate = PreviewGate()
            let setup = try Setup(database: database, gate: gate)
            defer { setup.close() }
            let solo = try await WorkerChild.run(
                ["run", try setup.config(name: "solo", collection: "solo"), "--quiet", "--json", "--worker", "solo"],
                in: setup.folder)
            #expect(solo.status == 0, "\(solo.stderr)\n\(solo.stdout)")
            let reference = try setup.files("solo")
            #expect(reference.count >= 50)

            let config = try setup.config(name: "shared", collection: "shared")
            // A third of the way in, the server holds every further preview: all three workers are then in the
            // middle of the run, however slow the machine, when w2 is killed.
            gate.close(after: reference.count / 3)
            let workers = try (1...3).map {
                try WorkerChild(["run", config, "--quiet", "--json", "--worker", "w\($0)"], in: setup.folder)
            }
            try await waitFor("a third of the previews served, the rest held", seconds: 120) { gate.held > 0 }
            kill(workers[1].process.processIdentifier, SIGKILL)
            gate.open()
            let first = try await workers[0].wait()
            let killed = try await workers[1].wait()
            let third = try await workers[2].wait()
            #expect(killed.status == 128 + SIGKILL || killed.status == SIGKILL)
            #expect(first.status == 0, "\(first.stderr)\n\(first.stdout)")
            #expect(third.status == 0, "\(third.stderr)\n\(third.stdout)")

            let shared = try setup.files("shared")
            #expect(Set(shared.keys) == Set(reference.keys))
            #expect(shared == reference)
            let uri = setup.uri
            let entries = try await PostgreSQLServer.offThePool {
                try PostgreSQLLedger(uri: uri, run: "shared").entries()
            }
            #expect(entries.count == reference.count)
            #expect(entries.allSatisfy { $0.status == .stored })
            #expect(Set(entries.compactMap(\.location)).count == reference.count)
            // The planner kept the run's names and ids on this machine's disk, not in memory.
            let plannerKeys = setup.folder.appendingPathComponent("state-shared/planner-keys/\(Ledger.fileName)")
            #expect(FileManager.default.fileExists(atPath: plannerKeys.path))

            let status = try await WorkerChild.run(["status", config, "--json"], in: setup.folder)
            let shown = try JSONDecoder().decode(StatusReport.self, from: Data(status.stdout.utf8))
            #expect(shown.run == "shared")
            #expect(shown.totals["stored"] == reference.count)
            #expect(Set(shown.workers.map(\.worker)) == ["w1", "w2", "w3"])
            #expect(shown.workers.first { $0.worker == "w2" }?.state == "running")
            #expect(shown.workers.filter { $0.worker != "w2" }.allSatisfy { $0.state == "done" && $0.claimed == 0 })
            #expect(shown.workers.map(\.stored).reduce(0, +) <= reference.count)
            let text = try await WorkerChild.run(["status", config], in: setup.folder)
            #expect(text.stdout.contains("stored: \(reference.count)"))
            #expect(text.stdout.contains("w2: silent"))

            let fourth = try await WorkerChild.run(["run", config, "--quiet", "--json", "--worker", "w4"], in: setup.folder)
            #expect(fourth.status == 0, "\(fourth.stderr)")
            let summary = try #require(Self.summary(fourth), "\(fourth.stdout)")
            #expect(summary.stored == 0)
            #expect(summary.alreadyStored == reference.count)
            #expect(summary.bytesTransferred == 0)
        }
    }

    @Test func statusFollowsASharedRunUntilNoWorkerIsAtWork() async throws {
        try await PostgreSQLServer.with { database in
            let gate = PreviewGate()
            let setup = try Setup(database: database, gate: gate)
            defer { setup.close() }
            let config = try setup.config(name: "followed", collection: "followed", items: 20)
            gate.close(after: 5)
            let worker = try WorkerChild(["run", config, "--quiet", "--worker", "f1"], in: setup.folder)
            try await waitFor("five previews served, the rest held", seconds: 120) { gate.held > 0 }
            let follower = try WorkerChild(["status", config, "--follow"], in: setup.folder)
            try await waitFor("the follower showing f1 at work", seconds: 60) {
                follower.outputSoFar.contains("f1: running")
            }
            #expect(follower.process.isRunning, "the follower ended while f1 was at work:\n\(follower.outputSoFar)")
            gate.open()
            let ran = try await worker.wait()
            #expect(ran.status == 0, "\(ran.stderr)")
            // Once f1 has left the run, the follower prints the last status and ends by itself.
            try await waitFor("the follower to end", seconds: 60) { !follower.process.isRunning }
            let followed = try await follower.wait()
            #expect(followed.status == 0, "\(followed.stderr)")
            let stored = try setup.files("followed").count
            #expect(stored == 20)
            let last = followed.stdout.components(separatedBy: "\nrun followed in ").last ?? ""
            #expect(last.contains("stored: \(stored), pending: 0"), "\(followed.stdout)")
            #expect(last.contains("f1: done"), "\(followed.stdout)")
            #expect(last.hasSuffix("no worker is at work: this is the last status\n"), "\(followed.stdout)")
            #expect(followed.stdout.contains("workers are at work; following, Ctrl-C to stop"))
        }
    }

    @Test func aPostgreSQLRestartMidRunLosesNothingAndStoresNothingTwice() async throws {
        try await PostgreSQLServer.with { database in
            let setup = try Setup(database: database)
            defer { setup.close() }
            let config = try setup.config(name: "restart", collection: "restart", items: 40)
            let workers = try (1...2).map {
                try WorkerChild(["run", config, "--quiet", "--json", "--worker", "r\($0)"], in: setup.folder)
            }
            try await waitFor("some files stored", seconds: 120) { try setup.files("restart").count >= 8 }
            try await PostgreSQLServer.offThePool { try database.stop(mode: .immediate) }
            try await Task.sleep(for: .seconds(2))
            try await PostgreSQLServer.offThePool { try database.start() }
            for worker in workers {
                let outcome = try await worker.wait()
                #expect(outcome.status == 0, "\(outcome.stdout.prefix(3000))")
            }
            let files = try setup.files("restart")
            let uri = setup.uri
            let entries = try await PostgreSQLServer.offThePool {
                try PostgreSQLLedger(uri: uri, run: "restart").entries()
            }
            // Every planned item is stored, each as one file: a second store would have left one more file.
            #expect(entries.count == 40)
            #expect(entries.allSatisfy { $0.status == .stored })
            #expect(files.count == entries.count)
            #expect(Set(entries.compactMap(\.location)) == Set(files.keys))
        }
    }

    @Test func ctrlCGivesClaimsBackAtOnceAndExits130() async throws {
        try await PostgreSQLServer.with { database in
            let setup = try Setup(database: database, previewDelay: 0.5)
            defer { setup.close() }
            let config = try setup.config(name: "sigint", collection: "sigint", items: 30)
            let worker = try WorkerChild(["run", config, "--quiet", "--worker", "i1"], in: setup.folder)
            try await waitFor("a file stored", seconds: 60) { try setup.files("sigint").count >= 1 }
            kill(worker.process.processIdentifier, SIGINT)
            let outcome = try await worker.wait()
            #expect(outcome.status == 130, "\(outcome.stderr)\n\(outcome.stdout)")
            let status = try await WorkerChild.run(["status", config, "--json"], in: setup.folder)
            let shown = try JSONDecoder().decode(StatusReport.self, from: Data(status.stdout.utf8))
            #expect(shown.workers.map(\.worker) == ["i1"])
            #expect(shown.workers.first?.state == "interrupted")
            #expect(shown.workers.first?.claimed == 0)
            // Another worker takes over the rest and completes the run.
            let next = try await WorkerChild.run(["run", config, "--quiet", "--worker", "i2"], in: setup.folder)
            #expect(next.status == 0, "\(next.stderr)")
            #expect(try setup.files("sigint").count == 30)
        }
    }

    @Test func twoWorkersRacingToPlanPlanOnce() async throws {
        try await PostgreSQLServer.with { database in
            let setup = try Setup(database: database, previewDelay: 0)
            defer { setup.close() }
            let solo = try await WorkerChild.run(
                ["run", try setup.config(name: "alone", collection: "alone", items: 30), "--quiet", "--worker", "a"],
                in: setup.folder)
            #expect(solo.status == 0, "\(solo.stderr)")
            let config = try setup.config(name: "race", collection: "race", items: 30)
            let workers = try (1...2).map {
                try WorkerChild(["run", config, "--quiet", "--worker", "p\($0)"], in: setup.folder)
            }
            for worker in workers {
                let outcome = try await worker.wait()
                #expect(outcome.status == 0, "\(outcome.stderr)")
            }
            #expect(try setup.files("race") == setup.files("alone"))
        }
    }

    /// Polls `condition` every 50 ms for up to `seconds`, without blocking the task pool.
    func waitFor(_ what: String, seconds: Double, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out after \(seconds) s waiting for \(what)")
        throw CancellationError()
    }
}

/// The built `mediafetch` as a child process, its output in files.
/// A worker (or `status`) as a child process: the testing kit's runner.
typealias WorkerChild = ChildProcess

/// Lets previews through until it is closed after a number of them, then holds each further one (its server
/// thread waits, at most a minute) until it is opened again.
final class PreviewGate: Sendable {
    private let state = Mutex((passed: 0, limit: Int.max, held: 0, open: true))

    /// Previews held so far.
    var held: Int { state.withLock { $0.held } }

    func close(after count: Int) { state.withLock { $0 = (passed: 0, limit: count, held: 0, open: false) } }

    func open() { state.withLock { $0.open = true } }

    /// Called for each preview request, on its connection's thread.
    func pass() {
        let wait = state.withLock { state -> Bool in
            state.passed += 1
            guard !state.open, state.passed > state.limit else { return false }
            state.held += 1
            return true
        }
        guard wait else { return }
        let deadline = ContinuousClock.now + .seconds(60)
        while !state.withLock({ $0.open }) && ContinuousClock.now < deadline { usleep(2_000) }
    }
}
