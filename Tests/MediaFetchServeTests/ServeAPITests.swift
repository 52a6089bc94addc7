import Foundation
import MediaFetchCore
import MediaFetchServe
import MediaFetchTesting
import Synchronization
import Testing

/// The JSON API end to end: search, queue, pause, resume, cancel, events, the library with Range, and a
/// restart, against the mock catalog and a real folder sink.
@Suite(.serialized) struct ServeAPITests {
    @Test func searchQueueAndStoreTheCatalogsBytes() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        let results = await serve.search("love", limit: 3)
        try #require(results.count == 3)
        let first = results[0]
        #expect(first["downloadable"] as? Bool == true)
        #expect(first["previewUrl"] is String)
        let id = try #require(first["id"] as? String)
        // An id given twice is queued, and answered, once.
        let queued = await serve.request("POST", "/api/downloads", body: #"{"ids": ["\#(id)", "\#(id)"]}"#)
        #expect(queued.status == 200)
        #expect((queued.object["downloads"] as? [[String: Any]])?.compactMap { $0["id"] as? String } == [id])
        let stored = try #require(await serve.waitFor(id) { $0["status"] as? String == "stored" })
        #expect(stored["status"] as? String == "stored")
        let location = try #require(stored["location"] as? String)
        let song = try #require(serve.catalog.catalog.songs.first { String($0.trackId) == id })
        let expected = serve.catalog.catalog.previewBytes(for: song)
        #expect(try Data(contentsOf: serve.library.appendingPathComponent(location)) == Data(expected))

        // The stored file, whole and in part, as the audio element asks for it.
        let path = "/library/" + (location.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? location)
        let whole = await serve.request("GET", path)
        #expect(whole.status == 200)
        #expect(whole.body == expected)
        #expect(whole.headers["content-type"] == "audio/mp4")
        let part = await serve.request("GET", path, headers: ["Range": "bytes=100-199"])
        #expect(part.status == 206)
        #expect(part.body == Array(expected[100..<200]))
        #expect(part.headers["content-range"] == "bytes 100-199/\(expected.count)")
        let past = await serve.request("GET", path, headers: ["Range": "bytes=\(expected.count)-"])
        #expect(past.status == 416)
        await serve.stop()
    }

    @Test func pauseResumeAndCancelOneRowWhileAnotherGoesOn() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        let results = await serve.search("love", limit: 3)
        let ids = results.compactMap { $0["id"] as? String }
        try #require(ids.count == 3)
        let songs = ids.compactMap { id in serve.catalog.catalog.songs.first { String($0.trackId) == id } }
        let slow = Set([songs[0].previewPath, songs[2].previewPath])
        serve.catalog.setFaultHook { slow.contains($0.path) ? .drip(bytesPerSecond: 60_000) : nil }
        _ = await serve.request("POST", "/api/downloads", body: #"{"ids": ["\#(ids[0])", "\#(ids[2])"]}"#)
        _ = await serve.waitFor(ids[0]) { ($0["receivedBytes"] as? Int ?? 0) > 0 }
        let paused = await serve.request("POST", "/api/downloads/\(ids[0])/pause", body: "{}")
        #expect(paused.status == 200)
        #expect(paused.object["status"] as? String == "paused")
        // Another row goes on meanwhile, and a third is added and stored.
        _ = await serve.request("POST", "/api/downloads", body: #"{"ids": ["\#(ids[1])"]}"#)
        let other = await serve.waitFor(ids[1]) { $0["status"] as? String == "stored" }
        #expect(other?["status"] as? String == "stored")
        #expect(await serve.waitFor(ids[0]) { $0["status"] as? String == "paused" }?["status"] as? String == "paused")

        let cancelled = await serve.request("POST", "/api/downloads/\(ids[2])/cancel", body: "{}")
        #expect(cancelled.object["status"] as? String == "cancelled")
        let staging = Pipeline.stagingFile(
            in: Pipeline.stagingDirectory(state: serve.spec.stateDirectory), source: "itunes", itemID: ids[2],
            asset: .preview)
        let deadline = ContinuousClock.now + .seconds(60)
        while FileManager.default.fileExists(atPath: staging.path), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(!FileManager.default.fileExists(atPath: staging.path))

        serve.catalog.setFaultHook(nil)
        serve.catalog.resetLog()
        let resumed = await serve.request("POST", "/api/downloads/\(ids[0])/resume", body: "{}")
        #expect(resumed.status == 200)
        #expect(await serve.waitFor(ids[0]) { $0["status"] as? String == "stored" }?["status"] as? String == "stored")
        let range = serve.catalog.requests.first { $0.path == songs[0].previewPath }?.headers["Range"]
        #expect(range?.hasPrefix("bytes=") == true && range != "bytes=0-")

        // Wrong states and unknown ids say so.
        let again = await serve.request("POST", "/api/downloads/\(ids[0])/pause", body: "{}")
        #expect(again.status == 409)
        #expect((again.object["error"] as? String)?.contains("stored") == true)
        let unknown = await serve.request("POST", "/api/downloads/999/resume", body: "{}")
        #expect(unknown.status == 404)
        await serve.stop()
    }

    @Test func eventsCarryTheSnapshotAndEveryChange() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        let id = try #require(await serve.search("love", limit: 1).first?["id"] as? String)
        let snapshotSeen = Mutex(false)
        async let stream = serve.events { text in
            if text.contains("event: snapshot") { snapshotSeen.withLock { $0 = true } }
            return text.contains("\"status\":\"stored\"")
        }
        // The item is queued once the stream's snapshot has come: every change after it must come as events.
        let deadline = ContinuousClock.now + .seconds(30)
        while !snapshotSeen.withLock({ $0 }), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(snapshotSeen.withLock { $0 }, "the event stream sent no snapshot within 30 s")
        _ = await serve.request("POST", "/api/downloads", body: #"{"ids": ["\#(id)"]}"#)
        let text = await stream
        #expect(text.contains("event: snapshot"))
        #expect(text.contains("event: downloads"))
        #expect(text.contains("\"status\":\"stored\""))
        await serve.stop()
    }

    @Test func aRestartShowsEveryItemAsItWas() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        let ids = await serve.search("love", limit: 3).compactMap { $0["id"] as? String }
        try #require(ids.count == 3)
        let songs = ids.compactMap { id in serve.catalog.catalog.songs.first { String($0.trackId) == id } }
        let slow = Set([songs[1].previewPath, songs[2].previewPath])
        serve.catalog.setFaultHook { slow.contains($0.path) ? .drip(bytesPerSecond: 60_000) : nil }
        _ = await serve.request("POST", "/api/downloads", body: #"{"ids": ["\#(ids[0])", "\#(ids[1])", "\#(ids[2])"]}"#)
        _ = await serve.waitFor(ids[0]) { $0["status"] as? String == "stored" }
        _ = await serve.waitFor(ids[1]) { ($0["receivedBytes"] as? Int ?? 0) > 0 }
        _ = await serve.request("POST", "/api/downloads/\(ids[1])/pause", body: "{}")
        _ = await serve.waitFor(ids[2]) { ($0["receivedBytes"] as? Int ?? 0) > 0 }
        await serve.stop()

        serve.catalog.setFaultHook(nil)
        serve.catalog.resetLog()
        let again = try ServeFixture(scratch: serve.scratch, catalog: serve.catalog)
        try await again.start()
        let listed = await again.downloads()
        #expect(listed.compactMap { $0["id"] as? String } == ids)
        #expect(listed.first { $0["id"] as? String == ids[0] }?["status"] as? String == "stored")
        #expect(listed.first { $0["id"] as? String == ids[1] }?["status"] as? String == "paused")
        let resumed = await again.waitFor(ids[2]) { $0["status"] as? String == "stored" }
        #expect(resumed?["status"] as? String == "stored")
        #expect(again.catalog.requests.first { $0.path == songs[2].previewPath }?.headers["If-Range"] != nil)
        #expect((await again.downloads()).first { $0["id"] as? String == ids[1] }?["status"] as? String == "paused")
        await again.stop()
    }
}
