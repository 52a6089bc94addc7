import DirectorySink
import Foundation
import FoundationTransport
import ITunesSource
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// The queue mode of the core (``DownloadQueue`` over ``Runner/run(queue:events:)``): items added while the run
/// goes on, each paused, resumed or cancelled on its own, and the queue as it was after a restart. Against the
/// mock catalog, the foundation transport and a directory sink.
@Suite(.serialized) struct QueueTests {
    struct Setup {
        let server: MockCatalogServer
        let scratch: URL
        let spec: PipelineSpec
        let registry: PluginRegistry

        init() throws {
            server = try MockCatalogServer()
            scratch = FileManager.default.temporaryDirectory.appendingPathComponent("queue-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            var registry = PluginRegistry()
            registry.register(transport: FoundationTransport.descriptor)
            registry.register(sink: DirectorySink.descriptor)
            registry.register(source: ITunesSource.descriptor)
            self.registry = registry
            spec = try ConfigLoader.load(
                text: """
                    source: {use: itunes, term: unused}
                    transport: {use: foundation, concurrency: 4}
                    sink: {use: directory, path: out, layout: "{title}.{ext}"}
                    state: state
                    """, path: "queue.yaml", baseDirectory: scratch, registry: registry)
        }

        var songs: [MockSong] { Array(server.catalog.songs.prefix(3)) }
        var output: URL { scratch.appendingPathComponent("out") }

        func item(_ song: MockSong) -> MediaItem {
            MediaItem(
                id: String(song.trackId), title: song.trackName, artist: song.artistName,
                previewURL: server.previewURL(for: song))
        }

        func stagingFile(_ song: MockSong) -> URL {
            Pipeline.stagingFile(
                in: Pipeline.stagingDirectory(state: spec.stateDirectory), source: "itunes",
                itemID: String(song.trackId), asset: .preview)
        }

        func size(_ url: URL) -> Int64 {
            ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.int64Value ?? 0
        }

        /// Slows the previews of `slow` to a trickle, so that they are under way when the test acts.
        func slow(_ slow: [MockSong]) {
            let paths = Set(slow.map(\.previewPath))
            server.setFaultHook { paths.contains($0.path) ? .drip(bytesPerSecond: 40_000) : nil }
        }

        func start(_ queue: DownloadQueue) -> Task<RunSummary, any Error> {
            let runner = Runner(spec: spec, registry: registry, options: .init(progressInterval: .milliseconds(50)))
            return Task { try await runner.run(queue: queue) }
        }
    }

    /// Waits (with a generous bound) until `condition` holds for the queue's item `id`.
    func wait(
        _ queue: DownloadQueue, _ id: String, atMost limit: Duration = .seconds(120),
        until condition: @escaping (Download) -> Bool
    ) async {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if let download = queue.download(id), condition(download) { return }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test func oneItemPausesAndResumesWithIfRangeWhileTheOthersAreStored() async throws {
        let setup = try Setup()
        let (slow, fast) = (setup.songs[0], Array(setup.songs.dropFirst()))
        setup.slow([slow])
        let queue = try DownloadQueue(stateDirectory: setup.spec.stateDirectory)
        let run = setup.start(queue)
        let id = String(slow.trackId)
        queue.add([setup.item(slow)])
        await wait(queue, id) { $0.status == .downloading && $0.receivedBytes > 0 }
        // Added while the run goes on.
        queue.add(fast.map(setup.item))
        try queue.pause(id)
        for song in fast { await wait(queue, String(song.trackId)) { $0.status == .stored } }
        #expect(fast.allSatisfy { queue.download(String($0.trackId))?.status == .stored })
        await wait(queue, id) { $0.status == .paused && $0.receivedBytes > 0 }
        let paused = try #require(queue.download(id))
        #expect(paused.status == .paused)
        #expect(paused.receivedBytes > 0)
        #expect(setup.size(setup.stagingFile(slow)) == paused.receivedBytes)

        setup.server.setFaultHook(nil)
        setup.server.resetLog()
        try queue.resume(id)
        await wait(queue, id) { $0.status == .stored }
        #expect(queue.download(id)?.status == .stored)
        let request = try #require(setup.server.requests.first { $0.path == slow.previewPath })
        #expect(request.headers["Range"] == "bytes=\(paused.receivedBytes)-")
        #expect(request.headers["If-Range"] == setup.server.etag(path: slow.previewPath))
        let stored = try Data(contentsOf: setup.output.appendingPathComponent("\(slow.trackName).m4a"))
        #expect(stored == Data(setup.server.catalog.previewBytes(for: slow)))

        queue.close()
        let summary = try await run.value
        #expect(summary.stored == 3)
    }

    @Test func cancellingRemovesThePartialFile() async throws {
        let setup = try Setup()
        let song = setup.songs[1]
        setup.slow([song])
        let queue = try DownloadQueue(stateDirectory: setup.spec.stateDirectory)
        let run = setup.start(queue)
        let id = String(song.trackId)
        queue.add([setup.item(song)])
        await wait(queue, id) { $0.status == .downloading && $0.receivedBytes > 0 }
        try queue.cancel(id)
        #expect(queue.download(id)?.status == .cancelled)
        let deadline = ContinuousClock.now + .seconds(60)
        while FileManager.default.fileExists(atPath: setup.stagingFile(song).path), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(!FileManager.default.fileExists(atPath: setup.stagingFile(song).path))
        #expect(throws: QueueError.self) { try queue.pause("no-such-id") }
        queue.close()
        _ = try await run.value
        #expect(queue.download(id)?.status == .cancelled)
    }

    @Test func aRestartShowsEveryItemAsItWasAndResumesWhatWasDownloading() async throws {
        let setup = try Setup()
        let (stored, paused, downloading) = (setup.songs[0], setup.songs[1], setup.songs[2])
        setup.slow([paused, downloading])
        do {
            let queue = try DownloadQueue(stateDirectory: setup.spec.stateDirectory)
            let run = setup.start(queue)
            queue.add([stored, paused, downloading].map(setup.item))
            await wait(queue, String(stored.trackId)) { $0.status == .stored }
            await wait(queue, String(paused.trackId)) { $0.receivedBytes > 0 }
            try queue.pause(String(paused.trackId))
            await wait(queue, String(downloading.trackId)) { $0.receivedBytes > 0 }
            await wait(queue, String(paused.trackId)) { $0.status == .paused && $0.receivedBytes > 0 }
            // The process goes away: its downloads stop and keep their bytes.
            run.cancel()
            _ = try await run.value
        }
        setup.server.setFaultHook(nil)
        setup.server.resetLog()
        // The first queue holds the state folder's lock until its last reference goes, which can come a moment
        // after its run has ended (a process that goes away lets go at once): the new one waits for it, bounded.
        let deadline = ContinuousClock.now + .seconds(30)
        var reopened: DownloadQueue?
        while reopened == nil {
            do {
                reopened = try DownloadQueue(stateDirectory: setup.spec.stateDirectory)
            } catch let error as LedgerError where error.message.contains("is using the state directory") {
                guard ContinuousClock.now < deadline else { throw error }
                try await Task.sleep(for: .milliseconds(20))
            }
        }
        let queue = try #require(reopened)
        #expect(queue.downloads.map(\.id) == [stored, paused, downloading].map { String($0.trackId) })
        #expect(queue.download(String(stored.trackId))?.status == .stored)
        #expect(queue.download(String(paused.trackId))?.status == .paused)
        #expect(queue.download(String(downloading.trackId))?.status == .queued)
        let kept = try #require(queue.download(String(downloading.trackId))?.receivedBytes)
        #expect(kept > 0)

        let run = setup.start(queue)
        await wait(queue, String(downloading.trackId)) { $0.status == .stored }
        #expect(queue.download(String(downloading.trackId))?.status == .stored)
        #expect(queue.download(String(stored.trackId))?.status == .stored)
        #expect(queue.download(String(paused.trackId))?.status == .paused)
        let resumed = try #require(setup.server.requests.first { $0.path == downloading.previewPath })
        #expect(resumed.headers["Range"] == "bytes=\(kept)-")
        // Nothing was asked for the stored item, nor for the paused one.
        #expect(!setup.server.requests.contains { $0.path == stored.previewPath || $0.path == paused.previewPath })
        queue.close()
        _ = try await run.value
    }
}
