import Foundation
import FoundationTransport
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import ITunesSource

/// The source against the loopback mock catalog, through a real transport.
struct ITunesSourceTests {
    struct Collected {
        var items: [MediaItem] = []
        var skipped: [String] = []
        var failed: [String] = []
        var notices: [String] = []
    }

    static func collect(_ configuration: ITunesSource.Configuration) async throws -> Collected {
        let transport = FoundationTransport()
        defer { Task { await transport.shutdown() } }
        let collected = Mutex(Collected())
        let context = SourceContext(
            transport: transport, notice: { text in collected.withLock { $0.notices.append(text) } })
        try await ITunesSource(configuration).run(context) { output in
            collected.withLock {
                switch output {
                case .item(let item): $0.items.append(item)
                case .skipped(_, let reason): $0.skipped.append(reason)
                case .failed(_, _, let reason): $0.failed.append(reason)
                }
            }
        }
        return collected.withLock { $0 }
    }

    static func search(
        _ server: MockCatalogServer, _ term: String, maxItems: Int = 50, pageSize: Int? = nil,
        parameters: [(String, String)] = []
    ) -> ITunesSource.Configuration {
        .init(
            endpoint: server.baseURL, query: .search(term: term), parameters: parameters,
            pageSize: pageSize ?? min(maxItems, 200), maxItems: maxItems, requestsPerMinute: 0,
            throttleRetries: 2, throttleBackoff: .milliseconds(10))
    }

    /// Each character that needs care arrives at the server as the term that was meant.
    @Test(arguments: [
        "jack johnson", "AC+DC", "Simon & Garfunkel", "a=b", "#1 hits", "100% pure", "Beyoncé",
        "日本語", "tab\there", "semi;colon", "quote\"s", "plus + space",
    ])
    func aTermReachesTheServerIntact(term: String) async throws {
        let server = try MockCatalogServer()
        _ = try await Self.collect(Self.search(server, term))
        let request = try #require(server.requests.first { $0.path == "/search" })
        #expect(request.query("term") == term)
        #expect(request.rawQuery?.contains(" ") == false)
    }

    @Test func searchResultsBecomeItemsInTheAPIsOrder() async throws {
        let server = try MockCatalogServer()
        let result = try await Self.collect(Self.search(server, "night", maxItems: 30))
        let expected = server.catalog.search(term: "night").prefix(30)
        #expect(result.items.map(\.id) == expected.map { String($0.trackId) })
        #expect(result.items.first?.previewURL == expected.first.map(server.previewURL(for:)))
        let request = try #require(server.requests.first)
        #expect(request.query("limit") == "30")
    }

    @Test func moreThanTwoHundredItemsArePagedWithOffset() async throws {
        let server = try MockCatalogServer()
        let all = server.catalog.search(term: "a")
        try #require(all.count > 450, "the standard catalog should have plenty of songs with an 'a'")
        let result = try await Self.collect(Self.search(server, "a", maxItems: 450))
        #expect(result.items.count == 450)
        #expect(result.items.map(\.id) == all.prefix(450).map { String($0.trackId) })
        let pages = server.requests.filter { $0.path == "/search" }
        #expect(pages.map { $0.query("offset") } == [nil, "200", "400"])
        #expect(pages.allSatisfy { $0.query("limit") == "200" })
    }

    @Test func theLastShortPageEndsPaging() async throws {
        let server = try MockCatalogServer()
        let all = server.catalog.search(term: "love")
        let result = try await Self.collect(Self.search(server, "love", maxItems: 10_000, pageSize: 25))
        #expect(result.items.count == all.count)
        #expect(server.requests.filter { $0.path == "/search" }.count == all.count / 25 + 1)
    }

    /// The album record comes first, as at Apple, and is an item too: it has artwork, not a preview.
    @Test func lookupByIdsYieldsTheAlbumRecordThenItsSongs() async throws {
        let server = try MockCatalogServer()
        let song = server.catalog.songs[10]
        let album = server.catalog.songs(collectionId: song.collectionId)
        let configuration = ITunesSource.Configuration(
            endpoint: server.baseURL, query: .lookup(key: "id", ids: [String(song.collectionId)]),
            parameters: [("entity", "song")], pageSize: 200, maxItems: 200, requestsPerMinute: 0)
        let result = try await Self.collect(configuration)
        #expect(result.items.map(\.id) == [String(song.collectionId)] + album.map { String($0.trackId) })
        let albumItem = try #require(result.items.first)
        #expect(albumItem.kind == "album")
        #expect(albumItem.title == song.collectionName)
        #expect(albumItem.previewURL == nil)
        #expect(albumItem.artworkURL == server.url(path: song.artworkPath(size: 100)))
        #expect(result.skipped.isEmpty)
        #expect(server.requests.first?.query("id") == String(song.collectionId))
    }

    @Test func duplicatesAcrossPagesAreDroppedByTrackId() async throws {
        let server = try MockCatalogServer()
        let song = server.catalog.songs[0]
        let record = song.jsonRecord(baseURL: server.baseURL)
        let body = Array("{\"resultCount\":3,\"results\":[\(record),\(record),\(record)]}".utf8)
        server.setFaultHook { request in
            request.path == "/search"
                ? .respond(status: 200, headers: [("Content-Type", "text/javascript")], body: body) : nil
        }
        let result = try await Self.collect(Self.search(server, "x", maxItems: 10, pageSize: 3))
        #expect(result.items.count == 1)
        // A full page with nothing new ends paging rather than asking for the same page forever.
        #expect(result.skipped.count == 5)
        #expect(server.requests.filter { $0.path == "/search" }.count == 2)
    }

    @Test func aBadParameterShowsApplesMessage() async throws {
        let server = try MockCatalogServer()
        let error = await #expect(throws: SourceError.self) {
            _ = try await Self.collect(Self.search(server, "love", parameters: [("entity", "nonsense")]))
        }
        #expect(error?.message.contains("HTTP 400") == true)
        #expect(error?.message.contains("Invalid value(s) for key(s): [resultEntity]") == true)
    }

    @Test(arguments: [403, 429])
    func throttlingIsRetriedWithBackoffThenSucceeds(status: Int) async throws {
        let server = try MockCatalogServer()
        let calls = Mutex(0)
        server.setFaultHook { request in
            guard request.path == "/search" else { return nil }
            let call = calls.withLock { count -> Int in
                count += 1
                return count
            }
            return call <= 2 ? .respond(status: status, headers: [], body: []) : nil
        }
        let result = try await Self.collect(Self.search(server, "love", maxItems: 5))
        #expect(result.items.count == 5)
        #expect(result.notices.count == 2)
        #expect(result.notices.first?.contains("HTTP \(status)") == true)
        #expect(calls.withLock { $0 } == 3)
    }

    @Test func throttlingThatDoesNotStopIsAClearError() async throws {
        let server = try MockCatalogServer()
        server.setFaultHook { $0.path == "/search" ? .respond(status: 403, headers: [], body: []) : nil }
        let error = await #expect(throws: SourceError.self) {
            _ = try await Self.collect(Self.search(server, "love"))
        }
        #expect(error?.message.contains("after 2 retries") == true)
        #expect(error?.message.contains("requests-per-minute") == true)
        #expect(server.requests.count == 3)
    }

    @Test func aBodyThatIsNotJSONIsQuotedInTheError() async throws {
        let server = try MockCatalogServer()
        server.setFaultHook { _ in
            .respond(
                status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>maintenance</html>".utf8))
        }
        let error = await #expect(throws: SourceError.self) {
            _ = try await Self.collect(Self.search(server, "love"))
        }
        #expect(error?.message.contains("\"<html>maintenance</html>\"") == true)
    }

    @Test func aServerErrorNamesTheStatusAndURL() async throws {
        let server = try MockCatalogServer()
        server.setFaultHook { _ in .respond(status: 503, headers: [], body: Array("busy".utf8)) }
        let error = await #expect(throws: SourceError.self) {
            _ = try await Self.collect(Self.search(server, "love"))
        }
        #expect(error?.message.contains("HTTP 503") == true)
        #expect(error?.message.contains(server.baseURL.absoluteString + "/search?term=love") == true)
    }

    @Test func noMatchIsNoItemsAndNoError() async throws {
        let server = try MockCatalogServer()
        let result = try await Self.collect(Self.search(server, "zzzzqqqq"))
        #expect(result.items.isEmpty)
    }

    /// A lower bound only: pacing can never be faster than asked, whatever the machine's load.
    @Test func apiCallsArePaced() async throws {
        let pacer = Pacer(requestsPerMinute: 600)
        let start = ContinuousClock.now
        for _ in 0..<3 { try await pacer.wait() }
        #expect(ContinuousClock.now - start >= .milliseconds(200))
    }

    @Test func optionsThatDoNotGoTogetherAreConfigErrors() throws {
        func options(_ values: [String: OptionValue]) -> PluginOptions {
            PluginOptions(section: "source", values: values)
        }
        #expect(throws: ConfigError.self) { try ITunesSource.configuration(from: options([:])) }
        #expect(throws: ConfigError.self) {
            try ITunesSource.configuration(from: options(["term": .string("a"), "ids": .list(["1"])]))
        }
        #expect(throws: ConfigError.self) {
            try ITunesSource.configuration(from: options(["term": .string("a"), "country": .string("USA")]))
        }
        #expect(throws: ConfigError.self) {
            try ITunesSource.configuration(from: options(["ids": .list(["12", "../x"])]))
        }
        let paged = try ITunesSource.configuration(from: options(["term": .string("a"), "max-items": .integer(500)]))
        #expect(paged.pageSize == 200)
        #expect(paged.parameters.contains { $0 == ("country", "US") })
        #expect(paged.parameters.contains { $0 == ("media", "music") } == false, "no default filled in here")
        #expect(paged.maxItems == 500)
    }
}
