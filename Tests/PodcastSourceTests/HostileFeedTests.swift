import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import PodcastSource

/// Feeds written to hurt: each is a clear failure or skip of that feed or episode, the rest of the run goes on,
/// and nothing outside the feed is ever read.
struct HostileFeedTests {
    /// Every byte the run left behind: stored files, their names, the state folder (ledger included).
    static func everything(under folder: URL) throws -> Data {
        var all = Data()
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return all }
        while let relative = walker.nextObject() as? String {
            all += Data(relative.utf8)
            let path = folder.appendingPathComponent(relative).path
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                all += (try? Data(contentsOf: URL(fileURLWithPath: path))) ?? Data()
            }
        }
        return all
    }

    static func feed(title: String, items: String, doctype: String = "") -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        \(doctype)
        <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"><channel><title>\(title)</title>
        \(items)
        </channel></rss>
        """
    }

    /// External entities (a local file, a DTD from the network, a parameter entity) are never loaded: the secret
    /// appears nowhere, not in names, files, the ledger or messages, and the server gets no request for the DTD.
    @Test func externalEntitiesLeakNothing() async throws {
        let fixture = try PodcastFixture()
        let secret = "TOP-SECRET-\(UUID().uuidString)"
        let secretFile = fixture.folder.appendingPathComponent("secret.txt")
        try secret.write(to: secretFile, atomically: true, encoding: .utf8)
        fixture.server.addFile(path: "/evil.dtd", bytes: Array("<!ENTITY leak SYSTEM \"\(secretFile.path)\">".utf8))
        fixture.server.addFile(path: "/x.mp3", size: 10_000, seed: 1, contentType: "audio/mpeg")
        fixture.server.addFile(path: "/y.mp3", size: 11_000, seed: 2, contentType: "audio/mpeg")
        let dtd = fixture.server.url(path: "/evil.dtd")
        let fileEntity = Self.feed(
            title: "Leak &xxe;",
            items: """
                <item><title>Episode &xxe;</title><guid>x1</guid>
                <itunes:author>&xxe;</itunes:author>
                <enclosure url="\(fixture.server.url(path: "/x.mp3"))" type="audio/mpeg"/></item>
                """,
            doctype: "<!DOCTYPE rss [ <!ENTITY xxe SYSTEM \"file://\(secretFile.path)\"> ]>")
        let parameterEntity = Self.feed(
            title: "Remote",
            items: """
                <item><title>Other &leak;</title><guid>y1</guid>
                <enclosure url="\(fixture.server.url(path: "/y.mp3"))" type="audio/mpeg"/></item>
                """,
            doctype: "<!DOCTYPE rss SYSTEM \"\(dtd)\" [ <!ENTITY % remote SYSTEM \"\(dtd)\"> %remote; ]>")
        fixture.server.addFile(path: "/a.xml", bytes: Array(fileEntity.utf8), contentType: "application/rss+xml")
        fixture.server.addFile(path: "/b.xml", bytes: Array(parameterEntity.utf8), contentType: "application/rss+xml")
        let run = try await fixture.run(
            source: "  feeds: [\(fixture.server.url(path: "/a.xml")), \(fixture.server.url(path: "/b.xml"))]")

        #expect(!fixture.server.requests.contains { $0.path == "/evil.dtd" }, "the DTD was fetched")
        let left =
            try Self.everything(under: fixture.folder.appendingPathComponent("out"))
            + Self.everything(under: fixture.folder.appendingPathComponent("state"))
        #expect(left.range(of: Data(secret.utf8)) == nil, "the secret reached the output or the ledger")
        let messages = (run.failures + run.skips + run.notices).joined(separator: "\n")
        #expect(!messages.contains(secret))
        // The file entity's feed is read without the entity's text; the other names an undeclared entity or
        // reads without it, and either way nothing is stored from outside the feed.
        #expect(try fixture.storedFiles()["Leak/Episode.mp3"] == fixture.bytes("/x.mp3"))
        #expect(run.summary.stored + run.summary.failed == 2)
    }

    /// Billion laughs: libxml2's limits stop the expansion (no `XML_PARSE_HUGE`), the feed fails alone and
    /// quickly, and the other feed of the run is stored.
    @Test func billionLaughsFailsThatFeedOnly() async throws {
        let fixture = try PodcastFixture()
        var entities = "<!ENTITY lol \"lol\">"
        for level in 1...9 {
            let previous = level == 1 ? "lol" : "lol\(level - 1)"
            entities += "<!ENTITY lol\(level) \"" + String(repeating: "&\(previous);", count: 10) + "\">"
        }
        let bomb = Self.feed(
            title: "Laughs",
            items: "<item><title>&lol9;</title><guid>l</guid><enclosure url=\"/l.mp3\"/></item>",
            doctype: "<!DOCTYPE rss [ \(entities) ]>")
        fixture.server.addFile(path: "/bomb.xml", bytes: Array(bomb.utf8), contentType: "application/rss+xml")
        let good = try fixture.serveFeed(try PodcastFixture.fixture("podlove-atom.xml"), at: "/good.xml")
        let started = ContinuousClock.now
        let run = try await fixture.run(source: "  feeds: [\(fixture.server.url(path: "/bomb.xml")), \(good)]")
        let elapsed = ContinuousClock.now - started
        #expect(try fixture.storedFiles().keys.contains("Podlove Podcast/2012-03-26 Fiat Lux.mp3"))
        // Either the feed failed (libxml2 refused the amplification) or its entity was left unexpanded; never
        // a billion laughs in memory or in a name.
        let names = try fixture.storedFiles().keys.joined()
        #expect(!names.contains("lollollol"))
        #expect(run.failures.allSatisfy { $0.contains("/bomb.xml") })
        #expect(elapsed < .seconds(30), "the expansion was not stopped")
    }

    /// A feed larger than max-feed-size fails naming the limit, and its body is not fetched (the server announced
    /// 50 MB); the other feed is stored.
    @Test func aFeedOverTheSizeCapFailsWithoutItsBody() async throws {
        let fixture = try PodcastFixture()
        fixture.server.addFile(path: "/huge.xml", size: 50_000_000, seed: 9, contentType: "application/rss+xml")
        let good = try fixture.serveFeed(try PodcastFixture.fixture("podlove-atom.xml"), at: "/good.xml")
        let run = try await fixture.run(source: "  feeds: [\(fixture.server.url(path: "/huge.xml")), \(good)]")
        #expect(run.summary.stored == 1)
        #expect(run.failures.count == 1)
        #expect(run.failures.first?.contains("/huge.xml: the feed is larger than max-feed-size (20 MB)") == true)
        #expect(fixture.server.bytesServed < 25_000_000, "more than the cap was sent: \(fixture.server.bytesServed)")
    }

    /// Invalid XML fails that feed with its URL, line and column; a page that is not a feed and a 404 fail too.
    @Test func brokenFeedsFailEachWithWhereAndWhy() async throws {
        let fixture = try PodcastFixture()
        let broken = "<?xml version=\"1.0\"?>\n<rss><channel><title>T</title>\n<item><title>x</item></channel></rss>"
        fixture.server.addFile(path: "/broken.xml", bytes: Array(broken.utf8), contentType: "application/rss+xml")
        fixture.server.addFile(path: "/page.html", bytes: Array("<html><body>hi</body></html>".utf8))
        let good = try fixture.serveFeed(try PodcastFixture.fixture("anchor-mbmbam.xml"), at: "/good.xml")
        let broken404 = fixture.server.url(path: "/gone.xml")
        let run = try await fixture.run(
            source: "  feeds: [\(fixture.server.url(path: "/broken.xml")), \(fixture.server.url(path: "/page.html")), "
                + "\(broken404), \(good)]")
        #expect(run.summary.stored == 3)
        #expect(run.failures.count == 3)
        let base = fixture.server.baseURL.absoluteString
        #expect(run.failures.contains { $0.contains("\(base)/broken.xml:3:") && $0.contains("invalid XML") })
        #expect(run.failures.contains { $0.contains("\(base)/page.html: not an RSS or Atom feed") })
        #expect(run.failures.contains { $0.contains("\(base)/gone.xml: HTTP 404") })
        #expect(run.summary.exitCode == 1)
    }

    /// Dates as broken as feeds write them: the readable ones name the file, an unreadable one leaves the date
    /// out, and the undated episode comes after the dated ones.
    @Test func brokenDates() async throws {
        let fixture = try PodcastFixture()
        let dates = [
            ("a", "Mon, 5 Feb 2024 10:00:00 -0000"), ("b", "5 Feb 2024 09:00 EST"), ("c", "Sat, 32 Foo 2024"),
            ("d", "Monday, 05 February 2024 08:00:00"), ("e", "2024-02-04T23:59:59-01:00"),
        ]
        var items = ""
        for (name, date) in dates {
            fixture.server.addFile(path: "/\(name).mp3", size: 5_000, seed: UInt64(name.utf8.first ?? 0))
            items +=
                "<item><title>\(name)</title><guid>\(name)</guid><pubDate>\(date)</pubDate>"
                + "<enclosure url=\"/\(name).mp3\" type=\"audio/mpeg\"/></item>\n"
        }
        fixture.server.addFile(
            path: "/dates.xml", bytes: Array(Self.feed(title: "Dates", items: items).utf8),
            contentType: "application/rss+xml")
        let run = try await fixture.run(source: "  feeds: [\(fixture.server.url(path: "/dates.xml"))]")
        #expect(run.failures.isEmpty)
        // Planned newest first, whatever zone each date was written in; the unreadable one last.
        let feed = try FeedParser.parse(Data(Self.feed(title: "Dates", items: items).utf8), url: "dates")
        let order = PodcastSource(.init()).outputs(feed, feedKey: "k", base: fixture.server.baseURL).compactMap {
            output -> String? in
            if case .item(let item) = output { return item.title }
            return nil
        }
        #expect(order == ["b", "a", "d", "e", "c"])
        #expect(
            Set(try fixture.storedFiles().keys) == [
                "Dates/2024-02-05 a.mp3", "Dates/2024-02-05 b.mp3", "Dates/2024-02-05 d.mp3", "Dates/2024-02-05 e.mp3",
                "Dates/c.mp3",
            ])
    }

    /// A repeated GUID is skipped; relative enclosures resolve against the feed's URL after its redirect; an
    /// enclosure that is not http(s) fails that episode; an episode without one is skipped.
    @Test func badEpisodesAreSkippedOrFailAlone() async throws {
        let fixture = try PodcastFixture()
        for path in ["/new/rel.mp3", "/abs.mp3", "/proto.mp3", "/dup1.mp3", "/dup2.mp3", "/download/12345"] {
            fixture.server.addFile(path: path, size: 7_000, seed: UInt64(path.count), contentType: "audio/mpeg")
        }
        let host = "127.0.0.1:\(fixture.server.port)"
        let items = """
            <item><title>Relative</title><guid>r</guid><pubDate>Fri, 09 Feb 2024 00:00:00 GMT</pubDate>
              <enclosure url="rel.mp3" type="audio/mpeg"/></item>
            <item><title>Rooted</title><guid>s</guid><pubDate>Thu, 08 Feb 2024 00:00:00 GMT</pubDate>
              <enclosure url="/abs.mp3" type="audio/mpeg"/></item>
            <item><title>Scheme relative</title><guid>p</guid><pubDate>Wed, 07 Feb 2024 00:00:00 GMT</pubDate>
              <enclosure url="//\(host)/proto.mp3" type="audio/mpeg"/></item>
            <item><title>First</title><guid>same</guid><pubDate>Tue, 06 Feb 2024 00:00:00 GMT</pubDate>
              <enclosure url="/dup1.mp3" type="audio/mpeg"/></item>
            <item><title>Second</title><guid>same</guid><pubDate>Mon, 05 Feb 2024 00:00:00 GMT</pubDate>
              <enclosure url="/dup2.mp3" type="audio/mpeg"/></item>
            <item><title>Local file</title><guid>f</guid><pubDate>Sun, 04 Feb 2024 00:00:00 GMT</pubDate>
              <enclosure url="file:///etc/passwd" type="audio/mpeg"/></item>
            <item><title>Bare</title><guid>n</guid><pubDate>Sun, 04 Feb 2024 00:00:00 GMT</pubDate>
              <enclosure url="/download/12345" type="audio/mpeg; charset=binary"/></item>
            <item><title>Text only</title><guid>t</guid><pubDate>Sat, 03 Feb 2024 00:00:00 GMT</pubDate></item>
            """
        fixture.server.addFile(
            path: "/new/feed.xml", bytes: Array(Self.feed(title: "Odd", items: items).utf8),
            contentType: "application/rss+xml")
        fixture.server.setFaultHook { request in
            request.path == "/old/feed.xml" ? .redirect(status: 301, location: "/new/feed.xml") : nil
        }
        let run = try await fixture.run(source: "  feeds: [\(fixture.server.url(path: "/old/feed.xml"))]")
        let files = try fixture.storedFiles()
        #expect(files["Odd/2024-02-09 Relative.mp3"] == fixture.bytes("/new/rel.mp3"))
        #expect(files["Odd/2024-02-08 Rooted.mp3"] == fixture.bytes("/abs.mp3"))
        #expect(files["Odd/2024-02-07 Scheme relative.mp3"] == fixture.bytes("/proto.mp3"))
        #expect(files["Odd/2024-02-06 First.mp3"] == fixture.bytes("/dup1.mp3"))
        // No extension in the URL: the enclosure's type gives it.
        #expect(files["Odd/2024-02-04 Bare.mp3"] == fixture.bytes("/download/12345"))
        #expect(files.count == 5)
        #expect(run.skips.contains { $0.contains("the same GUID as \"First\"") })
        #expect(run.skips.contains { $0.contains("has no enclosure") })
        #expect(run.failures.count == 1)
        #expect(run.failures.first?.contains("\"file:///etc/passwd\" is not an http(s) URL") == true)
    }
}
