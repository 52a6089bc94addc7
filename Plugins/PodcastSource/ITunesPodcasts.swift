import Foundation
import MediaFetchCore

/// Finds feeds through the iTunes Search API: a podcast record carries no preview, only its `feedUrl`.
///
/// `ids` are looked up 100 at a time (`/lookup?id=1,2,...&entity=podcast`), a `term` is one search
/// (`/search?term=...&media=podcast&entity=podcast&limit=N`): a few calls a run, well inside Apple's 20 a minute.
struct ITunesPodcasts: Sendable {
    var endpoint: URL
    var country: String

    /// One podcast record, leniently: only what finding its feed needs.
    private struct Record: Decodable {
        var collectionId: Int?
        var collectionName: String?
        var feedUrl: String?

        private enum CodingKeys: String, CodingKey {
            case collectionId, collectionName, feedUrl
        }

        /// A field of an unexpected type is absent, not a reason to drop the answer.
        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            collectionId = try? container.decodeIfPresent(Int.self, forKey: .collectionId)
            collectionName = try? container.decodeIfPresent(String.self, forKey: .collectionName)
            feedUrl = try? container.decodeIfPresent(String.self, forKey: .feedUrl)
        }
    }

    private struct Answer: Decodable {
        var results: [Record]
    }

    /// The feeds of podcast collection `ids`, in the order given; an id the catalog does not know, or whose
    /// record has no feed, is a failure of its own.
    func feeds(
        ids: [String], _ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void
    ) async throws -> [PodcastSource.FeedEntry] {
        var entries: [PodcastSource.FeedEntry] = []
        for start in stride(from: 0, to: ids.count, by: 100) {
            let batch = Array(ids[start..<min(start + 100, ids.count)])
            let parameters = [
                ("id", batch.joined(separator: ",")), ("entity", "podcast"), ("country", country),
            ]
            let records: [Record]
            do {
                records = try await call("lookup", parameters, context)
            } catch let failure as FeedFetcher.Failure {
                for id in batch {
                    try await emit(
                        .failed(ItemRef(id: id, title: "iTunes id \(id)"), url: nil, reason: failure.message))
                }
                continue
            }
            for id in batch {
                let record = records.first { $0.collectionId.map(String.init) == id }
                guard let record else {
                    try await emit(
                        .failed(
                            ItemRef(id: id, title: "iTunes id \(id)"), url: nil,
                            reason: "the iTunes catalog has no podcast with the id \(id)"))
                    continue
                }
                if let entry = try await entry(record, origin: "iTunes id \(id)", emit: emit) { entries.append(entry) }
            }
        }
        return entries
    }

    /// The feeds of the first `limit` podcasts an iTunes search for `term` finds.
    func feeds(
        term: String, limit: Int, _ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void
    ) async throws -> [PodcastSource.FeedEntry] {
        let parameters = [
            ("term", term), ("media", "podcast"), ("entity", "podcast"), ("limit", String(limit)),
            ("country", country),
        ]
        let records: [Record]
        do {
            records = try await call("search", parameters, context)
        } catch let failure as FeedFetcher.Failure {
            throw SourceError("the iTunes podcast search for \"\(term)\" failed: \(failure.message)")
        }
        if records.isEmpty { context.notice("the iTunes podcast search for \"\(term)\" found no podcasts") }
        var entries: [PodcastSource.FeedEntry] = []
        for record in records.prefix(limit) {
            if let entry = try await entry(record, origin: "iTunes search \"\(term)\"", emit: emit) {
                entries.append(entry)
            }
        }
        return entries
    }

    private func entry(
        _ record: Record, origin: String, emit: @Sendable (SourceOutput) async throws -> Void
    ) async throws -> PodcastSource.FeedEntry? {
        let id = record.collectionId.map(String.init) ?? "?"
        let ref = ItemRef(id: id, title: record.collectionName ?? "iTunes id \(id)")
        guard let text = record.feedUrl, let url = URL(string: text), url.isFetchable else {
            let what = record.feedUrl.map { "its feedUrl \"\($0)\" is not an http(s) URL" } ?? "it has no feedUrl"
            try await emit(.failed(ref, url: nil, reason: "\(origin): \(what), so there is no feed to read"))
            return nil
        }
        return PodcastSource.FeedEntry(url: url, origin: origin)
    }

    private func call(
        _ path: String, _ parameters: [(String, String)], _ context: SourceContext
    ) async throws
        -> [Record]
    {
        var base = endpoint.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let query = parameters.map { "\(Self.encode($0.0))=\(Self.encode($0.1))" }.joined(separator: "&")
        guard let url = URL(string: "\(base)/\(path)?\(query)") else {
            throw FeedFetcher.Failure(
                message: "cannot build an iTunes API URL from endpoint \(endpoint.absoluteString)")
        }
        let response: HTTPResponse
        do {
            response = try await context.transport.send(
                HTTPRequest(url: url, headers: ["Accept": "application/json, text/javascript"]))
        } catch let error as TransportError {
            if error.code == .cancelled { throw CancellationError() }
            throw FeedFetcher.Failure(message: "iTunes API call failed: \(error)")
        }
        guard response.status == 200 else {
            throw FeedFetcher.Failure(message: "iTunes API answered HTTP \(response.status) for \(url.absoluteString)")
        }
        do {
            return try JSONDecoder().decode(Answer.self, from: response.body).results
        } catch {
            throw FeedFetcher.Failure(message: "iTunes API answer from \(url.absoluteString) is not the expected JSON")
        }
    }

    /// Form encoding as the API reads it: a space is `+`, everything but ASCII letters, digits and `. - _ *` is
    /// percent-encoded (FACTS: `URLQueryItem` would leave `+`, which the API reads as a space).
    static func encode(_ value: String) -> String {
        var encoded = ""
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"), UInt8(ascii: "_"),
                UInt8(ascii: "*"):
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            case UInt8(ascii: " "):
                encoded.append("+")
            default:
                encoded.append(String(format: "%%%02X", byte))
            }
        }
        return encoded
    }
}
