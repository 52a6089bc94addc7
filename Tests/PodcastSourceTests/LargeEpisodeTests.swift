import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import PodcastSource

/// Episodes are large: the fault matrix's resume case at a podcast's size, and the per-host cap across feeds.
struct LargeEpisodeTests {
    enum TransportKind: String, CaseIterable, Sendable {
        case curl
        case foundation
    }

    /// A connection reset at 80% of a 200 MB episode: the retry asks for the rest with `Range` and `If-Range`, the
    /// server sends only the rest, and the stored file is the served file byte for byte.
    @Test(arguments: TransportKind.allCases)
    func aResetAtEightyPercentResumes(_ transport: TransportKind) async throws {
        let fixture = try PodcastFixture()
        let size: Int64 = 200_000_000
        fixture.server.addFile(path: "/cdn/long.mp3", size: size, seed: 80, contentType: "audio/mpeg")
        let feed = """
            <rss version="2.0"><channel><title>Long</title><item><title>Three hours</title><guid>long-1</guid>
            <pubDate>Tue, 01 Oct 2024 06:00:00 +0000</pubDate>
            <enclosure url="\(fixture.server.url(path: "/cdn/long.mp3"))" length="\(size)" type="audio/mpeg"/>
            </item></channel></rss>
            """
        fixture.server.addFile(path: "/long.xml", bytes: Array(feed.utf8), contentType: "application/rss+xml")
        let attempts = Mutex(0)
        fixture.server.setFaultHook { request in
            guard request.path == "/cdn/long.mp3" else { return nil }
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            return attempt == 1 ? .reset(afterBytes: Int(size * 8 / 10)) : nil
        }
        let run = try await fixture.run(
            source: "  feeds: [\(fixture.server.url(path: "/long.xml"))]",
            transport: "  use: \(transport.rawValue)\n  concurrency: 2")
        #expect(run.failures.isEmpty, "\(run.failures)")
        #expect(run.summary.stored == 1)

        let episodeRequests = fixture.server.requests.filter { $0.path == "/cdn/long.mp3" }
        #expect(episodeRequests.count == 2)
        let resume = try #require(episodeRequests.last)
        let range = try #require(resume.headers["Range"])
        let offset = try #require(Int64(range.dropFirst("bytes=".count).dropLast()))
        #expect(range.hasPrefix("bytes=") && range.hasSuffix("-"))
        #expect(offset > size / 2 && offset <= size * 8 / 10, "resumed from \(offset)")
        #expect(resume.headers["If-Range"] == fixture.server.etag(path: "/cdn/long.mp3"))
        // The rest only: the first 80% and the remaining 20%, not the file twice.
        #expect(fixture.server.bytesServed < size + size / 10)

        let stored = fixture.folder.appendingPathComponent("out/Long/2024-10-01 Three hours.mp3")
        let handle = try FileHandle(forReadingFrom: stored)
        defer { try? handle.close() }
        #expect(try handle.seekToEnd() == UInt64(size))
        try handle.seek(toOffset: 0)
        let chunk: Int64 = 8 << 20
        var position: Int64 = 0
        while position < size {
            let length = min(chunk, size - position)
            let read = try handle.read(upToCount: Int(length)) ?? Data()
            let served = Data(
                fixture.server.contentBytes(path: "/cdn/long.mp3", range: position..<(position + length)) ?? [])
            guard read == served else {
                Issue.record("the stored file differs from the served one in bytes \(position)..<\(position + length)")
                break
            }
            position += length
        }
    }

    /// The curl transport's per-host cap holds across feeds whose episodes share a host (one CDN): six
    /// slow episodes from two feeds, concurrency 6, per-host 2, reach the host over two connections at most.
    @Test func thePerHostCapSpansFeeds() async throws {
        let fixture = try PodcastFixture()
        var feeds: [URL] = []
        for show in ["a", "b"] {
            var items = ""
            for number in 1...3 {
                let path = "/cdn/\(show)\(number).mp3"
                fixture.server.addFile(path: path, size: 1_000_000, seed: UInt64(number), contentType: "audio/mpeg")
                items +=
                    "<item><title>\(show)\(number)</title><guid>\(show)\(number)</guid>"
                    + "<enclosure url=\"\(fixture.server.url(path: path))\" type=\"audio/mpeg\"/></item>"
            }
            let feed = "<rss version=\"2.0\"><channel><title>\(show)</title>\(items)</channel></rss>"
            fixture.server.addFile(path: "/\(show).xml", bytes: Array(feed.utf8), contentType: "application/rss+xml")
            feeds.append(fixture.server.url(path: "/\(show).xml"))
        }
        // Each episode takes about half a second, so all six are wanted at once.
        fixture.server.setFaultHook { request in
            request.path.hasPrefix("/cdn/") ? .drip(bytesPerSecond: 2_000_000) : nil
        }
        let source = "  feeds: [\(feeds[0]), \(feeds[1])]"
        let capped = try await fixture.run(source: source, transport: "  use: curl\n  concurrency: 6\n  per-host: 2")
        #expect(capped.summary.stored == 6)
        let connections = Set(fixture.server.requests.filter { $0.path.hasPrefix("/cdn/") }.map(\.connection))
        #expect(connections.count <= 2, "episodes came over \(connections.count) connections")
    }
}
