import Foundation
import MediaFetchCore
import Testing

@testable import MediaFetchTesting

/// The mock replays answers recorded from Apple's API, with their media URLs moved onto loopback and every other
/// byte as recorded, and serves what those URLs point at.
@Suite("recorded answers")
struct RecordedAnswerTests {
    /// The recorded records of ITunesSourceTests, where their sources are written down.
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("ITunesSourceTests/Fixtures/records")

    static func answer(_ file: String, media: String, entity: String? = nil) throws -> MockRecordedAnswer {
        try MockRecordedAnswer(
            media: media, entity: entity, body: try Data(contentsOf: fixtures.appendingPathComponent(file)))
    }

    static func server(_ answers: [MockRecordedAnswer]) throws -> MockCatalogServer {
        try MockCatalogServer(catalog: MockCatalog(songs: MockCatalog.standard.songs, recorded: answers))
    }

    @Test func aSearchOfTheMediaGetsTheRecordsWithTheirMediaURLsOnLoopback() throws {
        let recorded = try Self.answer("ebook.json", media: "ebook")
        let server = try Self.server([recorded])
        let response = try RawHTTPClient(port: server.port).request("/search?term=anything&media=ebook")
        #expect(response.status == 200)
        let answer = try SearchAnswer(response.body)
        #expect(answer.resultCount == 3)
        #expect(answer.results.map(\.trackId) == [916361560, 446259625, 445888986])
        let base = server.baseURL.absoluteString
        // Artwork moved; a store link (trackViewUrl) is not media and stays Apple's.
        #expect(response.text.contains("\"artworkUrl100\":\"\(base)/recorded/is5-ssl.mzstatic.com/image/thumb/"))
        #expect(!response.text.contains("\"https://is5-ssl.mzstatic.com"))
        #expect(response.text.contains("\"trackViewUrl\":\"https://books.apple.com/us/book/hamlet/id446259625?uo=4\""))
        // Apart from the moved URLs, each record is the recorded text.
        for record in recorded.records {
            let moved = record.replacingOccurrences(of: "\"https://is", with: "\"\(base)/recorded/is")
            #expect(response.text.contains(moved))
        }
    }

    @Test func otherMediaAndEntitiesStillSearchTheSongs() throws {
        let server = try Self.server([try Self.answer("album.json", media: "music", entity: "album")])
        let songs = try SearchAnswer(
            try RawHTTPClient(port: server.port).request("/search?term=love&entity=song&limit=3").body)
        #expect(songs.results.map(\.trackId) == server.catalog.search(term: "love").prefix(3).map(\.trackId))
        let albums = try SearchAnswer(try RawHTTPClient(port: server.port).request("/search?term=x&entity=album").body)
        #expect(albums.results.map(\.collectionId) == [1442959667, 1443155637, 1487549700])
    }

    @Test func limitAndOffsetPageThroughTheRecords() throws {
        let server = try Self.server([try Self.answer("music-video.json", media: "musicVideo")])
        let page = try SearchAnswer(
            try RawHTTPClient(port: server.port).request("/search?term=x&media=musicVideo&limit=2&offset=1").body)
        #expect(page.results.map(\.trackId) == [1378778940, 1477046401])
    }

    @Test func artworkIsServedInAnySize() throws {
        let server = try Self.server([try Self.answer("album.json", media: "music", entity: "album")])
        let path = "/recorded/is3-ssl.mzstatic.com/image/thumb/Music115/v4/04/56/73/"
            + "04567328-c82e-bc18-2174-eb862e53fabb/source/"
        let small = try RawHTTPClient(port: server.port).request(path + "100x100bb.jpg")
        let large = try RawHTTPClient(port: server.port).request(path + "600x600bb.jpg")
        #expect(small.status == 200)
        #expect(small.headers["Content-Type"] == "image/jpeg")
        #expect(large.body.count > small.body.count)
        #expect(large.body == server.contentBytes(path: path + "600x600bb.jpg"))
        #expect(Array(large.body.prefix(3)) == [0xFF, 0xD8, 0xFF])
        // A path no record points at is not found.
        #expect(try RawHTTPClient(port: server.port).request("/recorded/is3-ssl.mzstatic.com/other/100x100bb.jpg")
            .status == 404)
    }

    /// A podcast episode's preview is the episode: the mock serves it as long as the episode at 128 kbit/s, so
    /// that a run meets the size a real one has.
    @Test func aWholeEpisodeIsServedAtItsLength() throws {
        let recorded = try Self.answer("podcast-episode.json", media: "podcast", entity: "podcastEpisode")
        let server = try Self.server([recorded])
        let path = "/recorded/dts.podtrac.com/redirect.mp3/chtbl.com/track/3417G2/pdst.fm/e/traffic.omny.fm/d/clips/"
            + "885ace83-027a-47ad-ad67-aca7002f1df8/2360c817-d63b-4596-892b-aca90002beb7/"
            + "229d4b05-66de-4e3d-8682-ad2900086fbd/audio.mp3"
        #expect(server.contentSize(path: path) == Int64(2_800_000 * 16))
        let head = try RawHTTPClient(port: server.port).request(path + "?utm_source=Podcast", method: "HEAD")
        #expect(head.status == 200)
        #expect(head.headers["Content-Type"] == "audio/mpeg")
        #expect(head.headers["Content-Length"] == String(2_800_000 * 16))
    }

    @Test func aPreviewIsServedAtAPreviewsSize() throws {
        let server = try Self.server([try Self.answer("movie.json", media: "movie")])
        let path = "/recorded/video-ssl.itunes.apple.com/itunes-assets/Video82/v4/a3/ef/25/"
            + "a3ef253a-208e-3cbc-cbf0-bc444dae2f8d/mzvf_6313901593442783545.640x354.h264lc.U.p.m4v"
        let size = try #require(server.contentSize(path: path))
        #expect((1_000_000...3_000_000).contains(size))
        let head = try RawHTTPClient(port: server.port).request(path, method: "HEAD")
        #expect(head.headers["Content-Type"] == "video/x-m4v")
    }

    @Test func onlyMediaURLsMoveAndEscapesAreKept() {
        // A key-like text inside a string, a spaced colon, http, and a URL that is not media.
        let record = #"{"a":"x\"previewUrl\": \"https://h/","previewUrl" : "https://a.example/p.m4a","#
            + #""artworkUrl60":"http://b.example/60x60bb.jpg","feedUrl":"https://c.example/f","n":1}"#
        let moved = MockRecordedAnswer.rewrite(record, base: "http://127.0.0.1:9")
        let base = "http://127.0.0.1:9/recorded"
        #expect(
            moved == #"{"a":"x\"previewUrl\": \"https://h/","previewUrl" : "\#(base)/a.example/p.m4a","#
                + #""artworkUrl60":"\#(base)/b.example/60x60bb.jpg","feedUrl":"https://c.example/f","n":1}"#)
    }

    @Test(arguments: [#"{"results": {}}"#, #"[1, 2]"#, "not json", #"{"resultCount": 1}"#])
    func aBodyThatIsNotAnAnswerIsRefused(body: String) {
        #expect(throws: MockServerError.self) { try MockRecordedAnswer(media: "music", body: Data(body.utf8)) }
    }

    @Test func recordsAreSplitAsTheyWereWritten() throws {
        let body = "\n\n{\"resultCount\":2, \"results\": [ {\"a\":\"}]{\"}, {\"b\":[1,{\"c\":2}]} ]}\n"
        let answer = try MockRecordedAnswer(media: "music", body: Data(body.utf8))
        #expect(answer.records == [#"{"a":"}]{"}"#, #"{"b":[1,{"c":2}]}"#])
    }
}
