import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import ITunesSource

/// The source against the mock replaying real answers of every kind: every record the API returned is an item,
/// a preview or not, and a whole podcast episode is said to be one.
struct RecordedKindsTests {
    /// Each recorded file with the search it answers (media, entity).
    static let searches: [(file: String, media: String, entity: String?)] = [
        ("song", "music", "song"), ("album", "music", "album"), ("artist", "music", "musicArtist"),
        ("music-video", "musicVideo", nil), ("movie", "movie", nil), ("tv-episode", "tvShow", "tvEpisode"),
        ("podcast", "podcast", nil), ("podcast-episode", "podcast", "podcastEpisode"), ("audiobook", "audiobook", nil),
        ("ebook", "ebook", nil), ("software", "software", nil),
    ]

    static func answers() throws -> [MockRecordedAnswer] {
        try searches.map { search in
            try MockRecordedAnswer(
                media: search.media, entity: search.entity, body: try DecodingTests.fixture("records/\(search.file)"))
        }
    }

    static func server() throws -> MockCatalogServer {
        try MockCatalogServer(catalog: MockCatalog(songs: MockCatalog.standard.songs, recorded: try answers()))
    }

    static func search(
        _ server: MockCatalogServer, media: String, entity: String?, maxItems: Int = 50
    ) -> ITunesSource.Configuration {
        var parameters = [("media", media)]
        if let entity { parameters.append(("entity", entity)) }
        return .init(
            endpoint: server.baseURL, query: .search(term: "anything"), parameters: parameters,
            pageSize: min(maxItems, 200), maxItems: maxItems, requestsPerMinute: 0)
    }

    @Test(arguments: searches.indices)
    func everyRecordOfEveryKindIsAnItem(index: Int) async throws {
        let search = Self.searches[index]
        let server = try Self.server()
        let body = try DecodingTests.fixture("records/\(search.file)")
        let recorded = try JSONDecoder().decode(ITunesResponse.self, from: body)
        let result = try await ITunesSourceTests.collect(
            Self.search(server, media: search.media, entity: search.entity))
        #expect(result.items.count == recorded.resultCount, "\(search.file)")
        #expect(result.items.map(\.id) == recorded.results.compactMap(\.id))
        #expect(result.skipped.isEmpty && result.failed.isEmpty, "\(result.skipped) \(result.failed)")
        // The media URLs point at the mock, so a run fetches them there.
        for item in result.items {
            for url in [item.previewURL, item.artworkURL].compactMap({ $0 }) {
                #expect(url.absoluteString.hasPrefix(server.baseURL.absoluteString + "/recorded/"))
            }
        }
    }

    @Test func aWholeEpisodeIsMarkedAndSaidOnceWithWhatLimitsIt() async throws {
        let server = try Self.server()
        let result = try await ITunesSourceTests.collect(
            Self.search(server, media: "podcast", entity: "podcastEpisode"))
        let episode = try #require(result.items.first)
        #expect(episode.isFullLength)
        #expect(result.notices.count == 1)
        let notice = try #require(result.notices.first)
        #expect(notice.contains("whole podcast episodes, not previews"))
        #expect(notice.contains("Defining Enough"))
        #expect(notice.contains("46 min"))
        #expect(notice.contains("max-size (default 50MB)"))
        // Previews of other kinds are not.
        let films = try await ITunesSourceTests.collect(Self.search(server, media: "movie", entity: nil))
        #expect(films.items.allSatisfy { !$0.isFullLength })
        #expect(films.notices.isEmpty)
    }

    /// max-items counts results of every kind: two of the three albums, though none has a preview.
    @Test func maxItemsCountsResultsWithoutAPreview() async throws {
        let server = try Self.server()
        let result = try await ITunesSourceTests.collect(
            Self.search(server, media: "music", entity: "album", maxItems: 2))
        #expect(result.items.map(\.id) == ["1442959667", "1443155637"])
        #expect(result.items.allSatisfy { $0.previewURL == nil && $0.artworkURL != nil })
    }
}
