import Foundation
import MediaFetchCore
import Testing

@testable import ITunesSource

/// Every result kind the API returns decodes, leniently: missing optional fields are normal,
/// unknown ones are ignored, and a record without a preview is still an item (its artwork may be what is stored).
struct DecodingTests {
    /// `Fixtures/<name>.json`; `name` may start with a folder (`records/album`).
    static func fixture(_ name: String) throws -> Data {
        let parts = name.split(separator: "/")
        let folder = (["Fixtures"] + parts.dropLast().map(String.init)).joined(separator: "/")
        let file = String(parts.last ?? "")
        let url = try #require(Bundle.module.url(forResource: file, withExtension: "json", subdirectory: folder))
        return try Data(contentsOf: url)
    }

    static func decode(_ records: [String]) throws -> [ITunesRecord] {
        let body = "\n\n\n{\"resultCount\":\(records.count),\"results\":[\(records.joined(separator: ","))]}\n"
        return try JSONDecoder().decode(ITunesResponse.self, from: Data(body.utf8)).results
    }

    @Test func aRealSongRecordBecomesAFullItem() throws {
        let record = String(decoding: try Self.fixture("song-jack-johnson"), as: UTF8.self)
        let item = try #require(try Self.decode([record]).first?.mediaItem().get())
        #expect(item.id == "1469577741")
        #expect(item.kind == "song")
        #expect(item.title == "Upside Down")
        #expect(item.artist == "Jack Johnson")
        #expect(item.album?.hasPrefix("Jack Johnson and Friends") == true)
        #expect(item.trackNumber == 1)
        #expect(item.discNumber == 1)
        #expect(item.durationMillis == 208643)
        #expect(item.genre == "Rock")
        #expect(item.releaseDate == Date(timeIntervalSince1970: 1_104_580_800))
        #expect(item.previewURL?.absoluteString.hasSuffix("mzaf_13341178261601361485.plus.aac.p.m4a") == true)
        #expect(item.artworkURL?.absoluteString.hasSuffix("100x100bb.jpg") == true)
        #expect(item.fileExtension(for: .preview) == "m4a")
        #expect(item.raw?["currency"]?.stringValue == "USD")
    }

    /// One record of each kind, shaped as the API sends them (FACTS.md: what each kind lacks), with the kind the
    /// item gets and whether it has a preview.
    static let kinds: [(name: String, json: String, id: String?, title: String, kind: String, preview: Bool)] = [
        (
            "music video",
            #"{"wrapperType":"track","kind":"music-video","artistId":1,"trackId":21,"artistName":"A","trackName":"Clip","previewUrl":"https://video-ssl.example/clip.m4v","trackTimeMillis":240000,"primaryGenreName":"Pop"}"#,
            "21", "Clip", "music-video", true
        ),
        (
            "audiobook",
            #"{"wrapperType":"audiobook","artistId":2,"collectionId":31,"artistName":"Reader","collectionName":"The Book","previewUrl":"https://audio-ssl.example/b.std.aac.p.m4a","releaseDate":"2011-03-01T08:00:00Z"}"#,
            "31", "The Book", "audiobook", true
        ),
        (
            "ebook",
            #"{"kind":"ebook","trackId":41,"trackName":"E-Book","artistName":"Author","genres":["Fiction"],"releaseDate":"2012-05-05"}"#,
            "41", "E-Book", "ebook", false
        ),
        (
            "podcast",
            #"{"wrapperType":"track","kind":"podcast","collectionId":51,"trackId":51,"artistName":"Host","collectionName":"Show","trackName":"Show","feedUrl":"https://example.com/feed"}"#,
            "51", "Show", "podcast", false
        ),
        (
            "feature movie",
            #"{"wrapperType":"track","kind":"feature-movie","trackId":61,"artistName":"Director","trackName":"Film","previewUrl":"https://video-ssl.example/film.m4v","trackTimeMillis":5400000,"contentAdvisoryRating":"PG"}"#,
            "61", "Film", "feature-movie", true
        ),
        (
            "tv episode",
            #"{"wrapperType":"track","kind":"tv-episode","artistId":7,"collectionId":71,"trackId":72,"artistName":"Network","collectionName":"Season 1","trackName":"Pilot","previewUrl":"https://video-ssl.example/p.m4v"}"#,
            "72", "Pilot", "tv-episode", true
        ),
        (
            "software",
            #"{"kind":"software","trackId":81,"trackName":"App","artistName":"Dev","genres":["Games"],"artworkUrl512":"https://is1.example/512x512bb.jpg"}"#,
            "81", "App", "software", false
        ),
        (
            "artist", #"{"wrapperType":"artist","artistType":"Artist","artistId":91,"artistName":"Band"}"#, "91",
            "Band", "artist", false
        ),
        (
            "collection",
            #"{"wrapperType":"collection","collectionType":"Album","artistId":91,"collectionId":92,"artistName":"Band","collectionName":"Record"}"#,
            "92", "Record", "album", false
        ),
        (
            "wrong types and unknown fields",
            #"{"wrapperType":"track","kind":"song","trackId":"101","trackName":"Odd","trackNumber":"x","trackTimeMillis":1.0e5,"previewUrl":"https://a.example/o.m4a","brandNewField":{"x":[1,2]}}"#,
            "101", "Odd", "song", true
        ),
    ]

    @Test(arguments: kinds.indices)
    func everyResultKindDecodes(index: Int) throws {
        let kind = Self.kinds[index]
        let record = try #require(try Self.decode([kind.json]).first, "\(kind.name) did not decode")
        #expect(record.id == kind.id, "\(kind.name)")
        switch record.mediaItem() {
        case .success(let item):
            #expect(item.title == kind.title)
            #expect(item.kind == kind.kind)
            #expect((item.previewURL != nil) == kind.preview, "\(kind.name)")
            #expect(!item.isFullLength)
        case .failure(.skipped(let reason)), .failure(.failed(let reason, _)):
            Issue.record("\(kind.name) did not become an item: \(reason)")
        }
    }

    @Test func aRecordWithoutAnyIdIsSkippedWithItsKindsArticle() throws {
        let json = #"{"wrapperType":"artist","artistName":"Nobody"}"#
        guard case .failure(.skipped(let reason)) = try #require(try Self.decode([json]).first).mediaItem() else {
            Issue.record("a record without ids became an item")
            return
        }
        #expect(reason.hasPrefix("an artist record without a trackId"))
    }

    /// The recorded records of every kind (Fixtures/records/README.md says where each came from), each file with
    /// the kind its records get, whether they have a preview, and whether it is the whole work.
    static let recorded: [(file: String, kind: String, preview: Bool, whole: Bool)] = [
        ("song", "song", true, false), ("album", "album", false, false), ("artist", "artist", false, false),
        ("music-video", "music-video", true, false), ("movie", "feature-movie", true, false),
        ("tv-episode", "tv-episode", true, false), ("podcast", "podcast", false, false),
        ("podcast-episode", "podcast-episode", true, true), ("audiobook", "audiobook", true, false),
        ("ebook", "ebook", false, false), ("software", "software", false, false),
    ]

    @Test(arguments: recorded.indices)
    func everyRecordedRecordBecomesAnItem(index: Int) throws {
        let expected = Self.recorded[index]
        let body = try Self.fixture("records/\(expected.file)")
        let response = HTTPResponse(status: 200, headers: [:], url: URL(fileURLWithPath: "/search"), body: body)
        let outputs = try ITunesSource.decode(response)
        let count = try #require(try JSONDecoder().decode(ITunesResponse.self, from: body).resultCount)
        #expect(outputs.count == count)
        for output in outputs {
            guard case .item(let item) = output else {
                Issue.record("\(expected.file): \(output) is not an item")
                continue
            }
            #expect(item.kind == expected.kind, "\(expected.file)")
            #expect((item.previewURL != nil) == expected.preview, "\(expected.file): \(item.ref)")
            #expect(item.isFullLength == expected.whole, "\(expected.file): \(item.ref)")
            // Every kind carries artwork but an artist, and it must be fetchable.
            #expect((item.artworkURL?.isFetchable ?? false) == (expected.kind != "artist"), "\(expected.file)")
            #expect(!item.title.isEmpty && item.title != "untitled")
        }
    }

    @Test func aRealEpisodeIsMarkedAsTheWholeEpisode() throws {
        let body = try Self.fixture("records/podcast-episode")
        let record = try #require(try JSONDecoder().decode(ITunesResponse.self, from: body).results.first)
        let item = try record.mediaItem().get()
        #expect(item.isFullLength)
        #expect(item.title == "Defining Enough")
        #expect(item.album == "Self-Helpless")
        #expect(item.durationMillis == 2_800_000)
        #expect(item.previewURL?.absoluteString == record.episodeUrl)
        #expect(item.fileExtension(for: .preview) == "mp3")
        // A made-up episode whose preview is not its file is still one: the wrapperType says so.
        let other = #"{"wrapperType":"podcastEpisode","trackId":7,"previewUrl":"https://a.example/e.mp3"}"#
        #expect(try #require(try Self.decode([other]).first).mediaItem().get().isFullLength)
    }

    @Test func artworkThatIsNotHTTPIsLeftOutAndTheNextSizeTaken() throws {
        let json = #"{"trackId":9,"artworkUrl100":"file:///etc/passwd","artworkUrl60":"https://a.example/a.jpg"}"#
        let item = try #require(try Self.decode([json]).first).mediaItem().get()
        #expect(item.artworkURL?.absoluteString == "https://a.example/a.jpg")
        let none = #"{"trackId":9,"trackName":"T","artworkUrl100":"javascript:alert(1)"}"#
        #expect(try #require(try Self.decode([none]).first).mediaItem().get().artworkURL == nil)
    }

    @Test func lenientFieldsTakeWhatMakesSense() throws {
        let record = try #require(try Self.decode([Self.kinds[9].json]).first)
        let item = try record.mediaItem().get()
        #expect(item.trackNumber == nil)
        #expect(item.durationMillis == 100_000)
        #expect(item.raw?["brandNewField"] != nil)
    }

    @Test func audiobooksAreTitledByTheirCollection() throws {
        let item = try #require(try Self.decode([Self.kinds[1].json]).first).mediaItem().get()
        #expect(item.kind == "audiobook")
        #expect(item.album == nil)
        #expect(item.fileExtension(for: .preview) == "m4a")
    }

    @Test func aPreviewURLThatIsNotHTTPIsAFailureNotACrash() throws {
        let json = #"{"trackId":5,"trackName":"T","previewUrl":"file:///etc/passwd"}"#
        guard case .failure(.failed(let reason, _)) = try #require(try Self.decode([json]).first).mediaItem() else {
            Issue.record("a file:// preview was accepted")
            return
        }
        #expect(reason.contains("not an http(s) URL"))
    }

    @Test func anEmptyResultSetIsNoError() throws {
        #expect(try Self.decode([]).isEmpty)
    }

    @Test func theAPIErrorFixtureYieldsItsMessage() throws {
        let response = HTTPResponse(
            status: 400, headers: [:], url: URL(string: "http://127.0.0.1/search")!,
            body: try Self.fixture("error-400"))
        #expect(ITunesSource.errorMessage(response) == "Invalid value(s) for key(s): [resultEntity]")
    }

    @Test func aBodyThatIsNotJSONIsQuoted() {
        let response = HTTPResponse(
            status: 200, headers: ["Content-Type": "text/html"], url: URL(string: "http://127.0.0.1/search")!,
            body: Data("<html><body>Service Unavailable</body></html>".utf8))
        #expect(throws: SourceError.self) { try ITunesSource.decode(response) }
        do {
            _ = try ITunesSource.decode(response)
        } catch {
            #expect(String(describing: error).contains("\"<html><body>Service Unavailable"))
            #expect(String(describing: error).contains("text/html"))
        }
    }
}
