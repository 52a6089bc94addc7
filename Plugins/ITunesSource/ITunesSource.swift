import Foundation
import MediaFetchCore

/// Finds items with Apple's iTunes Search API: `/search` by term, or `/lookup` by ids.
public struct ITunesSource: Source {
    public enum Query: Sendable, Hashable {
        /// `/search?term=...`, paged with `offset` up to `maxItems`.
        case search(term: String)
        /// `/lookup?<key>=1,2,3`: the looked-up items first, then their children.
        case lookup(key: String, ids: [String])
    }

    public struct Configuration: Sendable {
        public var endpoint: URL
        public var query: Query
        /// Extra parameters sent as they are: media, entity, attribute, country, lang, explicit.
        public var parameters: [(String, String)]
        /// Results per API call, 1...200.
        public var pageSize: Int
        /// Items to produce at most: results of every kind, with a preview or without (an album, an artist);
        /// records that are skipped (no id, a duplicate) do not count.
        public var maxItems: Int
        public var requestsPerMinute: Int
        /// How often a throttled call (403 or 429) is tried again before the source gives up.
        public var throttleRetries: Int
        /// The first wait after throttling; it doubles each time.
        public var throttleBackoff: Duration

        public init(
            endpoint: URL = URL(string: "https://itunes.apple.com")!,
            query: Query,
            parameters: [(String, String)] = [],
            pageSize: Int = 50,
            maxItems: Int = 50,
            requestsPerMinute: Int = 20,
            throttleRetries: Int = 3,
            throttleBackoff: Duration = .seconds(10)
        ) {
            self.endpoint = endpoint
            self.query = query
            self.parameters = parameters
            self.pageSize = pageSize
            self.maxItems = maxItems
            self.requestsPerMinute = requestsPerMinute
            self.throttleRetries = throttleRetries
            self.throttleBackoff = throttleBackoff
        }
    }

    public let configuration: Configuration
    private let pacer: Pacer

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        pacer = Pacer(requestsPerMinute: configuration.requestsPerMinute)
    }

    /// How many ids go into one `/lookup` call.
    static let lookupBatch = 50

    public func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
        var produced = 0
        var toldOfWholeEpisodes = false

        /// Emits a page's records; answers how many new items it held.
        func emitPage(_ outputs: [SourceOutput]) async throws -> Int {
            var fresh = 0
            for output in outputs {
                guard produced < configuration.maxItems else { break }
                if case .item(let item) = output {
                    // Pages come one at a time, as the run takes their items; the ids seen are in the run's ledger.
                    guard try context.firstOccurrence(of: item.id, at: "") == nil else {
                        try await emit(.skipped(item.ref, reason: "duplicate of an earlier result (same track id)"))
                        continue
                    }
                    produced += 1
                    fresh += 1
                    if item.isFullLength, !toldOfWholeEpisodes {
                        toldOfWholeEpisodes = true
                        context.notice(Self.wholeEpisodeNotice(item))
                    }
                }
                try await emit(output)
            }
            return fresh
        }

        switch configuration.query {
        case .search(let term):
            var offset = 0
            while produced < configuration.maxItems {
                var parameters = [("term", term)] + configuration.parameters
                parameters.append(("limit", String(configuration.pageSize)))
                if offset > 0 { parameters.append(("offset", String(offset))) }
                let page = try await call("search", parameters, context)
                let fresh = try await emitPage(page)
                // A short page is the last one; a page with nothing new would page forever.
                if page.count < configuration.pageSize || fresh == 0 { break }
                offset += page.count
            }
        case .lookup(let key, let ids):
            for start in stride(from: 0, to: ids.count, by: Self.lookupBatch) where produced < configuration.maxItems {
                let batch = ids[start..<min(start + Self.lookupBatch, ids.count)]
                var parameters = [(key, batch.joined(separator: ","))] + configuration.parameters
                parameters.append(("limit", String(configuration.pageSize)))
                let page = try await call("lookup", parameters, context)
                _ = try await emitPage(page)
                if key == "id" {
                    // An id the catalog does not know is simply absent from Apple's answer; say so.
                    let answered = Set(page.flatMap(Self.ids))
                    for id in batch where !answered.contains(id) {
                        try await emit(
                            .skipped(ItemRef(id: id, title: "id \(id)"), reason: "the catalog has no item with this id")
                        )
                    }
                }
            }
        }
    }

    /// Said once a run, at the first whole episode: the user asked for previews and may not know that a podcast
    /// episode's is the episode itself.
    static func wholeEpisodeNotice(_ item: MediaItem) -> String {
        let length = item.durationMillis.map { " (\($0 / 60_000) min)" } ?? ""
        return "some results are whole podcast episodes, not previews, e.g. \(item.ref)\(length): the catalog's "
            + "preview URL of an episode is the episode itself; the download section's max-size (default "
            + "\(DownloadPolicy.defaultMaxSizeText)) refuses files larger than it, and max-size: none fetches them all"
    }

    /// One paced API call, retried with backoff while the API throttles.
    private func call(
        _ path: String, _ parameters: [(String, String)], _ context: SourceContext
    ) async throws
        -> [SourceOutput]
    {
        guard let url = ITunesQuery.url(endpoint: configuration.endpoint, path: path, parameters: parameters) else {
            throw SourceError("cannot build an API URL from endpoint \(configuration.endpoint.absoluteString)")
        }
        var wait = configuration.throttleBackoff
        var attempt = 0
        while true {
            try await pacer.wait()
            let response: HTTPResponse
            do {
                response = try await context.transport.send(
                    HTTPRequest(url: url, headers: ["Accept": "application/json, text/javascript"]))
            } catch let error as TransportError {
                if error.code == .cancelled { throw CancellationError() }
                throw SourceError("iTunes API call failed: \(error)", cause: error)
            }
            switch response.status {
            case 200:
                return try Self.decode(response)
            case 403 where attempt < configuration.throttleRetries, 429 where attempt < configuration.throttleRetries:
                context.notice(
                    "iTunes API throttled the call (HTTP \(response.status)); waiting \(wait.formattedSeconds) "
                        + "before try \(attempt + 2) of \(configuration.throttleRetries + 1)")
                try await Task.sleep(for: wait)
                wait *= 2
                attempt += 1
            case 403, 429:
                throw SourceError(
                    "iTunes API kept refusing calls (HTTP \(response.status), throttling) after "
                        + "\(configuration.throttleRetries) retries: \(url.absoluteString); lower "
                        + "requests-per-minute (Apple allows about 20) or try again later")
            case 400:
                throw SourceError(
                    "iTunes API rejected the query (HTTP 400): \(Self.errorMessage(response)); check the "
                        + "source's media, entity, attribute and country: \(url.absoluteString)")
            default:
                throw SourceError(
                    "iTunes API answered HTTP \(response.status) for \(url.absoluteString): "
                        + Self.quote(response.body))
            }
        }
    }

    /// The ids an output stands for: a lookup's answer may name an id as the item, or as its record's
    /// track, collection or artist.
    static func ids(_ output: SourceOutput) -> [String] {
        switch output {
        case .item(let item):
            let raw = item.raw
            return [item.id]
                + ["trackId", "collectionId", "artistId"].compactMap { key in
                    if case .number(let value)? = raw?[key] { return String(Int(value)) }
                    return nil
                }
        case .skipped(let ref, _), .failed(let ref, _, _):
            return [ref.id]
        }
    }

    /// What one API answer holds: an item per usable record, and why each other record is not one.
    /// Lenient (FACTS.md): a missing or odd field is not an error; only a body that is not the
    /// `{"results": [...]}` JSON is.
    /// - Throws: ``SourceError`` quoting the body's first bytes.
    public static func decode(_ response: HTTPResponse) throws -> [SourceOutput] {
        do {
            return try JSONDecoder().decode(ITunesResponse.self, from: response.body).results.map { record in
                switch record.mediaItem() {
                case .success(let item): .item(item)
                case .failure(.skipped(let reason)): .skipped(record.ref, reason: reason)
                case .failure(.failed(let reason, let url)): .failed(record.ref, url: url, reason: reason)
                }
            }
        } catch {
            let type = response.headers["Content-Type"] ?? "no content type"
            throw SourceError(
                "iTunes API answer from \(response.url.absoluteString) is not the expected JSON (\(type)); "
                    + "it begins: \(quote(response.body))")
        }
    }

    /// Apple's `errorMessage` from a 400 body, or the body itself.
    static func errorMessage(_ response: HTTPResponse) -> String {
        struct Body: Decodable { var errorMessage: String? }
        if let message = (try? JSONDecoder().decode(Body.self, from: response.body))?.errorMessage {
            return message
        }
        return quote(response.body)
    }

    /// The first bytes of a body, printable, for error messages.
    static func quote(_ body: Data, limit: Int = 120) -> String {
        if body.isEmpty { return "(empty body)" }
        let head = String(decoding: body.prefix(limit), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let printable = head.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : String($0) }
            .joined()
        return "\"\(printable)\"" + (body.count > limit ? "…" : "")
    }
}
