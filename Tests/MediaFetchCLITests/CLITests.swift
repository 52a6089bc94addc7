import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import MediaFetchCLI

/// The command line end to end: the built binary against the loopback mock catalog.
struct CLITests {
    static let server: MockCatalogServer = {
        do {
            return try MockCatalogServer()
        } catch {
            fatalError("the mock server cannot start: \(error)")
        }
    }()

    @Test func theDemoStoresPreviewsWhoseBytesAreWhatTheMockServed() async throws {
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let output = scratch.appendingPathComponent("out")
        let outcome = try await CommandRunner.run([
            "demo", "--set", "sink.path=\(output.path)", "--set",
            "state=\(scratch.appendingPathComponent("state").path)",
        ])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("the files are in \(output.path)"))

        let stored = try CommandRunner.tree(output)
        #expect(stored.count >= 25)
        let catalog = MockCatalog.standard
        let served = Set(catalog.search(term: "love").map { Data(catalog.previewBytes(for: $0)) })
        for (path, bytes) in stored {
            #expect(served.contains(bytes), "\(path) holds bytes the mock never served")
            #expect(path.hasSuffix(".m4a"))
        }
    }

    @Test func concurrencyDoesNotChangeTheOutputTree() async throws {
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        var trees: [Int: [String: Data]] = [:]
        for concurrency in [1, 8, 64] {
            let output = scratch.appendingPathComponent("out-\(concurrency)")
            let outcome = try await CommandRunner.run([
                "run", "config/demo.yaml", "--quiet",
                "--set", "source.endpoint=\(Self.server.baseURL.absoluteString)",
                "--set", "source.term=a", "--set", "source.max-items=200",
                "--set", "transport.concurrency=\(concurrency)",
                "--set", "sink.path=\(output.path)",
                "--set", "state=\(scratch.appendingPathComponent("state-\(concurrency)").path)",
            ])
            #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
            trees[concurrency] = try CommandRunner.tree(output)
        }
        #expect(trees[1]?.count == 200)
        #expect(trees[1] == trees[8])
        #expect(trees[1] == trees[64])
    }

    @Test func aConfigErrorExitsTwoAndSaysWhere() async throws {
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let config = scratch.appendingPathComponent("bad.yaml")
        try Data("source:\n  use: itunes\n  term: x\ntransport:\n  use: crul\n".utf8).write(to: config)
        let outcome = try await CommandRunner.run(["run", config.path])
        #expect(outcome.status == 2)
        #expect(outcome.stderr.contains("bad.yaml:5:8"))
        #expect(outcome.stderr.contains("crul"))
        #expect(outcome.stderr.contains("foundation"))
    }

    @Test func usageErrorsExitTwo() async throws {
        let unknown = try await CommandRunner.run(["rn", "config/demo.yaml"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("did you mean \"run\""))
        let noConfig = try await CommandRunner.run(["run"])
        #expect(noConfig.status == 2)
        let badOption = try await CommandRunner.run(["search", "x", "--limt", "3"])
        #expect(badOption.status == 2)
        #expect(badOption.stderr.contains("--limit"))
    }

    @Test func aSourceThatFailsExitsThreeWithApplesMessage() async throws {
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outcome = try await CommandRunner.run([
            "run", "config/demo.yaml", "--quiet",
            "--set", "source.endpoint=\(Self.server.baseURL.absoluteString)",
            "--set", "source.entity=notAnEntity",
            "--set", "sink.path=\(scratch.path)/out", "--set", "state=\(scratch.path)/state",
        ])
        #expect(outcome.status == 3)
        #expect(outcome.stdout.contains("Invalid value(s) for key(s): [resultEntity]"))
    }

    @Test func failedItemsExitOneAndAreListedWithTheirURL() async throws {
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let song = Self.server.catalog.songs[0]
        let good = Self.server.previewURL(for: song).absoluteString
        let missing = Self.server.url(path: "/nothing-here.m4a").absoluteString
        let list = scratch.appendingPathComponent("list.txt")
        try Data("# two good, one missing, one not a URL\n\(good)\n\(missing)\nnot-a-url\n".utf8).write(to: list)
        let config = scratch.appendingPathComponent("urls.yaml")
        try Data("source:\n  use: urls\n  file: list.txt\nsink:\n  path: out\n".utf8).write(to: config)
        let outcome = try await CommandRunner.run(["run", config.path, "--quiet"])
        #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("\(missing): HTTP 404"))
        #expect(outcome.stdout.contains("list.txt:4"))
        #expect(outcome.stdout.contains("1 stored, 2 failed"))
        let stored = try CommandRunner.tree(scratch.appendingPathComponent("out"))
        #expect(stored.values.first == Data(Self.server.catalog.previewBytes(for: song)))
    }

    @Test func searchPrintsATable() async throws {
        let outcome = try await CommandRunner.run([
            "search", "love", "--limit", "5", "--endpoint",
            Self.server.baseURL.absoluteString,
        ])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let lines = outcome.stdout.split(separator: "\n")
        #expect(lines.count == 6)
        #expect(lines.first?.hasPrefix("KIND  ") == true)
        #expect(lines.dropFirst().allSatisfy { $0.hasPrefix("song  ") && $0.contains("  preview  ") })
        #expect(lines.dropFirst().allSatisfy { $0.contains(Self.server.baseURL.absoluteString) })
    }

    @Test func checkPrintsTheResolvedPipeline() async throws {
        let outcome = try await CommandRunner.run(["check", "config/demo.yaml", "--set", "transport.concurrency=3"])
        #expect(outcome.status == 0, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("itunes"))
        #expect(outcome.stdout.contains("concurrency"))
        #expect(outcome.stdout.contains("OK"))
    }

    /// Size limits default to something (max-size 50MB) or to nothing (max-rate), and `none` lifts either. Sizes
    /// read with the unit a config would use, and that text reads back as the same size.
    @Test func checkShowsTheSizeLimitsAndNoneLiftsThem() async throws {
        let defaults = try await CommandRunner.run(["check", "config/demo.yaml"])
        #expect(defaults.status == 0, "\(defaults.stderr)")
        #expect(defaults.stdout.contains("max-size: 50MB  (default)"))
        let units = try await CommandRunner.run([
            "check", "config/demo.yaml", "--set", "download.max-size=0.5GiB", "--set", "transport.max-rate=1500000",
        ])
        #expect(units.status == 0, "\(units.stderr)")
        #expect(units.stdout.contains("max-size: 512MiB  (--set download.max-size)"))
        #expect(units.stdout.contains("max-rate: 1500KB  (--set transport.max-rate)"))
        let back = try await CommandRunner.run(["check", "config/demo.yaml", "--set", "download.max-size=512MiB"])
        #expect(back.stdout.contains("max-size: 512MiB  (--set download.max-size)"))
        let lifted = try await CommandRunner.run([
            "check", "config/demo.yaml", "--set", "download.max-size=none", "--set", "transport.max-rate=none",
        ])
        #expect(lifted.status == 0, "\(lifted.stderr)")
        #expect(lifted.stdout.contains("max-size: none  (--set download.max-size)"))
        #expect(lifted.stdout.contains("max-rate: none  (--set transport.max-rate)"))
        let wrong = try await CommandRunner.run(["check", "config/demo.yaml", "--set", "download.max-size=big"])
        #expect(wrong.status == 2)
        #expect(wrong.stderr.contains("download.max-size"))
        #expect(wrong.stderr.contains("or none"))
    }

    @Test func versionAndHelp() async throws {
        #expect(try await CommandRunner.run(["--version"]).stdout.hasPrefix("mediafetch "))
        for command in ["run", "search", "check", "plugins", "demo", "mock-server"] {
            let outcome = try await CommandRunner.run([command, "--help"])
            #expect(outcome.status == 0)
            #expect(outcome.stdout.contains("Usage: mediafetch \(command)"))
        }
    }

    /// The README's config reference is generated; this keeps the copy in the README current.
    @Test func theReadmeReferenceMatchesTheRegistry() async throws {
        let readme = try String(
            contentsOf: CommandRunner.packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let begin = "<!-- BEGIN PLUGIN REFERENCE -->\n"
        let end = "<!-- END PLUGIN REFERENCE -->"
        let start = try #require(readme.range(of: begin))
        let stop = try #require(readme.range(of: end))
        let section = String(readme[start.upperBound..<stop.lowerBound])
        #expect(
            section == PluginDocs.markdown(BundledPlugins.registry),
            "regenerate it: swift run mediafetch plugins --markdown, between the markers in README.md")
    }
}

/// Ctrl-C pauses a run: no half file stored, partial bytes kept, exit 130; the same command resumes.
struct InterruptTests {
    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalPausesTheRunAndTheNextRunResumes(signal: Int32) async throws {
        let server = try MockCatalogServer()
        // Every preview stalls after some bytes, so the run is surely mid-transfer when the signal comes.
        server.setFaultHook { $0.path.hasSuffix(".m4a") ? .stall(afterBytes: 50_000, seconds: 60) : nil }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let output = scratch.appendingPathComponent("out")
        let arguments = [
            "run", "config/demo.yaml", "--quiet",
            "--set", "source.endpoint=\(server.baseURL.absoluteString)",
            "--set", "sink.path=\(output.path)", "--set", "state=\(scratch.path)/state",
        ]
        let child = try CommandRunner.start(arguments)
        let staging = scratch.appendingPathComponent("state/staging")
        // Wait (bounded) for the condition, not for a time: every worker holds a stalled download whose
        // first bytes reached its staging file.
        func stalledDownloads() -> Int {
            Pipeline.partialFiles(in: staging).filter { file in
                let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size]
                return (size as? NSNumber)?.int64Value == 50_000
            }.count
        }
        let deadline = ContinuousClock.now + .seconds(60)
        while stalledDownloads() < 8 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        try #require(stalledDownloads() == 8, "the downloads did not start")
        kill(child.process.processIdentifier, signal)
        let paused = try await child.wait()
        #expect(paused.status == 130, "\(paused.stdout)\(paused.stderr)")
        #expect(paused.stdout.contains("run the same command again to resume"))
        #expect(try CommandRunner.tree(output).isEmpty)
        #expect(Pipeline.partialFiles(in: staging).count == 8)

        let status = try await CommandRunner.run(["status", "config/demo.yaml", "--set", "state=\(scratch.path)/state"])
        #expect(status.stdout.contains("partial: 8"), "\(status.stdout)")

        server.setFaultHook(nil)
        server.resetLog()
        let resumed = try await CommandRunner.run(arguments)
        #expect(resumed.status == 0, "\(resumed.stdout)\(resumed.stderr)")
        #expect(resumed.stdout.contains("40 stored"))
        #expect(resumed.stdout.contains("downloaded, the rest resumed"))
        let ranged = server.requests.filter { $0.headers["Range"] != nil }
        #expect(ranged.count == 8)
        #expect(ranged.allSatisfy { $0.headers["Range"] == "bytes=50000-" && $0.headers["If-Range"] != nil })
        let catalog = server.catalog
        let expected = Set(catalog.search(term: "love").prefix(40).map { Data(catalog.previewBytes(for: $0)) })
        #expect(Set(try CommandRunner.tree(output).values) == expected)
    }
}

/// `mediafetch demo` needs nothing from the repository: its config is built in.
struct DemoAnywhereTests {
    @Test func theBuiltInDemoConfigIsConfigDemoYaml() async throws {
        let file = try String(
            contentsOf: CommandRunner.packageRoot.appendingPathComponent("config/demo.yaml"), encoding: .utf8)
        #expect(file == DemoConfig.text + "\n", "config/demo.yaml and DemoConfig.text have drifted apart")
    }

    @Test func theDemoRunsInAnEmptyFolderOutsideTheRepository() async throws {
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let outcome = try await CommandRunner.run(["demo", "--quiet"], in: scratch)
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        let output = scratch.appendingPathComponent("demo-output")
        #expect(outcome.stdout.contains("the files are in \(output.path)"))
        let stored = try CommandRunner.tree(output)
        #expect(stored.count >= 25)
        #expect(stored.keys.allSatisfy { $0.hasSuffix(".m4a") })
        // Everything the demo wrote is in that folder: the previews and the run's state.
        let top = try FileManager.default.contentsOfDirectory(atPath: scratch.path).sorted()
        #expect(top == [".mediafetch", "demo-output"])

        // Run again, it fetches nothing: the state beside the built-in config remembers.
        let again = try await CommandRunner.run(["demo", "--quiet"], in: scratch)
        #expect(again.status == 0, "\(again.stdout)\(again.stderr)")
        #expect(again.stdout.contains("0 stored"), "\(again.stdout)")
        #expect(again.stdout.contains("\(stored.count) already stored"), "\(again.stdout)")
    }

    @Test func helpSaysWhereTheDemoWrites() async throws {
        let outcome = try await CommandRunner.run(["--help"])
        #expect(outcome.stdout.contains("writes demo-output/ under the current folder"))
    }
}

/// `status --follow` asks the kernel who holds the state folder's lock, not the id written in the lock file,
/// which a process started since the last run could have been given.
@Test func theRunHolderIsWhoeverHoldsTheLock() throws {
    let state = FileManager.default.temporaryDirectory.appendingPathComponent("holder-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: state) }
    var lock: StateLock? = try StateLock(directory: state)
    #expect(lock != nil)
    #expect(StatusCommand.runHolder(state) == getpid())
    lock = nil
    #expect(StatusCommand.runHolder(state) == nil)
    // The file still names a process that exists (this one, and then process 1), but nobody holds the lock.
    try Data("1\n".utf8).write(to: state.appendingPathComponent("lock"))
    #expect(StatusCommand.runHolder(state) == nil)
}
