import Foundation
import MediaFetchTesting
import Testing

@Suite("MockCatalog")
struct CatalogTests {
    let catalog = MockCatalog.standard

    @Test("the standard catalog is big, unique by track id, and common words match many songs")
    func size() {
        #expect(catalog.songs.count >= 500)
        #expect(Set(catalog.songs.map(\.trackId)).count == catalog.songs.count)
        #expect(catalog.search(term: "love").count >= 60)
        #expect(catalog.search(term: "night").count >= 40)
        #expect(catalog.search(term: "LOVE").count == catalog.search(term: "love").count)
        #expect(catalog.search(term: "   ").isEmpty)
    }

    @Test("every word must match somewhere: more words, fewer songs")
    func allWords() {
        let both = catalog.search(term: "love night")
        #expect(!both.isEmpty)
        #expect(both.count < catalog.search(term: "night").count)
        for song in both {
            let text = [song.artistName, song.collectionName, song.trackName].joined(separator: " ").lowercased()
            #expect(text.contains("love") && text.contains("night"))
        }
    }

    @Test("hostile characters occur in artist, album or title names")
    func hostileNames() {
        let names = catalog.songs.flatMap { [$0.artistName, $0.collectionName, $0.trackName] }
        for needle in ["é", "ü", "日本語", "&", "+", "#", "%", "=", "/", ".."] {
            #expect(names.contains { $0.contains(needle) }, "no name contains \(needle)")
        }
        #expect(names.contains(".."))
        #expect(names.contains { $0.utf8.count > 255 })
    }

    @Test("some artist + album + title triples repeat under different track ids")
    func duplicates() {
        let groups = Dictionary(grouping: catalog.songs) {
            [$0.artistName, $0.collectionName, $0.trackName].joined(separator: "\u{0}")
        }
        let repeated = groups.values.filter { $0.count > 1 }
        #expect(repeated.count >= 3)
        #expect(repeated.allSatisfy { Set($0.map(\.trackId)).count == $0.count })
    }

    @Test("fields are plausible and the catalog is the same every time")
    func fields() throws {
        for song in catalog.songs {
            #expect((120_000...420_000).contains(song.trackTimeMillis))
            #expect((300_000...1_200_000).contains(song.previewSize))
            #expect(song.releaseDate.hasSuffix("T12:00:00Z") && song.releaseDate.count == 20)
            #expect(song.trackNumber >= 1 && song.trackNumber <= song.trackCount)
        }
        let again = try #require(MockCatalog.standard.song(trackId: catalog.songs[10].trackId))
        #expect(again == catalog.songs[10])
        let bytes = catalog.previewBytes(for: catalog.songs[10])
        #expect(bytes == catalog.previewBytes(for: catalog.songs[10]))
        #expect(bytes != catalog.previewBytes(for: catalog.songs[11]))
    }

    @Test("a record decodes with the fixture's field names and types")
    func record() throws {
        let song = catalog.songs[0]
        let base = try #require(URL(string: "http://127.0.0.1:9"))
        let object = try #require(
            try JSONSerialization.jsonObject(with: Data(song.jsonRecord(baseURL: base).utf8)) as? [String: Any]
        )
        #expect(object["trackId"] as? Int == song.trackId)
        #expect(object["previewUrl"] as? String == "http://127.0.0.1:9" + song.previewPath)
        #expect(object["artworkUrl100"] as? String == "http://127.0.0.1:9" + song.artworkPath(size: 100))
        #expect(object["isStreamable"] as? Bool == song.isStreamable)
        #expect(object["trackPrice"] is Double || object["trackPrice"] is Int)
        #expect(object.count == 31)
    }

    @Test("a tiny catalog for tests keeps the first song of a repeated id")
    func tiny() {
        let tiny = MockCatalog(songs: [
            MockSong(trackId: 1, artistName: "A", collectionName: "B", trackName: "Love"),
            MockSong(trackId: 2, artistName: "A", collectionName: "B", trackName: "Night"),
            MockSong(trackId: 1, artistName: "Dup", collectionName: "Dup", trackName: "Dup"),
        ])
        #expect(tiny.songs.count == 2)
        #expect(tiny.song(trackId: 1)?.trackName == "Love")
        #expect(tiny.search(term: "love").map(\.trackId) == [1])
        #expect(tiny.previewPath(for: tiny.songs[0]).hasSuffix("/mzaf_1.plus.aac.p.m4a"))
    }

    @Test("a server over a tiny catalog serves just that catalog")
    func tinyServer() throws {
        let only = MockSong(trackId: 42, artistName: "Solo", collectionName: "One", trackName: "Only")
        let tiny = MockCatalog(songs: [only])
        let server = try MockCatalogServer(catalog: tiny)
        let answer = try SearchAnswer(RawHTTPClient(port: server.port).request("/search?term=only").body)
        #expect(answer.results.map(\.trackId) == [42])
        let preview = try RawHTTPClient(port: server.port).request(tiny.songs[0].previewPath)
        #expect(preview.body == tiny.previewBytes(for: tiny.songs[0]))
    }
}
