import Foundation
import Testing

@testable import PodcastSource

/// The parser on the committed real feeds: each value read is checked against what the feed says.
struct FeedParserTests {
    static func parse(_ name: String) throws -> Feed {
        try FeedParser.parse(Data(try PodcastFixture.fixture(name).utf8), url: name)
    }

    static func date(_ text: String) -> Date? {
        try? Date(text, strategy: .iso8601)
    }

    @Test func simplecast() throws {
        let feed = try Self.parse("simplecast-critical-role.xml")
        #expect(feed.title == "Critical Role")
        #expect(feed.author == "Critical Role")
        #expect(feed.category == "Leisure")
        #expect(feed.artwork?.hasPrefix("https://image.simplecastcdn.com/images/a74173a8") == true)
        #expect(feed.episodes.count == 2)
        let first = try #require(feed.episodes.first)
        #expect(first.guid == "aa07f167-0cc0-42c6-816b-c9b13b314861")
        #expect(first.title == "C3E35 Pyrrhic Return")
        #expect(first.author?.hasPrefix("Matthew Mercer, Marisha Ray") == true)
        #expect(first.date?.date == Self.date("2022-09-29T12:00:00Z"))
        #expect(first.durationMillis == (4 * 3600 + 26 * 60 + 45) * 1000)
        #expect(first.episodeType == "full")
        // `&amp;` in the attribute is one `&` in the URL.
        #expect(
            first.enclosure?.url.hasSuffix(
                "default.mp3?aid=rss_feed&awCollectionId=a74173a8-254a-45ff-aee0-b0cd0458d7f1&awEpisodeId=3a57cdda-f65b-4ac3-a695-f8222abca9cc&feed=LXz4Q9rJ"
            ) == true)
        #expect(first.enclosure?.length == 256_092_153)
        #expect(first.enclosure?.type == "audio/mpeg")
    }

    @Test func libsynWithCDATAGuidsAndTheOldPodcastNamespace() throws {
        let feed = try Self.parse("libsyn-critical-role-nerdist.xml")
        #expect(feed.title == "Critical Role")
        #expect(feed.author == "Nerdist Industries")
        #expect(
            feed.artwork == "http://static.libsyn.com/p/assets/b/3/0/4/b304ecb21498568a/16_criticalrole_1400x1400.jpg")
        #expect(
            feed.episodes.map(\.guid) == [
                "609d09e9-7cff-4818-8818-bcd90367360c", "6f532856-257f-48dc-827b-2c07da3483c6",
                "b9858c60-12a5-482f-b1dd-bb7ba2aae4c0",
            ])
        #expect(
            feed.episodes.map(\.title) == [
                "C2E19 The Gentleman's Path", "Talks Machina: Discussing C2E18 - Whispers of War",
                "C2E18 Whispers of War",
            ])
        #expect(feed.episodes.map(\.durationMillis) == [12875000, 5360000, 15048000])
        #expect(feed.episodes[1].date?.date == Self.date("2018-05-15T16:00:00Z"))
        #expect(
            feed.episodes[0].enclosure?.url
                == "http://traffic.libsyn.com/critrole/20180517_g_criticalrole_2019_2997_MP3.mp3?dest-id=2165780")
        #expect(feed.episodes[0].artwork == feed.artwork)
    }

    @Test func anchorWithSecondsAndDublinCore() throws {
        let feed = try Self.parse("anchor-mbmbam.xml")
        #expect(feed.title == "My Brother, My Brother And Me")
        #expect(feed.episodes.count == 3)
        let first = try #require(feed.episodes.first)
        // The feed's leading space is not part of the title.
        #expect(first.title == "MBMBaM 407 - Morton Shart's Joke School")
        #expect(first.durationMillis == 3_579_000)
        #expect(first.date?.date == Self.date("2020-07-24T12:48:03Z"))
        #expect(first.enclosure?.type == "audio/x-m4a")
        #expect(first.enclosure?.length == 57_885_440)
        #expect(first.author == "My Brother, My Brother And Me")
    }

    @Test func podcastingTwoPointOhNamespaceWithSeasonAndEpisode() throws {
        let feed = try Self.parse("spotify-anchor-podcast-namespace.xml")
        #expect(feed.title == "エンジニアの生存戦略ラジオ")
        #expect(feed.author == "わいこ")
        let episode = try #require(feed.episodes.first)
        #expect(episode.title == "なぜClaudeCodeなのか?")
        #expect(episode.season == 1)
        #expect(episode.number == 1)
        #expect(episode.durationMillis == 240_000)
        #expect(episode.date?.date == Self.date("2025-06-17T09:29:22Z"))
    }

    @Test func atom() throws {
        let feed = try Self.parse("podlove-atom.xml")
        #expect(feed.title == "Podlove Podcast")
        #expect(feed.author == "Tim Pritlove")
        let entry = try #require(feed.episodes.first)
        #expect(entry.guid == "urn:uuid:3241ace2-ca21-dd12-2341-1412ce31fad2")
        #expect(entry.title == "Fiat Lux")
        #expect(
            entry.enclosure == Enclosure(url: "http://podlove.org/files/fiatlux.mp3", length: 12345, type: "audio/mpeg")
        )
        // No `published`: `updated` stands in.
        #expect(entry.date?.date == Self.date("2012-03-26T23:25:19Z"))
    }

    @Test func podcastNamespaceNumbersWhenItunesHasNone() throws {
        let xml = """
            <rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0"
                 xmlns:i="http://www.itunes.com/DTDs/Podcast-1.0.dtd"><channel><title>S</title>
            <item><title>A</title><podcast:season name="Two">2</podcast:season><podcast:episode>7</podcast:episode>
            <i:duration>1:02:03</i:duration><enclosure url="a.mp3"/></item>
            <item/></channel></rss>
            """
        let feed = try FeedParser.parse(Data(xml.utf8), url: "inline")
        #expect(feed.episodes.count == 2)
        #expect(feed.episodes[0].season == 2)
        #expect(feed.episodes[0].number == 7)
        // Another prefix and the old capitalised iTunes URI are the same namespace.
        #expect(feed.episodes[0].durationMillis == 3_723_000)
        #expect(feed.episodes[1].enclosure == nil)
    }

    @Test func invalidXMLNamesLineAndColumn() throws {
        let xml = "<rss><channel>\n<title>x</title>\n<item><title>broken</item>\n</channel></rss>"
        #expect {
            try FeedParser.parse(Data(xml.utf8), url: "inline")
        } throws: { error in
            guard let failure = error as? XMLReader.Failure else { return false }
            return failure.line == 3 && failure.column > 0 && failure.message.contains("mismatch")
        }
    }

    @Test func aDocumentThatIsNoFeed() throws {
        #expect(throws: FeedParser.NotAFeed.self) {
            try FeedParser.parse(Data("<html><body>Moved</body></html>".utf8), url: "inline")
        }
    }
}

/// Dates as feeds really write them.
struct RFC822DateTests {
    static let expected = try? Date("2024-01-05T09:03:07Z", strategy: .iso8601)

    @Test(arguments: [
        "Fri, 05 Jan 2024 09:03:07 +0000",
        "Fri, 05 Jan 2024 09:03:07 -0000",
        "Fri, 05 Jan 2024 09:03:07 GMT",
        "Fri, 05 Jan 2024 09:03:07 UT",
        "Fri, 5 Jan 2024 09:03:07 +0000",
        "5 Jan 2024 09:03:07 +0000",
        "Fri 05 Jan 2024 09:03:07 +0000",
        "Mon, 05 Jan 2024 09:03:07 +0000",
        "Friday, 05 January 2024 09:03:07 GMT",
        "Fri, 05 Jan 24 09:03:07 +0000",
        "Fri, 05 Jan 2024 04:03:07 EST",
        "Fri, 05 Jan 2024 01:03:07 PST",
        "Fri, 05 Jan 2024 14:33:07 +05:30",
        "Fri, 05 Jan 2024 09:03:07 +0000 (UTC)",
        "Fri, 05 Jan 2024 09:03:07",
        "Fri, 05 Jan 2024 9:03:07 Z",
        "2024-01-05T09:03:07Z",
        "2024-01-05T10:03:07+01:00",
        "2024-01-05T09:03:07.000Z",
    ])
    func readsTheSameMoment(_ text: String) {
        #expect(RFC822Date.parse(text) == Self.expected, "\(text)")
    }

    @Test func minutesOnly() {
        #expect(
            RFC822Date.parse("Fri, 05 Jan 2024 09:03 +0000") == (try? Date("2024-01-05T09:03:00Z", strategy: .iso8601)))
    }

    @Test(arguments: [
        "", "yesterday", "Fri, 32 Jan 2024 09:03:07 +0000", "Fri, 05 Foo 2024 09:03:07 +0000",
        "Fri, 30 Feb 2024 09:03:07 +0000", "Fri, 05 Jan 2024 25:03:07 +0000", "{{pubDate}}",
    ])
    func nonsenseIsNoDate(_ text: String) {
        #expect(RFC822Date.parse(text) == nil, "\(text)")
    }
}

/// `itunes:duration` in all its forms.
struct EpisodeDurationTests {
    @Test(arguments: [
        ("3579", 3_579_000), ("3579.5", 3_579_500), ("59:59", 3_599_000), ("75:30", 4_530_000),
        ("1:02:03", 3_723_000), ("04:26:45", 16_005_000), ("00:42:50.250", 2_570_250), (" 90 ", 90_000),
    ])
    func reads(_ text: String, _ milliseconds: Int) {
        #expect(EpisodeDuration.milliseconds(text) == milliseconds, "\(text)")
    }

    @Test(arguments: ["", "abc", "1:2:3:4", "10:75", "-5", "1::2", "1e5"])
    func nonsenseIsNoDuration(_ text: String) {
        #expect(EpisodeDuration.milliseconds(text) == nil, "\(text)")
    }
}
