import Foundation
import MediaFetchCore

extension PodcastSource {
    /// The layout podcast episodes get unless the sink's config says otherwise: a folder per show, the
    /// episodes in it by date.
    public static let defaultLayout = "{album}/{release-date} {title}.{ext}"
    /// The download section's `max-size` with this source unless the config says otherwise: 2 GB, since an episode
    /// is the whole episode (a three-hour show at 128 kbit/s is about 170 MB, a video one more).
    public static let defaultMaxSize = 2_000_000_000

    /// `use: podcast`.
    public static let descriptor = SourceDescriptor(
        info: PluginInfo(
            kind: .source,
            name: "podcast",
            summary: "Reads podcast feeds (RSS 2.0 with the iTunes and Podcasting 2.0 namespaces, or Atom) and gives "
                + "each episode's enclosure, the whole episode; feeds come from feeds, opml, ids or term",
            options: [
                OptionSpec(
                    "feeds", .stringList,
                    doc: "Feed URLs (http or https). Give feeds, opml, ids or term, or several of them."),
                OptionSpec(
                    "opml", .path,
                    doc: "An OPML subscription list, as podcast apps export it (relative to the config file): every "
                        + "outline's xmlUrl is a feed."),
                OptionSpec(
                    "ids", .stringList,
                    doc: "iTunes podcast ids (collectionId, the digits of an Apple Podcasts link), looked up in the "
                        + "iTunes Search API for their feedUrl."),
                OptionSpec(
                    "term", .string,
                    doc: "An iTunes podcast search (media=podcast); the feeds of its first max-shows results are read."),
                OptionSpec(
                    "max-shows", .integer(1...200), default: .integer(5),
                    doc: "How many podcasts of a term search to read."),
                OptionSpec(
                    "endpoint", .url, default: .url(defaultEndpoint),
                    doc: "Base URL of the iTunes Search API, for ids and term: a mirror, or `mediafetch mock-server`."),
                OptionSpec("country", .string, default: .string("US"), doc: "The store country of ids and term."),
                OptionSpec(
                    "max-episodes", .integer(1...1_000_000), default: .integer(10),
                    doc: "Episodes to take from each feed, newest first (by publication date; undated ones last)."),
                OptionSpec(
                    "since", .string,
                    doc: "Leave out episodes published before this date (2024-01-31, or 2024-01-31T18:00:00Z; UTC); "
                        + "episodes without a readable date are kept."),
                OptionSpec(
                    "max-feed-size", .byteSize, default: .integer(defaultMaxFeedSize), defaultText: "20MB",
                    doc: "The largest feed read; a larger one fails with its URL, before its body is fetched when "
                        + "the server says its length."),
            ],
            suggestedDefaults: [
                .init(section: .sink, key: "layout", value: .string(defaultLayout)),
                .init(section: nil, key: "max-size", value: .integer(defaultMaxSize)),
            ]
        ),
        make: { options, _ in PodcastSource(try configuration(from: options)) }
    )

    /// Turns validated options into a configuration, checking what depends on more than one key.
    static func configuration(from options: PluginOptions) throws -> Configuration {
        var feeds: [URL] = []
        for text in options.list("feeds") ?? [] {
            guard let url = URL(string: text.trimmingCharacters(in: .whitespaces)), url.isFetchable else {
                throw options.error("feeds", "\"\(text)\" is not an http(s) URL")
            }
            feeds.append(url)
        }
        let opml = options.path("opml")
        if let opml {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: opml, isDirectory: &isDirectory), !isDirectory.boolValue
            else {
                throw options.error("opml", "no such OPML file: \(opml) (a relative path is relative to the config)")
            }
        }
        let ids = options.list("ids") ?? []
        if let bad = ids.first(where: { $0.isEmpty || !$0.allSatisfy { $0.isASCII && $0.isNumber } }) {
            throw options.error("ids", "\"\(bad)\" is not an iTunes podcast id; ids are digits")
        }
        let term = options.string("term")
        if let term, term.trimmingCharacters(in: .whitespaces).isEmpty {
            throw options.error("term", "the search term is empty; give some words to search for")
        }
        guard !feeds.isEmpty || opml != nil || !ids.isEmpty || term != nil else {
            throw options.error(
                nil, "the podcast source needs feeds: (URLs), opml: (a subscription list), ids: or term: (iTunes)")
        }
        let country = options.string("country") ?? "US"
        guard country.count == 2, country.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw options.error("country", "\"\(country)\" is not a two-letter ISO 3166 country code (e.g. US, GB, JP)")
        }
        var since: Date?
        if let text = options.string("since") {
            guard let date = RFC822Date.parse(text) else {
                throw options.error(
                    "since", "\"\(text)\" is not a date; write it as 2024-01-31 or 2024-01-31T18:00:00Z")
            }
            since = date
        }
        return Configuration(
            feeds: feeds, opml: opml, ids: ids, term: term, maxShows: options.integer("max-shows") ?? 5,
            endpoint: options.url("endpoint") ?? defaultEndpoint, country: country,
            maxEpisodes: options.integer("max-episodes") ?? 10, since: since,
            // `none` lifts the limit as far as libxml2 reads (2 GiB).
            maxFeedSize: options.integer("max-feed-size")
                ?? (options.string("max-feed-size") == "none" ? Int(Int32.max) : defaultMaxFeedSize))
    }
}
