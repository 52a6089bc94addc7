import Foundation
import MediaFetchCore

/// One result of a search or lookup, decoded leniently: every field is optional, a field of an
/// unexpected type is treated as absent, and unknown fields are kept only in `raw`.
///
/// Kinds differ (FACTS: music videos have no collection ids, audiobooks no trackId and no kind,
/// ebooks no wrapperType, podcasts no previewUrl), so nothing here may be required. Every record with an id
/// becomes an item, a preview or not: an album, an artist or an app is still a result, and its artwork may be
/// what a run stores.
struct ITunesRecord: Decodable, Sendable {
    var wrapperType: String?
    var kind: String?
    var collectionType: String?
    var trackId: Int?
    var collectionId: Int?
    var artistId: Int?
    var trackName: String?
    var collectionName: String?
    var artistName: String?
    var trackNumber: Int?
    var discNumber: Int?
    var trackTimeMillis: Int?
    var releaseDate: String?
    var primaryGenreName: String?
    var genres: [String]?
    var previewUrl: String?
    var episodeUrl: String?
    var artworkUrl100: String?
    var artworkUrl60: String?
    var artworkUrl30: String?
    var artworkUrl160: String?
    var artworkUrl512: String?
    var artworkUrl600: String?
    var raw: JSONValue

    private enum CodingKeys: String, CodingKey {
        case wrapperType, kind, collectionType, trackId, collectionId, artistId, trackName, collectionName, artistName
        case trackNumber, discNumber, trackTimeMillis, releaseDate, primaryGenreName, genres, previewUrl, episodeUrl
        case artworkUrl100, artworkUrl60, artworkUrl30, artworkUrl160, artworkUrl512, artworkUrl600
    }

    init(from decoder: any Decoder) throws {
        raw = try JSONValue(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        wrapperType = container.lenientString(.wrapperType)
        kind = container.lenientString(.kind)
        collectionType = container.lenientString(.collectionType)
        trackId = container.lenientInt(.trackId)
        collectionId = container.lenientInt(.collectionId)
        artistId = container.lenientInt(.artistId)
        trackName = container.lenientString(.trackName)
        collectionName = container.lenientString(.collectionName)
        artistName = container.lenientString(.artistName)
        trackNumber = container.lenientInt(.trackNumber)
        discNumber = container.lenientInt(.discNumber)
        trackTimeMillis = container.lenientInt(.trackTimeMillis)
        releaseDate = container.lenientString(.releaseDate)
        primaryGenreName = container.lenientString(.primaryGenreName)
        genres = try? container.decodeIfPresent([String].self, forKey: .genres)
        previewUrl = container.lenientString(.previewUrl)
        episodeUrl = container.lenientString(.episodeUrl)
        artworkUrl100 = container.lenientString(.artworkUrl100)
        artworkUrl60 = container.lenientString(.artworkUrl60)
        artworkUrl30 = container.lenientString(.artworkUrl30)
        artworkUrl160 = container.lenientString(.artworkUrl160)
        artworkUrl512 = container.lenientString(.artworkUrl512)
        artworkUrl600 = container.lenientString(.artworkUrl600)
    }

    /// The record's identity: the track, else the collection (audiobooks), else the artist.
    var id: String? {
        (trackId ?? collectionId ?? artistId).map(String.init)
    }

    /// What kind of record this is, for messages and the `{kind}` placeholder: Apple's `kind` ("song",
    /// "podcast-episode", "ebook"), else an album's or other collection's `collectionType` ("album"), else the
    /// `wrapperType` ("artist", "audiobook").
    var itemKind: String? {
        if let kind { return kind }
        if wrapperType == "collection", let collectionType, !collectionType.isEmpty {
            return collectionType.lowercased()
        }
        return wrapperType
    }

    /// Whether the preview is the whole work: a podcast episode's `previewUrl` is its `episodeUrl`.
    var isFullLength: Bool {
        guard let previewUrl else { return false }
        return previewUrl == episodeUrl || wrapperType == "podcastEpisode" || kind == "podcast-episode"
    }

    /// A person-readable name for a record that cannot become an item.
    var ref: ItemRef {
        ItemRef(id: id ?? "?", title: title, artist: artistName)
    }

    /// A track's name, else its collection's (albums, audiobooks, podcasts), else its artist's (artists).
    var title: String {
        trackName ?? collectionName ?? artistName ?? "untitled"
    }

    /// The item this record describes, or why it cannot be one.
    func mediaItem() -> Result<MediaItem, ItemRejection> {
        guard let id else {
            let what = itemKind.map { "\(IndefiniteArticle.before($0)) record" } ?? "a record"
            return .failure(.skipped("\(what) without a trackId, collectionId or artistId cannot be told apart"))
        }
        var preview: URL?
        if let previewUrl, !previewUrl.isEmpty {
            guard let url = URL(string: previewUrl), url.isFetchable else {
                return .failure(
                    .failed("preview URL \"\(previewUrl)\" is not an http(s) URL", url: URL(string: previewUrl)))
            }
            preview = url
        }
        // Artwork that is not http(s) is left out rather than failing the record: the preview may still be fine.
        let artwork = [artworkUrl100, artworkUrl60, artworkUrl30, artworkUrl160, artworkUrl512, artworkUrl600]
            .lazy.compactMap { $0.flatMap(URL.init(string:)) }.first { $0.isFetchable }
        return .success(
            MediaItem(
                id: id,
                kind: itemKind,
                title: title,
                artist: artistName,
                album: trackName == nil ? nil : collectionName,
                trackNumber: trackNumber,
                discNumber: discNumber,
                durationMillis: trackTimeMillis,
                releaseDate: releaseDate.flatMap(Self.parseDate),
                genre: primaryGenreName ?? genres?.first,
                previewURL: preview,
                artworkURL: artwork,
                isFullLength: preview != nil && isFullLength,
                raw: raw
            ))
    }

    /// Apple writes `2005-01-01T12:00:00Z`; some kinds give a bare date.
    static func parseDate(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        return try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day())
    }
}

/// Why a record did not become an item.
enum ItemRejection: Error {
    case skipped(String)
    case failed(String, url: URL?)
}

/// The envelope: `{"resultCount": N, "results": [...]}`.
struct ITunesResponse: Decodable {
    var resultCount: Int?
    var results: [ITunesRecord]
}

extension KeyedDecodingContainer {
    func lenientString(_ key: Key) -> String? {
        try? decodeIfPresent(String.self, forKey: key)
    }

    /// An integer, also when it came as a whole float or a numeric string.
    func lenientInt(_ key: Key) -> Int? {
        if let value = try? decodeIfPresent(Int.self, forKey: key) { return value }
        if let value = try? decodeIfPresent(Double.self, forKey: key), value == value.rounded(),
            abs(value) < 9e15
        {
            return Int(value)
        }
        return (try? decodeIfPresent(String.self, forKey: key)).flatMap { $0.flatMap(Int.init) }
    }
}
