import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// The public runner, as a program of someone else's calls it: a spec, a registry, events.
struct RunnerTests {
    /// The demo config against a mock catalog of its own, with its state and output in `scratch`.
    static func spec(_ server: MockCatalogServer, in scratch: URL, items: Int = 12) throws -> PipelineSpec {
        try ConfigLoader.load(
            text: """
                source: {use: itunes, term: love, endpoint: "\(server.baseURL.absoluteString)", max-items: \(items),
                         requests-per-minute: 0}
                sink: {use: directory, path: out}
                """,
            path: "runner.yaml", baseDirectory: scratch, registry: BundledPlugins.registry)
    }

    @Test func eventsGoToTheClosureAndTheSummaryCountsThem() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let stored = Mutex<[String]>([])
        let summary = try await Runner(spec: try Self.spec(server, in: scratch), registry: BundledPlugins.registry)
            .run { event in
                if case .stored(_, _, let location, _) = event { stored.withLock { $0.append(location) } }
            }
        #expect(summary.stored == 12 && summary.failed == 0 && summary.exitCode == 0)
        let locations = stored.withLock { $0 }
        #expect(locations.count == 12)
        #expect(try CommandRunner.tree(scratch.appendingPathComponent("out")).count == 12)

        // The ledger beside the config remembers: a second run fetches nothing.
        let again = try await Runner(spec: try Self.spec(server, in: scratch), registry: BundledPlugins.registry)
            .run()
        #expect(again.stored == 0 && again.alreadyStored == 12)
    }

    @Test func theEventsAreAnAsyncSequenceThatEndsWithTheSummary() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        var storedEvents = 0
        var last: RunSummary?
        for try await event in Runner(spec: try Self.spec(server, in: scratch), registry: BundledPlugins.registry)
            .events()
        {
            switch event {
            case .stored: storedEvents += 1
            case .finished(let summary): last = summary
            default: #expect(last == nil, "an event came after the summary")
            }
        }
        #expect(storedEvents == 12)
        #expect(last?.stored == 12)
    }

    @Test func aStateDirectoryInUseIsRefusedBeforeAnythingIsFetched() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let spec = try Self.spec(server, in: scratch)
        let held = try StateLock(directory: spec.stateDirectory)
        await #expect(throws: LedgerError.self) {
            _ = try await Runner(spec: spec, registry: BundledPlugins.registry).run()
        }
        withExtendedLifetime(held) {}
        #expect(server.requests.isEmpty)
        // Refused before its ledger was opened, so the holder's ledger file is not touched (not even created).
        let ledgerFile = spec.stateDirectory.appendingPathComponent(Ledger.fileName).path
        #expect(!FileManager.default.fileExists(atPath: ledgerFile))
    }

    @Test func cancellingTheTaskInterruptsTheRunAndKeepsWhatWasStored() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let spec = try Self.spec(server, in: scratch, items: 200)
        let firstStored = AsyncStream<Void>.makeStream()
        let task = Task {
            try await Runner(spec: spec, registry: BundledPlugins.registry).run { event in
                if case .stored = event { firstStored.continuation.yield() }
            }
        }
        for await _ in firstStored.stream { break }
        task.cancel()
        let summary = try await task.value
        #expect(summary.interrupted && summary.exitCode == 130)
        #expect(summary.stored >= 1 && summary.stored < 200)
        let files = try CommandRunner.tree(scratch.appendingPathComponent("out"))
        #expect(files.count == summary.stored)
    }
}
