import Foundation
import MediaFetchCore

extension ITunesSource {
    public static let mediaTypes = [
        "music", "movie", "podcast", "musicVideo", "audiobook", "shortFilm", "tvShow", "software", "ebook", "all",
    ]
    static let lookupKeys = ["id", "amgArtistId", "amgAlbumId", "upc", "isbn"]

    /// `use: itunes`.
    public static let descriptor = SourceDescriptor(
        info: PluginInfo(
            kind: .source,
            name: "itunes",
            summary: "Searches Apple's iTunes Search API (/search by term, /lookup by ids) for previews and artwork",
            options: [
                OptionSpec(
                    "term", .string,
                    doc: "What to search for; spaces and any character are encoded safely. "
                        + "Give term or ids."),
                OptionSpec(
                    "ids", .stringList, doc: "Look up these ids instead of searching (lookup-key says which kind)."),
                OptionSpec(
                    "lookup-key", .choice(lookupKeys), default: .string("id"),
                    doc: "Which ids `ids` holds: iTunes ids, AMG artist or album ids, UPCs or ISBNs."),
                OptionSpec("media", .choice(mediaTypes), default: .string("music"), doc: "The media type to search."),
                OptionSpec(
                    "entity", .string,
                    doc: "The result type, which depends on media (music: musicTrack, song, "
                        + "album, musicArtist, musicVideo, mix); Apple's default when left out."),
                OptionSpec(
                    "attribute", .string,
                    doc: "The field the term is matched against (music: songTerm, "
                        + "artistTerm, albumTerm, ...); all fields when left out."),
                OptionSpec("country", .string, default: .string("US"), doc: "ISO 3166 two-letter store country."),
                OptionSpec(
                    "lang", .choice(["en_us", "ja_jp"]), doc: "Result language; Apple's default when left out."),
                OptionSpec(
                    "explicit", .choice(["Yes", "No"]),
                    doc: "Whether explicit content is included; Apple's "
                        + "default (Yes) when left out."),
                OptionSpec(
                    "limit", .integer(1...200), defaultText: "max-items, at most 200",
                    doc: "Results per API call (Apple allows 1..200)."),
                OptionSpec(
                    "max-items", .integer(1...1_000_000), default: .integer(50),
                    doc: "Results to take at most, of every kind (an album or an artist has no preview, but may "
                        + "have artwork); searches page with offset past 200."),
                OptionSpec(
                    "endpoint", .url, default: .url(URL(string: "https://itunes.apple.com")!),
                    doc: "Base URL of the API: point it at a mirror, or at `mediafetch mock-server`."),
                OptionSpec(
                    "requests-per-minute", .integer(0...1200), default: .integer(20),
                    doc: "API calls per minute at most (Apple allows about 20); 0 means unpaced."),
                OptionSpec(
                    "throttle-retries", .integer(0...20), default: .integer(3),
                    doc: "How often a throttled API call (HTTP 403 or 429) is tried again."),
                OptionSpec(
                    "throttle-backoff", .duration, default: .duration(.seconds(10)),
                    doc: "The first wait after throttling; it doubles with each retry."),
            ]
        ),
        make: { options, _ in ITunesSource(try configuration(from: options)) }
    )

    /// Turns validated options into a configuration, checking what depends on more than one key.
    static func configuration(from options: PluginOptions) throws -> Configuration {
        let query: Query
        switch (options.string("term"), options.list("ids")) {
        case (let term?, nil):
            guard !term.trimmingCharacters(in: .whitespaces).isEmpty else {
                throw options.error("term", "the search term is empty; give some words to search for")
            }
            query = .search(term: term)
        case (nil, let ids?):
            let key = options.string("lookup-key") ?? "id"
            let bad = ids.filter { $0.isEmpty || !$0.allSatisfy { $0.isASCII && ($0.isNumber || $0.isLetter) } }
            if let first = bad.first {
                throw options.error("ids", "\"\(first)\" is not an id; ids are digits (ISBNs and UPCs too)")
            }
            guard !ids.isEmpty else { throw options.error("ids", "the list of ids is empty") }
            query = .lookup(key: key, ids: ids)
        case (.some, .some):
            throw options.error("ids", "give either term (search) or ids (lookup), not both")
        case (nil, nil):
            throw options.error(nil, "the itunes source needs either term: (search) or ids: (lookup)")
        }

        let country = options.string("country") ?? "US"
        guard country.count == 2, country.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw options.error("country", "\"\(country)\" is not a two-letter ISO 3166 country code (e.g. US, GB, JP)")
        }
        var parameters: [(String, String)] = []
        for key in ["media", "entity", "attribute"] {
            if let value = options.string(key) { parameters.append((key, value)) }
        }
        parameters.append(("country", country))
        for key in ["lang", "explicit"] {
            if let value = options.string(key) { parameters.append((key, value)) }
        }

        let maxItems = options.integer("max-items") ?? 50
        return Configuration(
            endpoint: options.url("endpoint") ?? URL(string: "https://itunes.apple.com")!,
            query: query,
            parameters: parameters,
            pageSize: options.integer("limit") ?? min(maxItems, 200),
            maxItems: maxItems,
            requestsPerMinute: options.integer("requests-per-minute") ?? 20,
            throttleRetries: options.integer("throttle-retries") ?? 3,
            throttleBackoff: options.duration("throttle-backoff") ?? .seconds(10)
        )
    }
}
