import Foundation
import ITunesSource
import MediaFetchCore
import Synchronization

/// The page's searches of the iTunes catalog, through the config's transport, paced as the config's source
/// says, with the results remembered so that `POST /api/downloads` can queue them by id.
final class CatalogSearch: Sendable {
    struct Parameters: Sendable {
        var term: String
        var media: String
        var entity: String?
        var country: String
        var limit: Int

        struct Invalid: Error {
            var message: String
        }

        /// Reads and checks the query of `GET /api/search`.
        static func parse(_ value: (String) -> String?) -> Result<Parameters, Invalid> {
            guard let term = value("term")?.trimmingCharacters(in: .whitespacesAndNewlines), !term.isEmpty else {
                return .failure(Invalid(message: "term is required: GET /api/search?term=jack+johnson"))
            }
            guard term.utf8.count <= 200 else { return .failure(Invalid(message: "term is over 200 bytes")) }
            let media = value("media") ?? "music"
            guard ITunesSource.mediaTypes.contains(media) else {
                return .failure(
                    Invalid(
                        message: "media \"\(media)\" is not one of " + ITunesSource.mediaTypes.joined(separator: ", ")))
            }
            let entity = value("entity").flatMap { $0.isEmpty ? nil : $0 }
            if let entity, !(entity.count <= 32 && entity.allSatisfy({ $0.isASCII && $0.isLetter })) {
                return .failure(Invalid(message: "entity \"\(entity)\" is not a result type such as song or album"))
            }
            let country = value("country").flatMap { $0.isEmpty ? nil : $0 } ?? "US"
            guard country.count == 2, country.allSatisfy({ $0.isASCII && $0.isLetter }) else {
                return .failure(Invalid(message: "country \"\(country)\" is not a two-letter code such as US"))
            }
            let limitText = value("limit").flatMap { $0.isEmpty ? nil : $0 } ?? "25"
            guard let limit = Int(limitText), (1...200).contains(limit) else {
                return .failure(Invalid(message: "limit \"\(limitText)\" is not a whole number in 1..200"))
            }
            return .success(
                Parameters(term: term, media: media, entity: entity, country: country.uppercased(), limit: limit))
        }
    }

    struct Failure: Error {
        var message: String
        /// The catalog refused the query itself (HTTP 400: an entity the media does not have): the caller's to fix.
        var rejected = false
    }

    private struct Cache {
        var items: [String: MediaItem] = [:]
        var order: [String] = []
        var nextCall = ContinuousClock.now
    }

    /// Results remembered at most; the oldest go first (a queued item is kept by the queue itself).
    static let cacheLimit = 10_000

    let endpoint: URL
    let transport: any Transport
    /// 0: unpaced.
    let requestsPerMinute: Int
    private let cache = Mutex(Cache())

    init(endpoint: URL, transport: any Transport, requestsPerMinute: Int) {
        self.endpoint = endpoint
        self.transport = transport
        self.requestsPerMinute = requestsPerMinute
    }

    func item(_ id: String) -> MediaItem? { cache.withLock { $0.items[id] } }

    func run(_ parameters: Parameters) async -> Result<[MediaItem], Failure> {
        if requestsPerMinute > 0 {
            let interval = Duration.seconds(60) / requestsPerMinute
            let turn = cache.withLock { cache in
                let turn = max(cache.nextCall, ContinuousClock.now)
                cache.nextCall = turn + interval
                return turn
            }
            try? await Task.sleep(until: turn, clock: .continuous)
        }
        var query = [("media", parameters.media)]
        if let entity = parameters.entity { query.append(("entity", entity)) }
        query.append(("country", parameters.country))
        let source = ITunesSource(
            .init(
                endpoint: endpoint, query: .search(term: parameters.term), parameters: query,
                pageSize: parameters.limit, maxItems: parameters.limit, requestsPerMinute: 0, throttleRetries: 0))
        let found = Mutex<[MediaItem]>([])
        do {
            try await source.run(SourceContext(transport: transport)) { output in
                if case .item(let item) = output { found.withLock { $0.append(item) } }
            }
        } catch {
            let status = ((error as? SourceError)?.cause as? TransportError)?.status
            return .failure(Failure(message: String(describing: error), rejected: status == 400))
        }
        let items = found.withLock { $0 }
        cache.withLock { cache in
            for item in items {
                if cache.items.updateValue(item, forKey: item.id) == nil { cache.order.append(item.id) }
            }
            if cache.order.count > Self.cacheLimit {
                for id in cache.order.prefix(cache.order.count - Self.cacheLimit) { cache.items[id] = nil }
                cache.order.removeFirst(cache.order.count - Self.cacheLimit)
            }
        }
        return .success(items)
    }
}
