import Foundation
import MediaFetchTesting
import Testing

@Suite("Preview, artwork and added files")
struct FileServingTests {
    let server: MockCatalogServer
    let song: MockSong

    init() throws {
        server = try MockCatalogServer()
        song = MockCatalog.standard.songs[123]
    }

    @Test("a preview is served whole at its previewUrl, equal to previewBytes(for:)")
    func previewBytes() throws {
        let response = try RawHTTPClient(port: server.port).request(song.previewPath)
        let expected = server.catalog.previewBytes(for: song)
        #expect(response.status == 200)
        #expect(response.body.count == expected.count)
        #expect(response.body == expected)
        #expect((300_000...1_200_000).contains(expected.count))
        #expect(Array(expected[4..<11]) == Array("ftypM4A".utf8))
        #expect(response.headers["Accept-Ranges"] == "bytes")
        #expect(response.headers["Content-Type"] == "audio/x-m4a")
        let etag = try #require(response.headers["ETag"])
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\""))
        #expect(etag == server.etag(path: song.previewPath))
        #expect(response.headers["Last-Modified"] == MockCatalogServer.lastModified)
    }

    @Test("HEAD answers the GET headers without a body")
    func head() throws {
        let client = try RawHTTPClient(port: server.port)
        let head = try client.request(song.previewPath, method: "HEAD")
        #expect(head.status == 200)
        #expect(head.headers["Content-Length"] == String(song.previewSize))
        #expect(head.body.isEmpty)
        // The next response on the same connection must start right away: no body bytes were sent after HEAD.
        let next = try client.request(song.previewPath, headers: ["Range: bytes=0-3"])
        #expect(next.status == 206)
        #expect(next.body == [0, 0, 0, 0x20])
    }

    @Test("bytesServed counts body bytes sent, not headers, until resetLog()")
    func bytesServed() throws {
        let client = try RawHTTPClient(port: server.port)
        _ = try client.request(song.previewPath)
        #expect(server.bytesServed == song.previewSize)
        _ = try client.request(song.previewPath, headers: ["Range: bytes=100-199"])
        _ = try client.request(song.previewPath, method: "HEAD")
        #expect(server.bytesServed == song.previewSize + 100)
        server.resetLog()
        #expect(server.bytesServed == 0)
    }

    @Test(
        "single ranges are 206 with Content-Range",
        arguments: [
            ("bytes=100-", 100, nil), ("bytes=100-199", 100, 200), ("bytes=-500", nil, nil), ("bytes=0-0", 0, 1),
        ]
    )
    func ranges(header: String, start: Int?, end: Int?) throws {
        let size = Int(song.previewSize)
        let lower = start ?? size - 500
        let upper = end ?? size
        let response = try RawHTTPClient(port: server.port).request(song.previewPath, headers: ["Range: \(header)"])
        #expect(response.status == 206)
        #expect(response.headers["Content-Range"] == "bytes \(lower)-\(upper - 1)/\(size)")
        #expect(response.body == Array(server.catalog.previewBytes(for: song)[lower..<upper]))
    }

    @Test("a range past the end is 416 with the size; a range ending past it is clamped")
    func unsatisfiable() throws {
        let size = song.previewSize
        let client = try RawHTTPClient(port: server.port)
        let response = try client.request(song.previewPath, headers: ["Range: bytes=\(size)-"])
        #expect(response.status == 416)
        #expect(response.headers["Content-Range"] == "bytes */\(size)")
        let clamped = try client.request(song.previewPath, headers: ["Range: bytes=\(size - 10)-\(size + 1000)"])
        #expect(clamped.status == 206)
        #expect(clamped.body.count == 10)
    }

    @Test("If-Range with the current ETag or Last-Modified gives 206, anything else the whole file")
    func ifRange() throws {
        let etag = try #require(server.etag(path: song.previewPath))
        let client = try RawHTTPClient(port: server.port)
        let byTag = try client.request(song.previewPath, headers: ["Range: bytes=10-", "If-Range: \(etag)"])
        #expect(byTag.status == 206)
        #expect(byTag.body.count == Int(song.previewSize) - 10)
        let byDate = try client.request(
            song.previewPath, headers: ["Range: bytes=10-", "If-Range: \(MockCatalogServer.lastModified)"]
        )
        #expect(byDate.status == 206)
        let stale = try client.request(song.previewPath, headers: ["Range: bytes=10-", "If-Range: \"old\""])
        #expect(stale.status == 200)
        #expect(stale.body == server.catalog.previewBytes(for: song))
        let weak = try client.request(song.previewPath, headers: ["Range: bytes=10-", "If-Range: W/\(etag)"])
        #expect(weak.status == 200)
    }

    @Test("artwork exists at any N×N of a known album; the 600x600 rule works")
    func artwork() throws {
        let client = try RawHTTPClient(port: server.port)
        let small = try client.request(song.artworkPath(size: 100))
        let large = try client.request(song.artworkPath(size: 600))
        #expect(small.status == 200)
        #expect(large.status == 200)
        #expect(large.headers["Content-Type"] == "image/jpeg")
        #expect(large.body.count > small.body.count)
        #expect(large.body == server.catalog.artworkBytes(for: song, size: 600))
        #expect(Array(large.body.prefix(3)) == [0xFF, 0xD8, 0xFF])
        #expect(try client.request("/image/thumb/1/100x100bb.jpg").status == 404)
        #expect(try client.request("/image/thumb/\(song.collectionId)/100x60bb.jpg").status == 404)
    }

    @Test("unknown paths are 404, other methods 405")
    func notFound() throws {
        let client = try RawHTTPClient(port: server.port)
        #expect(try client.request("/nothing/here").status == 404)
        // A preview path must match the song's exactly, not just end in its file name.
        let misplaced = "/itunes-assets/AudioPreview125/v4/zz/zz/mzaf_\(song.trackId).plus.aac.p.m4a"
        #expect(try client.request(misplaced).status == 404)
        let post = try client.request("/search?term=a", method: "POST", headers: ["Content-Length: 0"])
        #expect(post.status == 405)
        #expect(post.headers["Allow"] == "GET, HEAD")
    }

    @Test("added files: bytes as given, generated ones reproducible by range, paths percent-decoded")
    func addedFiles() throws {
        server.addFile(path: "/lists/a b.txt", bytes: Array("hello".utf8))
        server.addFile(path: "/big.bin", size: 512 << 20, seed: 7)
        let client = try RawHTTPClient(port: server.port)
        let small = try client.request("/lists/a%20b.txt")
        #expect(small.status == 200)
        #expect(small.text == "hello")
        let head = try client.request("/big.bin", method: "HEAD")
        #expect(head.headers["Content-Length"] == String(512 << 20))
        let start: Int64 = (300 << 20) + 12_345
        let tail = try client.request("/big.bin", headers: ["Range: bytes=\(start)-\(start + 199_999)"])
        #expect(tail.status == 206)
        #expect(tail.body == server.contentBytes(path: "/big.bin", range: start..<(start + 200_000)))
        // Generated content is random access: a range equals the same slice of a longer read.
        let longer = try #require(server.contentBytes(path: "/big.bin", range: (start - 1000)..<(start + 1000)))
        #expect(Array(longer[1000..<2000]) == Array(tail.body[0..<1000]))
        server.removeFile(path: "/lists/a b.txt")
        #expect(try client.request("/lists/a%20b.txt").status == 404)
    }

    @Test("a conditional GET of the version served is 304 with its validators and no body; another version is 200")
    func conditionalGet() throws {
        server.addFile(path: "/feed.xml", bytes: Array("<rss/>".utf8), contentType: "application/rss+xml")
        let client = try RawHTTPClient(port: server.port)
        let etag = try #require(server.etag(path: "/feed.xml"))
        let unchanged = try client.request("/feed.xml", headers: ["If-None-Match: \(etag)"])
        #expect(unchanged.status == 304)
        #expect(unchanged.body.isEmpty)
        #expect(unchanged.headers["ETag"] == etag)
        let weak = try client.request("/feed.xml", headers: ["If-None-Match: \"other\", W/\(etag)"])
        #expect(weak.status == 304)
        let byDate = try client.request(
            "/feed.xml", headers: ["If-Modified-Since: \(MockCatalogServer.lastModified)"])
        #expect(byDate.status == 304)
        let changed = try client.request("/feed.xml", headers: ["If-None-Match: \"v0\""])
        #expect(changed.status == 200)
        #expect(changed.body == Array("<rss/>".utf8))
        // If-None-Match decides when both are sent (RFC 9110 13.2.2).
        let both = try client.request(
            "/feed.xml", headers: ["If-None-Match: \"v0\"", "If-Modified-Since: \(MockCatalogServer.lastModified)"])
        #expect(both.status == 200)
    }
}

@Suite("Real audio previews")
struct RealAudioTests {
    @Test("a catalog that serves real audio answers each preview with a small AAC file in M4A, with Range")
    func realAudio() throws {
        let server = try MockCatalogServer(catalog: MockCatalog.standard.withRealAudio())
        let song = server.catalog.songs[7]
        let client = try RawHTTPClient(port: server.port)
        let response = try client.request(song.previewPath)
        let expected = server.catalog.previewBytes(for: song)
        #expect(response.status == 200)
        #expect(response.body == expected)
        #expect((4_000...40_000).contains(expected.count))
        #expect(Array(expected[4..<11]) == Array("ftypM4A".utf8))
        // An AAC track: the sample description names mp4a.
        let text = String(decoding: expected.map { $0 < 0x80 ? $0 : 0x3F }, as: UTF8.self)
        #expect(text.contains("mp4a"))
        #expect(server.contentSize(path: song.previewPath) == Int64(expected.count))
        let part = try client.request(song.previewPath, headers: ["Range: bytes=10-19"])
        #expect(part.status == 206)
        #expect(part.body == Array(expected[10..<20]))
    }
}
