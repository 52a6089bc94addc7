import Foundation
import MediaFetchCore
import Testing

@testable import ITunesSource

/// Every result kind the API returns decodes, leniently: missing optional fields are normal,
/// unknown ones are ignored, and a record without a preview is skipped with a reason.
struct DecodingTests {
    static func fixture(_ name: String) throws -> Data {
        let url = try #require(Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Fixtures"))
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

    /// One record of each kind, shaped as the API sends them (FACTS.md: what each kind lacks).
    static let kinds: [(name: String, json: String, id: String?, title: String, skipped: Bool)] = [
        (
            "music video",
            #"{"wrapperType":"track","kind":"music-video","artistId":1,"trackId":21,"artistName":"A","trackName":"Clip","previewUrl":"https://video-ssl.example/clip.m4v","trackTimeMillis":240000,"primaryGenreName":"Pop"}"#,
            "21", "Clip", false
        ),
        (
            "audiobook",
            #"{"wrapperType":"audiobook","artistId":2,"collectionId":31,"artistName":"Reader","collectionName":"The Book","previewUrl":"https://audio-ssl.example/b.std.aac.p.m4a","releaseDate":"2011-03-01T08:00:00Z"}"#,
            "31", "The Book", false
        ),
        (
            "ebook",
            #"{"kind":"ebook","trackId":41,"trackName":"E-Book","artistName":"Author","genres":["Fiction"],"releaseDate":"2012-05-05"}"#,
            "41", "E-Book", true
        ),
        (
            "podcast",
            #"{"wrapperType":"track","kind":"podcast","collectionId":51,"trackId":51,"artistName":"Host","collectionName":"Show","trackName":"Show","feedUrl":"https://example.com/feed"}"#,
            "51", "Show", true
        ),
        (
            "feature movie",
            #"{"wrapperType":"track","kind":"feature-movie","trackId":61,"artistName":"Director","trackName":"Film","previewUrl":"https://video-ssl.example/film.m4v","trackTimeMillis":5400000,"contentAdvisoryRating":"PG"}"#,
            "61", "Film", false
        ),
        (
            "tv episode",
            #"{"wrapperType":"track","kind":"tv-episode","artistId":7,"collectionId":71,"trackId":72,"artistName":"Network","collectionName":"Season 1","trackName":"Pilot","previewUrl":"https://video-ssl.example/p.m4v"}"#,
            "72", "Pilot", false
        ),
        (
            "software",
            #"{"kind":"software","trackId":81,"trackName":"App","artistName":"Dev","genres":["Games"],"artworkUrl512":"https://is1.example/512x512bb.jpg"}"#,
            "81", "App", true
        ),
        (
            "artist", #"{"wrapperType":"artist","artistType":"Artist","artistId":91,"artistName":"Band"}"#, "91",
            "Band", true
        ),
        (
            "collection",
            #"{"wrapperType":"collection","collectionType":"Album","artistId":91,"collectionId":92,"artistName":"Band","collectionName":"Record"}"#,
            "92", "Record", true
        ),
        (
            "wrong types and unknown fields",
            #"{"wrapperType":"track","kind":"song","trackId":"101","trackName":"Odd","trackNumber":"x","trackTimeMillis":1.0e5,"previewUrl":"https://a.example/o.m4a","brandNewField":{"x":[1,2]}}"#,
            "101", "Odd", false
        ),
    ]

    @Test(arguments: kinds.indices)
    func everyResultKindDecodes(index: Int) throws {
        let kind = Self.kinds[index]
        let record = try #require(try Self.decode([kind.json]).first, "\(kind.name) did not decode")
        #expect(record.id == kind.id, "\(kind.name)")
        switch record.mediaItem() {
        case .success(let item):
            #expect(!kind.skipped, "\(kind.name) has no preview and should be skipped")
            #expect(item.title == kind.title)
            #expect(item.previewURL != nil)
        case .failure(.skipped(let reason)):
            #expect(kind.skipped, "\(kind.name) was skipped: \(reason)")
            #expect(reason.contains("no preview"))
            #expect(record.ref.title == kind.title)
        case .failure(.failed(let reason, _)):
            Issue.record("\(kind.name) failed: \(reason)")
        }
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
