import DirectorySink
import Foundation
import FoundationTransport
import ITunesSource
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// Pause, resume and re-run through the real pipeline, transport, sink and ledger, against the mock.
struct ResumeTests {
    /// One song's preview, its state and output folders, and a way to run the pipeline over it.
    struct Setup {
        let server: MockCatalogServer
        let song: MockSong
        let scratch: URL

        init() throws {
            server = try MockCatalogServer()
            song = server.catalog.songs[3]
            scratch = FileManager.default.temporaryDirectory.appendingPathComponent("resume-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        }

        var state: URL { scratch.appendingPathComponent("state") }
        var output: URL { scratch.appendingPathComponent("out") }
        var bytes: [UInt8] { server.catalog.previewBytes(for: song) }
        var key: LedgerKey { LedgerKey(source: "itunes", itemID: String(song.trackId), asset: .preview) }
        var stagingFile: URL {
            Pipeline.stagingFile(
                in: Pipeline.stagingDirectory(state: state), source: "itunes", itemID: String(song.trackId),
                asset: .preview)
        }
        var previewRequests: [MockRequest] { server.requests.filter { $0.path == song.previewPath } }

        func pipeline(ledger: Ledger, refetch: Bool = false) throws -> Pipeline {
            let source = ITunesSource(
                .init(
                    endpoint: server.baseURL, query: .lookup(key: "id", ids: [String(song.trackId)]), pageSize: 10,
                    maxItems: 10, requestsPerMinute: 0))
            return Pipeline(
                source: source, transport: FoundationTransport(),
                sink: DirectorySink(root: output, layout: try LayoutTemplate("{title}.{ext}")),
                options: .init(
                    concurrency: 2, stagingDirectory: Pipeline.stagingDirectory(state: state),
                    sourceName: "itunes", ledger: ledger, refetch: refetch,
                    // Digests on: a resumed file's SHA-256 must be that of the whole file.
                    policy: DownloadPolicy(computesDigests: true)))
        }

        /// Runs once to completion.
        func run(refetch: Bool = false) async throws -> RunSummary {
            try await pipeline(ledger: try Ledger(directory: state), refetch: refetch).run()
        }

        /// Runs with the preview stalled after `kept` bytes and cancels once they are in the staging file.
        ///
        /// The bound is generous because in a full `swift test` the command-line suites, which block in child
        /// runs, hold every thread of the task pool for half a minute and more on two busy cores (28-44 s seen):
        /// a 30 s bound ran out before this run had been scheduled at all. The stall outlasts the bound.
        func runAndPause(kept: Int, fault: MockFault? = nil) async throws -> RunSummary {
            server.setFaultHook { request in
                guard request.path == song.previewPath else { return nil }
                let stall = MockFault.stall(afterBytes: kept, seconds: 180)
                return fault.map { .combined([$0, stall]) } ?? stall
            }
            defer { server.setFaultHook(nil) }
            let pipeline = try pipeline(ledger: try Ledger(directory: state))
            let run = Task { await pipeline.run() }
            let deadline = ContinuousClock.now + .seconds(150)
            while (try? Pipeline.fileSizeForTests(stagingFile)) != Int64(kept) && ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
            }
            run.cancel()
            return await run.value
        }

        func stored() throws -> Data {
            try Data(contentsOf: output.appendingPathComponent("\(song.trackName).m4a"))
        }
    }

    @Test func aPausedDownloadResumesWithItsETag() async throws {
        let setup = try Setup()
        let paused = try await setup.runAndPause(kept: 100_000)
        #expect(paused.interrupted)
        #expect(paused.stored == 0)
        let entry = try #require(try Ledger(directory: setup.state).entry(setup.key))
        #expect(entry.status == .partial)
        #expect(entry.receivedBytes == 100_000)
        #expect(entry.validator?.etag == setup.server.etag(path: setup.song.previewPath))
        #expect(entry.expectedBytes == Int64(setup.bytes.count))

        setup.server.resetLog()
        let resumed = try await setup.run()
        #expect(resumed.stored == 1)
        #expect(resumed.bytesTransferred == Int64(setup.bytes.count - 100_000))
        let request = try #require(setup.previewRequests.first)
        #expect(request.headers["Range"] == "bytes=100000-")
        #expect(request.headers["If-Range"] == entry.validator?.etag)
        #expect(try setup.stored() == Data(setup.bytes))
        let stored = try #require(try Ledger(directory: setup.state).entry(setup.key))
        #expect(stored.status == .stored)
        #expect(stored.sha256 == SHA256.hex(of: setup.bytes))
    }

    /// An answer that is not the file (a 503 before any byte) leaves the kept bytes alone: the retry
    /// still resumes from them.
    @Test func aServerErrorOnResumeKeepsTheKeptBytes() async throws {
        let setup = try Setup()
        _ = try await setup.runAndPause(kept: 100_000)
        let calls = Mutex(0)
        setup.server.setFaultHook { request in
            guard request.path == setup.song.previewPath else { return nil }
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            return call == 1 ? .respond(status: 503, headers: [("Retry-After", "0")], body: []) : nil
        }
        setup.server.resetLog()
        let resumed = try await setup.run()
        #expect(resumed.stored == 1)
        #expect(resumed.bytesTransferred == Int64(setup.bytes.count - 100_000))
        #expect(setup.previewRequests.map { $0.headers["Range"] } == ["bytes=100000-", "bytes=100000-"])
        #expect(try setup.stored() == Data(setup.bytes))
    }

    @Test func aServerWithoutETagsResumesWithLastModified() async throws {
        let setup = try Setup()
        _ = try await setup.runAndPause(kept: 70_000, fault: .withoutETag)
        let entry = try #require(try Ledger(directory: setup.state).entry(setup.key))
        #expect(entry.validator?.etag == nil)
        #expect(entry.validator?.lastModified == MockCatalogServer.lastModified)

        setup.server.setFaultHook { _ in .withoutETag }
        setup.server.resetLog()
        let resumed = try await setup.run()
        #expect(resumed.stored == 1)
        #expect(resumed.bytesTransferred == Int64(setup.bytes.count - 70_000))
        #expect(setup.previewRequests.first?.headers["If-Range"] == MockCatalogServer.lastModified)
        #expect(try setup.stored() == Data(setup.bytes))
    }

    @Test func aChangedFileStartsOverCleanly() async throws {
        let setup = try Setup()
        _ = try await setup.runAndPause(kept: 90_000)
        // The server's copy changed (new ETag): If-Range fails, the whole file comes, nothing is spliced.
        setup.server.setFaultHook { _ in .changedETag("v2") }
        let resumed = try await setup.run()
        #expect(resumed.stored == 1)
        #expect(resumed.bytesTransferred == Int64(setup.bytes.count))
        #expect(try setup.stored() == Data(setup.bytes))
        #expect(try Ledger(directory: setup.state).entry(setup.key)?.validator?.etag == "\"v2\"")
    }

    @Test func aServerWithoutRangeSupportStartsOverCleanly() async throws {
        let setup = try Setup()
        _ = try await setup.runAndPause(kept: 90_000)
        setup.server.setFaultHook { _ in .ignoreRange }
        let resumed = try await setup.run()
        #expect(resumed.stored == 1)
        #expect(resumed.bytesTransferred == Int64(setup.bytes.count))
        #expect(try setup.stored() == Data(setup.bytes))
    }

    @Test func a416OnACompleteFileIsRecognisedAsComplete() async throws {
        let setup = try Setup()
        // A complete staging file whose size the ledger never learned (killed after the last byte).
        try FileManager.default.createDirectory(
            at: setup.stagingFile.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(setup.bytes).write(to: setup.stagingFile)
        let ledger = try Ledger(directory: setup.state)
        ledger.begin(setup.key, title: setup.song.trackName, url: setup.server.previewURL(for: setup.song))
        ledger.responded(
            setup.key, validator: Validator(etag: setup.server.etag(path: setup.song.previewPath)),
            expectedBytes: nil)
        try ledger.flush()

        let summary = try await setup.run()
        #expect(summary.stored == 1, "\(summary)")
        #expect(summary.bytesTransferred == 0)
        #expect(setup.previewRequests.map { $0.headers["Range"] } == ["bytes=\(setup.bytes.count)-"])
        #expect(try setup.stored() == Data(setup.bytes))
    }

    @Test func storedItemsAreSkippedWithoutARequestUnlessRefetched() async throws {
        let setup = try Setup()
        #expect(try await setup.run().stored == 1)
        setup.server.resetLog()
        let again = try await setup.run()
        #expect(again.stored == 0)
        #expect(again.alreadyStored == 1)
        #expect(setup.previewRequests.isEmpty)

        let refetched = try await setup.run(refetch: true)
        #expect(refetched.stored == 1)
        #expect(setup.previewRequests.count == 1)
    }

    @Test func aStoredFileThatWasDeletedIsFetchedAgain() async throws {
        let setup = try Setup()
        #expect(try await setup.run().stored == 1)
        try FileManager.default.removeItem(at: setup.output.appendingPathComponent("\(setup.song.trackName).m4a"))
        let again = try await setup.run()
        #expect(again.stored == 1)
        #expect(try setup.stored() == Data(setup.bytes))
    }
}

extension Pipeline {
    static func fileSizeForTests(_ url: URL) throws -> Int64 {
        ((try FileManager.default.attributesOfItem(atPath: url.path))[.size] as? NSNumber)?.int64Value ?? 0
    }
}
