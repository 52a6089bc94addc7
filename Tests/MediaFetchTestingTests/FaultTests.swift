import Dispatch
import Foundation
import MediaFetchTesting
import Synchronization
import Testing

@Suite("Fault hook")
struct FaultTests {
    let server: MockCatalogServer
    let song: MockSong

    init() throws {
        server = try MockCatalogServer()
        song = MockCatalog.standard.songs[7]
    }

    /// Applies `fault` to requests for the song's preview only.
    private func fail(with fault: MockFault) {
        let path = song.previewPath
        server.setFaultHook { $0.path == path ? fault : nil }
    }

    @Test("truncate promises the full length, sends N bytes, then closes")
    func truncate() throws {
        fail(with: .truncate(afterBytes: 1000))
        let client = try RawHTTPClient(port: server.port)
        try client.send("GET \(song.previewPath) HTTP/1.1\r\nHost: x\r\n\r\n")
        let (status, headers) = try client.readHead()
        #expect(status == 200)
        #expect(headers["Content-Length"] == String(song.previewSize))
        let (bytes, ending) = client.readToEnd()
        #expect(ending == .closed)
        #expect(bytes == Array(server.catalog.previewBytes(for: song)[0..<1000]))
    }

    @Test("reset sends N bytes, then the peer sees a reset")
    func reset() throws {
        fail(with: .reset(afterBytes: 2000))
        let client = try RawHTTPClient(port: server.port)
        try client.send("GET \(song.previewPath) HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try client.readHead()
        let (bytes, ending) = client.readToEnd()
        #expect(ending == .reset)
        #expect(bytes.count <= 2000)
        #expect(bytes == Array(server.catalog.previewBytes(for: song)[0..<bytes.count]))
    }

    @Test("stall sends N bytes, then nothing for the given time, then closes")
    func stall() throws {
        fail(with: .stall(afterBytes: 10, seconds: 0.4))
        let client = try RawHTTPClient(port: server.port)
        try client.send("GET \(song.previewPath) HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try client.readHead()
        let started = DispatchTime.now().uptimeNanoseconds
        let (bytes, ending) = client.readToEnd()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        #expect(ending == .closed)
        #expect(bytes.count == 10)
        // A lower bound only: the close cannot come before the stall is over.
        #expect(elapsed >= 0.35)
    }

    @Test("respond replaces the answer, e.g. Apple's empty 403 throttling")
    func respond() throws {
        server.setFaultHook { $0.path == "/search" ? .respond(status: 403, headers: [], body: []) : nil }
        let client = try RawHTTPClient(port: server.port)
        let throttled = try client.request("/search?term=love")
        #expect(throttled.status == 403)
        #expect(throttled.body.isEmpty)
        server.setFaultHook { _ in
            .respond(
                status: 429, headers: [("Retry-After", "2"), ("Content-Type", "text/plain")], body: Array("slow".utf8)
            )
        }
        let limited = try client.request("/search?term=love")
        #expect(limited.status == 429)
        #expect(limited.headers["Retry-After"] == "2")
        #expect(limited.text == "slow")
        server.setFaultHook(nil)
        #expect(try client.request("/search?term=love").status == 200)
    }

    @Test("redirect answers with Location and no body")
    func redirect() throws {
        let target = song.previewPath
        server.setFaultHook { $0.path == "/moved" ? .redirect(status: 302, location: target) : nil }
        let client = try RawHTTPClient(port: server.port)
        let response = try client.request("/moved")
        #expect(response.status == 302)
        #expect(response.headers["Location"] == target)
        #expect(response.body.isEmpty)
        #expect(try client.request(target).body == server.catalog.previewBytes(for: song))
    }

    @Test("ignoreRange answers 200 with the whole file whatever the Range")
    func ignoreRange() throws {
        fail(with: .ignoreRange)
        let response = try RawHTTPClient(port: server.port).request(song.previewPath, headers: ["Range: bytes=100-"])
        #expect(response.status == 200)
        #expect(response.headers["Content-Range"] == nil)
        #expect(response.body == server.catalog.previewBytes(for: song))
    }

    @Test("changedETag makes an If-Range with the old validator get the whole file")
    func changedETag() throws {
        let old = try #require(server.etag(path: song.previewPath))
        fail(with: .changedETag("v2"))
        let client = try RawHTTPClient(port: server.port)
        let stale = try client.request(song.previewPath, headers: ["Range: bytes=100-", "If-Range: \(old)"])
        #expect(stale.status == 200)
        #expect(stale.headers["ETag"] == "\"v2\"")
        #expect(stale.headers["Last-Modified"] != MockCatalogServer.lastModified)
        let fresh = try client.request(song.previewPath, headers: ["Range: bytes=100-", "If-Range: \"v2\""])
        #expect(fresh.status == 206)
    }

    @Test("closeAfterResponse sends Connection: close and closes")
    func closeAfterResponse() throws {
        server.setFaultHook { _ in .closeAfterResponse }
        let client = try RawHTTPClient(port: server.port)
        let response = try client.request("/search?term=love&limit=1")
        #expect(response.status == 200)
        #expect(response.headers["Connection"] == "close")
        #expect(client.isClosedByPeer())
    }

    @Test("drip paces the body; delay holds the answer back")
    func dripAndDelay() throws {
        let slow = MockFault.combined([.delay(seconds: 0.2), .drip(bytesPerSecond: 20_000)])
        server.setFaultHook { $0.path == "/search" ? slow : nil }
        let client = try RawHTTPClient(port: server.port)
        let started = DispatchTime.now().uptimeNanoseconds
        let response = try client.request("/search?term=love&limit=20")
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        #expect(response.status == 200)
        #expect(try SearchAnswer(response.body).resultCount == 20)
        // Lower bounds only: the delay plus the body at 20 kB/s cannot be faster than this.
        let minimum = 0.2 + Double(response.body.count) / 20_000 * 0.8
        #expect(response.body.count > 10_000)
        #expect(elapsed >= minimum)
    }

    @Test("the hook sees every request and can fail just the first attempt")
    func firstAttemptOnly() throws {
        let attempts = Mutex(0)
        server.setFaultHook { _ in
            let attempt = attempts.withLock { count in
                count += 1
                return count
            }
            return attempt == 1 ? .respond(status: 503, headers: [], body: []) : nil
        }
        #expect(try RawHTTPClient(port: server.port).request(song.previewPath).status == 503)
        #expect(try RawHTTPClient(port: server.port).request(song.previewPath).status == 200)
        #expect(attempts.withLock { $0 } == 2)
    }

    @Test("stop() ends a stalled connection promptly")
    func stopDuringStall() throws {
        fail(with: .stall(afterBytes: 0, seconds: 60))
        let client = try RawHTTPClient(port: server.port)
        try client.send("GET \(song.previewPath) HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try client.readHead()
        let started = DispatchTime.now().uptimeNanoseconds
        server.stop()
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        // Far below the stall's minute: stop ended it rather than waiting it out (not a speed check).
        #expect(elapsed < 40)
        #expect(client.readToEnd().bytes.isEmpty)
    }
}
