import Foundation
import MediaFetchCore

/// Podcast episodes from their feeds: RSS 2.0 (with the iTunes and Podcasting 2.0 namespaces) or Atom, listed in
/// the config, in an OPML subscription list, or found through the iTunes Search API (`feedUrl` of a podcast record).
///
/// * Each feed is fetched through the run's transport, at most ``Configuration/maxFeedSize`` bytes, and read with
///   libxml2 (``XMLReader``: no entity substitution, no DTD, no network). A feed that cannot be fetched or read is
///   one failure naming its URL (and the line and column of bad XML); the other feeds go on.
/// * A feed that sent an `ETag` or `Last-Modified` is kept with them in the run's ledger (``SourceState``), and the
///   next run asks with `If-None-Match` / `If-Modified-Since`: an unchanged feed answers 304 and its episodes are
///   read from the kept copy, so a run over unchanged feeds costs one small request per feed, and the episodes the
///   sink already stored are not fetched again.
/// * Each feed gives its newest ``Configuration/maxEpisodes`` episodes published on or after
///   ``Configuration/since`` (episodes without a readable date come after the dated ones, and `since` does not
///   drop them), in that order. An episode's item id is the feed's URL and its GUID (its enclosure's URL when it has
///   none), the same on every run; a GUID repeated in a feed is skipped; an episode without an enclosure is skipped;
///   an enclosure that is not http(s) fails that episode. Relative enclosure and artwork URLs are resolved against
///   the feed's URL.
/// * Items are whole episodes (``MediaItem/isFullLength``), often 50 to 300 MB: the source suggests
///   `download.max-size: 2GB` in place of the 50MB default (``PodcastSource/descriptor``).
public struct PodcastSource: Source {
    /// The validated options.
    public struct Configuration: Sendable {
        /// Feeds listed in the config.
        public var feeds: [URL]
        /// An OPML subscription list (absolute path), and how to name it in messages.
        public var opml: String?
        /// iTunes podcast (collection) ids, looked up for their `feedUrl`.
        public var ids: [String]
        /// An iTunes podcast search; ``maxShows`` of its results are taken.
        public var term: String?
        public var maxShows: Int
        /// The iTunes Search API's base URL.
        public var endpoint: URL
        public var country: String
        /// Episodes to take per feed, newest first.
        public var maxEpisodes: Int
        /// Episodes published before this are left out.
        public var since: Date?
        /// The largest feed read, in bytes.
        public var maxFeedSize: Int

        public init(
            feeds: [URL] = [], opml: String? = nil, ids: [String] = [], term: String? = nil, maxShows: Int = 5,
            endpoint: URL = PodcastSource.defaultEndpoint, country: String = "US", maxEpisodes: Int = 10,
            since: Date? = nil, maxFeedSize: Int = PodcastSource.defaultMaxFeedSize
        ) {
            self.feeds = feeds
            self.opml = opml
            self.ids = ids
            self.term = term
            self.maxShows = maxShows
            self.endpoint = endpoint
            self.country = country
            self.maxEpisodes = maxEpisodes
            self.since = since
            self.maxFeedSize = maxFeedSize
        }
    }

    /// `https://itunes.apple.com`.
    public static let defaultEndpoint = URL(string: "https://itunes.apple.com") ?? URL(fileURLWithPath: "/")
    /// 20 MB: a feed of thousands of episodes with long show notes stays below it.
    public static let defaultMaxFeedSize = 20_000_000

    public let configuration: Configuration

    public init(_ configuration: Configuration) {
        self.configuration = configuration
    }

    /// One feed to read, and where the config named it.
    struct FeedEntry: Sendable {
        var url: URL
        /// `feeds`, `opml.xml:12`, `iTunes id 123`, `iTunes search "term"`: for messages.
        var origin: String
    }

    public func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
        var entries: [FeedEntry] = configuration.feeds.map { FeedEntry(url: $0, origin: "feeds") }
        if let opml = configuration.opml {
            entries += try await opmlEntries(opml, emit: emit)
        }
        let lookup = ITunesPodcasts(endpoint: configuration.endpoint, country: configuration.country)
        if !configuration.ids.isEmpty {
            entries += try await lookup.feeds(ids: configuration.ids, context, emit: emit)
        }
        if let term = configuration.term {
            entries += try await lookup.feeds(term: term, limit: configuration.maxShows, context, emit: emit)
        }
        var seen: Set<String> = []
        entries = entries.filter { seen.insert($0.url.absoluteString).inserted }

        var tally = FetchTally()
        let fetcher = FeedFetcher(maxBytes: configuration.maxFeedSize)
        for entry in entries {
            try Task.checkCancellation()
            let fetched: FeedFetcher.Fetched
            do {
                fetched = try await fetcher.fetch(entry.url, context)
            } catch let failure as FeedFetcher.Failure {
                tally.failed += 1
                try await emit(
                    .failed(
                        ItemRef(id: entry.url.absoluteString, title: "feed \(entry.url.absoluteString)"),
                        url: entry.url, reason: "feed (\(entry.origin)): \(failure.message)"))
                continue
            }
            if fetched.notModified { tally.unchanged += 1 } else { tally.fetched += 1 }
            for output in outputs(fetched.feed, feedKey: entry.url.absoluteString, base: fetched.url) {
                try await emit(output)
            }
        }
        if !entries.isEmpty {
            context.notice(
                "podcast: \(entries.count) feed\(entries.count == 1 ? "" : "s"): \(tally.fetched) fetched, "
                    + "\(tally.unchanged) unchanged (304, read from the copy kept in the ledger), \(tally.failed) failed"
            )
        }
    }

    private struct FetchTally {
        var fetched = 0
        var unchanged = 0
        var failed = 0
    }

    /// The feeds of the OPML file; an unreadable list is one failure, and the other feeds still run.
    private func opmlEntries(
        _ path: String, emit: @Sendable (SourceOutput) async throws -> Void
    ) async throws -> [FeedEntry] {
        let name = (path as NSString).lastPathComponent
        let subscriptions: [OPMLReader.Subscription]
        do {
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            subscriptions = try OPMLReader.subscriptions(data, name: path)
        } catch {
            let reason: String
            switch error {
            case let failure as XMLReader.Failure: reason = "\(path):\(failure)"
            case let notOPML as FeedParser.NotAFeed: reason = "\(path): \(notOPML)"
            default: reason = "cannot read the OPML file \(path): \(error.localizedDescription)"
            }
            try await emit(.failed(ItemRef(id: path, title: "OPML \(name)"), url: nil, reason: reason))
            return []
        }
        var entries: [FeedEntry] = []
        for subscription in subscriptions {
            let place = "\(name):\(subscription.line)"
            guard let url = URL(string: subscription.url), url.isFetchable else {
                try await emit(
                    .failed(
                        ItemRef(id: subscription.url, title: subscription.title ?? "feed at \(place)"), url: nil,
                        reason: "\(place): the feed URL \"\(subscription.url)\" is not an http(s) URL"))
                continue
            }
            entries.append(FeedEntry(url: url, origin: place))
        }
        return entries
    }

    /// What one feed gives: its items, newest first and at most ``Configuration/maxEpisodes``, and why each other
    /// episode considered is not one.
    func outputs(_ feed: Feed, feedKey: String, base: URL) -> [SourceOutput] {
        // Newest first; undated episodes after the dated ones, in feed order (a stable sort keeps it).
        let ordered = feed.episodes.enumerated().sorted { left, right in
            switch (left.element.date?.date, right.element.date?.date) {
            case (let a?, let b?): a != b ? a > b : left.offset < right.offset
            case (.some, nil): true
            case (nil, .some): false
            case (nil, nil): left.offset < right.offset
            }
        }.map(\.element)
        var outputs: [SourceOutput] = []
        var items = 0
        var guids: [String: String] = [:]
        let show = feed.title ?? base.host ?? feedKey
        for episode in ordered {
            guard items < configuration.maxEpisodes else { break }
            if let since = configuration.since, let date = episode.date?.date, date < since { continue }
            let title = episode.title ?? episode.itunesTitle ?? "untitled"
            let place = "\(base.absoluteString):\(episode.line)"
            guard let enclosure = episode.enclosure else {
                let ref = ItemRef(
                    id: "\(feedKey)#\(episode.guid ?? "line \(episode.line)")", title: title, artist: show)
                outputs.append(.skipped(ref, reason: "\(place): the episode has no enclosure, so nothing to download"))
                continue
            }
            let resolved = Self.resolve(enclosure.url, against: base)
            let guid = episode.guid.flatMap { $0.isEmpty ? nil : $0 } ?? resolved?.absoluteString ?? enclosure.url
            let ref = ItemRef(id: "\(feedKey)#\(guid)", title: title, artist: show)
            if let earlier = guids[guid] {
                outputs.append(.skipped(ref, reason: "\(place): the same GUID as \"\(earlier)\" in this feed"))
                continue
            }
            guids[guid] = title
            guard let url = resolved, url.isFetchable else {
                outputs.append(
                    .failed(
                        ref, url: resolved,
                        reason: "\(place): the enclosure \"\(enclosure.url)\" is not an http(s) URL"))
                continue
            }
            let artwork = (episode.artwork ?? feed.artwork).flatMap { Self.resolve($0, against: base) }
            var raw: [String: JSONValue] = [
                "feed": .string(feedKey), "guid": .string(guid), "enclosureUrl": .string(url.absoluteString),
            ]
            if let length = enclosure.length { raw["enclosureLength"] = .number(Double(length)) }
            if let type = enclosure.type { raw["enclosureType"] = .string(type) }
            if let season = episode.season { raw["season"] = .number(Double(season)) }
            if let number = episode.number { raw["episode"] = .number(Double(number)) }
            if let type = episode.episodeType { raw["episodeType"] = .string(type) }
            if let date = episode.date { raw["pubDate"] = .string(date.text) }
            outputs.append(
                .item(
                    MediaItem(
                        id: ref.id, kind: "podcast-episode", title: title, artist: episode.author ?? feed.author,
                        album: feed.title, trackNumber: episode.number, discNumber: episode.season,
                        durationMillis: episode.durationMillis, releaseDate: episode.date?.date,
                        genre: feed.category, previewURL: url,
                        artworkURL: artwork.flatMap { $0.isFetchable ? $0 : nil }, isFullLength: true,
                        previewType: enclosure.type, raw: .object(raw))))
            items += 1
        }
        return outputs
    }

    /// `text` as an absolute URL: relative ones (`/media/1.mp3`, `//cdn/1.mp3`) against the feed's URL; spaces,
    /// which feeds leave unencoded, encoded.
    static func resolve(_ text: String, against base: URL) -> URL? {
        let trimmed = FeedParser.trimmed(text)
        guard !trimmed.isEmpty else { return nil }
        let encoded = trimmed.replacingOccurrences(of: " ", with: "%20")
        return URL(string: encoded, relativeTo: base)?.absoluteURL
    }
}
