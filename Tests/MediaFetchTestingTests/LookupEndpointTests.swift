import Foundation
import MediaFetchTesting
import Testing

@Suite("GET /lookup")
struct LookupEndpointTests {
    let server: MockCatalogServer

    init() throws {
        server = try MockCatalogServer()
    }

    private func lookup(_ query: String) throws -> SearchAnswer {
        let response = try RawHTTPClient(port: server.port).request("/lookup?" + query)
        #expect(response.status == 200)
        #expect(response.headers["Content-Type"] == "text/javascript; charset=utf-8")
        return try SearchAnswer(response.body)
    }

    @Test("track ids come back in the order asked, unknown ids are absent")
    func trackOrder() throws {
        let songs = server.catalog.songs
        let ids = [songs[40].trackId, 12_345, songs[3].trackId, songs[700].trackId]
        let answer = try lookup("id=" + ids.map(String.init).joined(separator: ","))
        #expect(answer.resultCount == 3)
        #expect(answer.results.map(\.trackId) == [songs[40].trackId, songs[3].trackId, songs[700].trackId])
    }

    @Test("a collection with entity=song is the collection record, then its songs by track number")
    func collectionWithSongs() throws {
        let album = server.catalog.songs[20].collectionId
        let answer = try lookup("id=\(album)&entity=song")
        let expected = server.catalog.songs(collectionId: album)
        #expect(answer.resultCount == expected.count + 1)
        let first = try #require(answer.results.first)
        #expect(first.wrapperType == "collection")
        #expect(first.collectionId == album)
        #expect(first.previewUrl == nil)
        #expect(answer.results.dropFirst().map(\.trackId) == expected.map(\.trackId))
        #expect(answer.results.dropFirst().allSatisfy { $0.wrapperType == "track" && $0.previewUrl != nil })

        let alone = try lookup("id=\(album)")
        #expect(alone.resultCount == 1)
        #expect(alone.results.first?.wrapperType == "collection")
    }

    @Test("an artist with entity=song is the artist record, then its songs; limit caps the songs")
    func artistWithSongs() throws {
        let artist = server.catalog.songs[0].artistId
        let answer = try lookup("id=\(artist)&entity=song&limit=5")
        #expect(answer.resultCount == 6)
        #expect(answer.results.first?.wrapperType == "artist")
        #expect(answer.results.first?.artistId == artist)
        let expected = server.catalog.songs(artistId: artist).prefix(5).map(\.trackId)
        #expect(answer.results.dropFirst().map(\.trackId) == expected)
    }

    @Test("missing id is a 400 in Apple's shape")
    func missingId() throws {
        let response = try RawHTTPClient(port: server.port).request("/lookup?entity=song")
        #expect(response.status == 400)
        #expect(response.text.contains("\"errorMessage\":\"Invalid value(s) for key(s): [id]\""))
    }
}
