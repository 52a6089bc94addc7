import Foundation
import MediaFetchCore

/// Fetches one feed politely: through the run's transport, at most `maxBytes`, with a conditional GET when the
/// ledger holds the feed's validators and the body they stand for (``SourceState``).
///
/// What is kept, per feed URL: `feed <url>` (JSON: the `ETag`, the `Last-Modified`, the URL after redirects) and
/// `feed-body <url>` (the body), written together and only for a feed that parsed. A 304 is answered from the kept
/// body; a feed that stops sending validators is forgotten.
struct FeedFetcher: Sendable {
    var maxBytes: Int

    /// A feed read, from the network or from the kept copy.
    struct Fetched {
        var feed: Feed
        /// The URL after redirects: relative URLs in the feed are resolved against it.
        var url: URL
        /// Whether the server answered 304 and the kept copy was read.
        var notModified: Bool
    }

    /// Why a feed gave nothing; the message names the URL and what to do where there is something.
    struct Failure: Error {
        var message: String
    }

    /// What is kept of a feed besides its body.
    struct Kept: Codable {
        var etag: String?
        var lastModified: String?
        var url: String
    }

    static let accept = "application/rss+xml, application/atom+xml, application/xml;q=0.9, text/xml;q=0.9, */*;q=0.5"

    func fetch(_ url: URL, _ context: SourceContext) async throws -> Fetched {
        let metaKey = "feed \(url.absoluteString)"
        let bodyKey = "feed-body \(url.absoluteString)"
        let state = context.state
        var kept: (Kept, Data)?
        if let state, let meta = try? state.value(forKey: metaKey), let body = try? state.value(forKey: bodyKey),
            let decoded = try? JSONDecoder().decode(Kept.self, from: meta)
        {
            kept = (decoded, body)
        }
        var headers: HTTPHeaders = ["Accept": Self.accept]
        if let (meta, _) = kept {
            headers.set("If-None-Match", meta.etag)
            headers.set("If-Modified-Since", meta.lastModified)
        }
        let response: HTTPResponse
        do {
            response = try await context.transport.send(HTTPRequest(url: url, headers: headers, maxBodyBytes: maxBytes))
        } catch let error as TransportError {
            if error.code == .cancelled { throw CancellationError() }
            if error.code.sizeLimit != nil {
                throw Failure(
                    message: "\(url.absoluteString): the feed is larger than max-feed-size "
                        + "(\(Self.megabytes(maxBytes))); raise max-feed-size if it is really that big")
            }
            throw Failure(message: error.description)
        }
        switch response.status {
        case 304:
            guard let (meta, body) = kept else {
                throw Failure(
                    message: "\(url.absoluteString): HTTP 304 (not modified) to a request that was not conditional")
            }
            let base = URL(string: meta.url) ?? url
            return Fetched(feed: try Self.parse(body, url: base), url: base, notModified: true)
        case 200:
            let feed = try Self.parse(response.body, url: response.url)
            if let state {
                let validator = Validator(headers: response.headers)
                let meta = validator.flatMap {
                    try? JSONEncoder().encode(
                        Kept(etag: $0.etag, lastModified: $0.lastModified, url: response.url.absoluteString))
                }
                // A feed without validators cannot be asked conditionally: nothing of it is worth keeping.
                do {
                    try state.set([(metaKey, meta), (bodyKey, meta == nil ? nil : response.body)])
                } catch {
                    context.notice("could not keep \(url.absoluteString) for the next run's conditional GET: \(error)")
                }
            }
            return Fetched(feed: feed, url: response.url, notModified: false)
        default:
            throw Failure(message: "\(response.url.absoluteString): HTTP \(response.status)")
        }
    }

    /// - Throws: ``Failure`` naming `url`, and the line and column of bad XML.
    static func parse(_ body: Data, url: URL) throws -> Feed {
        do {
            return try FeedParser.parse(body, url: url.absoluteString)
        } catch let failure as XMLReader.Failure {
            throw Failure(
                message: "\(url.absoluteString):\(failure.line):\(failure.column): invalid XML: \(failure.message)")
        } catch let notAFeed as FeedParser.NotAFeed {
            throw Failure(message: "\(url.absoluteString): \(notAFeed)")
        }
    }

    static func megabytes(_ bytes: Int) -> String {
        bytes % 1_000_000 == 0 ? "\(bytes / 1_000_000) MB" : "\(bytes) bytes"
    }
}
