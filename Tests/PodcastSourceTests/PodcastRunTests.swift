import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import PodcastSource

/// Whole runs of `use: podcast` against real feeds served from loopback: what is stored, under which names, and
/// what a second run costs.
struct PodcastRunTests {
    /// Two hosts' feeds: every episode stored once, under `{album}/{release-date} {title}.{ext}` (the source's
    /// suggested layout), with exactly the served bytes.
    @Test func storesEveryEpisodeUnderTheShowAndDate() async throws {
        let fixture = try PodcastFixture()
        let simplecast = try fixture.serveFeed(try PodcastFixture.fixture("simplecast-critical-role.xml"), at: "/a.xml")
        let anchor = try fixture.serveFeed(try PodcastFixture.fixture("anchor-mbmbam.xml"), at: "/b.xml")
        let run = try await fixture.run(source: "  feeds: [\(simplecast), \(anchor)]")
        #expect(run.failures.isEmpty)
        #expect(run.summary.stored == 5)
        let files = try fixture.storedFiles()
        let expected: Set<String> = [
            "Critical Role/2022-09-29 C3E35 Pyrrhic Return.mp3",
            "Critical Role/2022-09-22 C3E34 What Dreams May Come.mp3",
            "My Brother, My Brother And Me/2020-07-24 MBMBaM 407 - Morton Shart's Joke School.m4a",
            "My Brother, My Brother And Me/2020-07-24 MBMBaM 406- Face 2 Face- Sweet Dreams, Timothy.m4a",
            "My Brother, My Brother And Me/2020-07-24 MBMBaM 405- Gumpy, Hey!.m4a",
        ]
        #expect(Set(files.keys) == expected)
        let served = Set(fixture.episodes.values.map { fixture.bytes($0.path) })
        #expect(Set(files.values) == served)
        #expect(files["Critical Role/2022-09-29 C3E35 Pyrrhic Return.mp3"]?.count == 40_000)
    }

    /// The second run over unchanged feeds asks each with a conditional GET, gets 304s, and fetches no episode.
    @Test func aSecondRunCostsOnly304s() async throws {
        let fixture = try PodcastFixture()
        let a = try fixture.serveFeed(try PodcastFixture.fixture("libsyn-critical-role-nerdist.xml"), at: "/a.xml")
        let b = try fixture.serveFeed(try PodcastFixture.fixture("spotify-anchor-podcast-namespace.xml"), at: "/b.xml")
        let first = try await fixture.run(source: "  feeds: [\(a), \(b)]")
        #expect(first.summary.stored == 4)
        let before = try fixture.storedFiles()
        fixture.server.resetLog()

        let second = try await fixture.run(source: "  feeds: [\(a), \(b)]")
        let requests = fixture.server.requests
        #expect(requests.map(\.path).sorted() == ["/a.xml", "/b.xml"])
        #expect(requests.allSatisfy { $0.headers["If-None-Match"] != nil && $0.headers["If-Modified-Since"] != nil })
        #expect(fixture.server.bytesServed == 0, "a 304 has no body")
        #expect(second.summary.stored == 0)
        #expect(second.summary.alreadyStored == 4)
        #expect(second.summary.failed == 0)
        #expect(second.notices.contains { $0.contains("0 fetched, 2 unchanged (304") })
        #expect(try fixture.storedFiles() == before)
    }

    /// A feed that changed is fetched whole again, and only its new episode is downloaded.
    @Test func aChangedFeedBringsOnlyItsNewEpisode() async throws {
        let fixture = try PodcastFixture()
        let text = try PodcastFixture.fixture("anchor-mbmbam.xml")
        let url = try fixture.serveFeed(text, at: "/feed.xml")
        #expect(try await fixture.run(source: "  feeds: [\(url)]").summary.stored == 3)

        let newEpisode = """
                <item><title>MBMBaM 408 - New</title><guid>new-408</guid>
                <pubDate>Mon, 27 Jul 2020 12:00:00 GMT</pubDate>
                <enclosure url="\(fixture.server.url(path: "/new/408.m4a"))" length="1000" type="audio/x-m4a"/></item>
            """
        fixture.server.addFile(path: "/new/408.m4a", size: 30_000, seed: 408, contentType: "audio/x-m4a")
        let changed = fixture.bytes("/feed.xml").replacing(
            Data("<item>".utf8), with: Data((newEpisode + "<item>").utf8), maxReplacements: 1)
        fixture.server.addFile(path: "/feed.xml", bytes: Array(changed), contentType: "application/rss+xml")
        fixture.server.resetLog()

        let second = try await fixture.run(source: "  feeds: [\(url)]")
        #expect(second.summary.stored == 1)
        #expect(second.summary.alreadyStored == 3)
        #expect(fixture.server.requests.map(\.path) == ["/feed.xml", "/new/408.m4a"])
        #expect(
            try fixture.storedFiles()["My Brother, My Brother And Me/2020-07-27 MBMBaM 408 - New.m4a"]
                == fixture.bytes("/new/408.m4a"))
    }

    /// `max-episodes` takes the newest, whatever order the feed lists them in; `since` leaves older ones out.
    @Test func maxEpisodesAndSince() async throws {
        let fixture = try PodcastFixture()
        let url = try fixture.serveFeed(try PodcastFixture.fixture("libsyn-critical-role-nerdist.xml"), at: "/f.xml")
        let newest = try await fixture.run(source: "  feeds: [\(url)]\n  max-episodes: 1")
        #expect(newest.stored == ["Critical Role/2018-05-17 C2E19 The Gentleman's Path.mp3"])

        let fixture2 = try PodcastFixture()
        let url2 = try fixture2.serveFeed(try PodcastFixture.fixture("libsyn-critical-role-nerdist.xml"), at: "/f.xml")
        let since = try await fixture2.run(source: "  feeds: [\(url2)]\n  since: 2018-05-12")
        #expect(
            Set(since.stored) == [
                "Critical Role/2018-05-17 C2E19 The Gentleman's Path.mp3",
                "Critical Role/2018-05-15 Talks Machina_ Discussing C2E18 - Whispers of War.mp3",
            ])
    }

    /// An OPML export: nested outlines are read, a repeated feed is read once, a feed that is not http fails alone.
    @Test func opmlSubscriptions() async throws {
        let fixture = try PodcastFixture()
        let a = try fixture.serveFeed(try PodcastFixture.fixture("podlove-atom.xml"), at: "/a.xml")
        let b = try fixture.serveFeed(try PodcastFixture.fixture("spotify-anchor-podcast-namespace.xml"), at: "/b.xml")
        let opml = try PodcastFixture.fixture("subscriptions.opml")
            .replacingOccurrences(of: "FEED_A", with: a.absoluteString)
            .replacingOccurrences(of: "FEED_B", with: b.absoluteString)
        try opml.write(to: fixture.folder.appendingPathComponent("subs.opml"), atomically: true, encoding: .utf8)
        let run = try await fixture.run(source: "  opml: subs.opml")
        #expect(run.summary.stored == 2)
        #expect(run.failures.count == 1)
        #expect(
            run.failures.first?.contains("subs.opml:13: the feed URL \"ftp://example.invalid/feed.xml\"") == true,
            "\(run.failures)")
        #expect(
            Set(try fixture.storedFiles().keys) == [
                "Podlove Podcast/2012-03-26 Fiat Lux.mp3",
                "エンジニアの生存戦略ラジオ/2025-06-17 なぜClaudeCodeなのか_.m4a",
            ], "\(run.stored)")
        #expect(fixture.server.requests.filter { $0.path == "/a.xml" }.count == 1)
    }

    /// `ids:` and `term:` find feeds through the iTunes API's `feedUrl` (answered here as Apple answers).
    @Test func idsAndTermFindFeedsThroughITunes() async throws {
        let fixture = try PodcastFixture()
        let a = try fixture.serveFeed(try PodcastFixture.fixture("podlove-atom.xml"), at: "/a.xml")
        let b = try fixture.serveFeed(try PodcastFixture.fixture("spotify-anchor-podcast-namespace.xml"), at: "/b.xml")
        let lookup = """
            {"resultCount":1,"results":[{"wrapperType":"track","kind":"podcast","collectionId":1001,
            "collectionName":"Podlove Podcast","feedUrl":"\(a)","artworkUrl100":"https://x/100x100bb.jpg"}]}
            """
        let search = """
            {"resultCount":2,"results":[{"wrapperType":"track","kind":"podcast","collectionId":2002,
            "collectionName":"Radio","feedUrl":"\(b)"},{"wrapperType":"track","kind":"podcast","collectionId":3003,
            "collectionName":"No feed"}]}
            """
        fixture.server.setFaultHook { request in
            switch request.path {
            case "/lookup":
                request.query("id") == "1001,404" && request.query("entity") == "podcast"
                    ? .respond(status: 200, headers: [("Content-Type", "text/javascript")], body: Array(lookup.utf8))
                    : .respond(status: 400, headers: [], body: [])
            case "/search":
                request.query("term") == "radio show" && request.query("media") == "podcast"
                    ? .respond(status: 200, headers: [("Content-Type", "text/javascript")], body: Array(search.utf8))
                    : .respond(status: 400, headers: [], body: [])
            default: nil
            }
        }
        let run = try await fixture.run(
            source:
                "  ids: [\"1001\", \"404\"]\n  term: radio show\n  max-shows: 2\n  endpoint: \(fixture.server.baseURL)")
        #expect(run.summary.stored == 2)
        #expect(run.failures.count == 2)
        #expect(run.failures.contains { $0.contains("no podcast with the id 404") })
        #expect(run.failures.contains { $0.contains("has no feedUrl") })
        #expect(try fixture.storedFiles().count == 2)
    }

    /// Tracking prefixes redirect an enclosure through several hops (podtrac, then chartable, then the CDN):
    /// followed within `max-redirects`, and the bytes stored are the CDN's.
    @Test func trackingRedirectChains() async throws {
        let fixture = try PodcastFixture()
        fixture.server.addFile(path: "/cdn/ep1.mp3", size: 123_456, seed: 1, contentType: "audio/mpeg")
        let chain = "/dts.podtrac.com/redirect.mp3/chrt.fm/track/ABC/cdn/ep1.mp3"
        let long = "/hop/1/ep2.mp3"
        fixture.server.setFaultHook { request in
            switch request.path {
            case chain: .redirect(status: 302, location: "/chrt.fm/track/ABC/cdn/ep1.mp3")
            case "/chrt.fm/track/ABC/cdn/ep1.mp3": .redirect(status: 301, location: "/pdst.fm/e/cdn/ep1.mp3")
            case "/pdst.fm/e/cdn/ep1.mp3": .redirect(status: 307, location: "/cdn/ep1.mp3")
            default:
                // Twelve hops: more than the transport's max-redirects (10, its default).
                if request.path.hasPrefix("/hop/"), let n = Int(request.path.split(separator: "/")[1]), n < 12 {
                    .redirect(status: 302, location: "/hop/\(n + 1)/ep2.mp3")
                } else {
                    nil
                }
            }
        }
        let feed = """
            <rss version="2.0"><channel><title>Tracked</title>
            <item><title>One</title><guid>1</guid><pubDate>Mon, 01 Jan 2024 00:00:00 GMT</pubDate>
            <enclosure url="\(fixture.server.url(path: chain))" type="audio/mpeg"/></item>
            <item><title>Two</title><guid>2</guid><pubDate>Sun, 31 Dec 2023 00:00:00 GMT</pubDate>
            <enclosure url="\(fixture.server.url(path: long))" type="audio/mpeg"/></item>
            </channel></rss>
            """
        fixture.server.addFile(path: "/feed.xml", bytes: Array(feed.utf8), contentType: "application/rss+xml")
        let run = try await fixture.run(
            source: "  feeds: [\(fixture.server.url(path: "/feed.xml"))]",
            extra: "")
        #expect(run.summary.stored == 1)
        #expect(try fixture.storedFiles()["Tracked/2024-01-01 One.mp3"] == fixture.bytes("/cdn/ep1.mp3"))
        #expect(run.failures.count == 1)
        #expect(run.failures.first?.contains("redirects") == true)
    }
}

/// The example config loads with the bundled plugins, and the source's suggestions fill what a config leaves out.
struct PodcastConfigTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func theExampleConfigLoads() throws {
        let spec = try ConfigLoader.load(
            path: Self.root.appendingPathComponent("config/podcast.yaml").path, registry: BundledPlugins.registry)
        #expect(spec.source.name == "podcast")
        #expect(spec.sink.options.string("layout") == PodcastSource.defaultLayout)
        #expect(spec.download.integer("max-size") == 1_000_000_000)
        #expect(try PodcastSource.configuration(from: spec.source.options).feeds.count == 2)
    }

    @Test func withoutASinkOrDownloadSectionThePodcastDefaultsApply() throws {
        let spec = try ConfigLoader.load(
            text: "source: {use: podcast, feeds: [https://example.org/feed.xml]}", path: "p.yaml",
            baseDirectory: FileManager.default.temporaryDirectory, registry: BundledPlugins.registry)
        #expect(spec.sink.options.string("layout") == "{album}/{release-date} {title}.{ext}")
        #expect(spec.download.integer("max-size") == 2_000_000_000)
        #expect(try PodcastSource.configuration(from: spec.source.options).maxEpisodes == 10)
    }

    @Test(arguments: [
        ("source: {use: podcast}", "needs feeds:"),
        ("source: {use: podcast, feeds: [ftp://x/feed.xml]}", "not an http(s) URL"),
        ("source: {use: podcast, ids: [abc]}", "not an iTunes podcast id"),
        ("source: {use: podcast, term: x, since: soon}", "\"soon\" is not a date"),
        ("source: {use: podcast, opml: missing.opml}", "no such OPML file"),
    ])
    func badOptionsAreConfigErrors(_ yaml: String, _ message: String) throws {
        let spec = try ConfigLoader.load(
            text: yaml, path: "p.yaml", baseDirectory: FileManager.default.temporaryDirectory,
            registry: BundledPlugins.registry)
        #expect {
            _ = try PodcastSource.configuration(from: spec.source.options)
        } throws: { error in
            String(describing: error).contains(message)
        }
    }
}
