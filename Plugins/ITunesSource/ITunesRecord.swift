import Foundation
import MediaFetchCore

/// One result of a search or lookup, decoded leniently: every field is optional, a field of an
/// unexpected type is treated as absent, and unknown fields are kept only in `raw`.
///
/// Kinds differ (FACTS: music videos have no collection ids, audiobooks no trackId and no kind,
/// ebooks no wrapperType, podcasts no previewUrl), so nothing here may be required.
struct ITunesRecord: Decodable, Sendable {
    var wrapperType: String?
    var kind: String?
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
    var artworkUrl100: String?
    var artworkUrl60: String?
    var artworkUrl30: String?
    var artworkUrl512: String?
    var raw: JSONValue

    private enum CodingKeys: String, CodingKey {
        case wrapperType, kind, trackId, collectionId, artistId, trackName, collectionName, artistName
        case trackNumber, discNumber, trackTimeMillis, releaseDate, primaryGenreName, genres, previewUrl
        case artworkUrl100, artworkUrl60, artworkUrl30, artworkUrl512
    }

    init(from decoder: any Decoder) throws {
        raw = try JSONValue(from: decoder)
        let container = try decoder.container(keyedBy: CodingKeys.self)
        wrapperType = container.lenientString(.wrapperType)
        kind = container.lenientString(.kind)
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
        artworkUrl100 = container.lenientString(.artworkUrl100)
        artworkUrl60 = container.lenientString(.artworkUrl60)
        artworkUrl30 = container.lenientString(.artworkUrl30)
        artworkUrl512 = container.lenientString(.artworkUrl512)
    }

    /// The record's identity: the track, else the collection (audiobooks), else the artist.
    var id: String? {
        (trackId ?? collectionId ?? artistId).map(String.init)
    }

    /// What kind of record this is, for messages and the `{kind}` placeholder.
    var itemKind: String? {
        kind ?? wrapperType
    }

    /// A person-readable name for a record that cannot become an item.
    var ref: ItemRef {
        ItemRef(id: id ?? "?", title: trackName ?? collectionName ?? artistName ?? "untitled", artist: artistName)
    }

    /// The item this record describes, or why it cannot be one.
    func mediaItem() -> Result<MediaItem, ItemRejection> {
        guard let id else { return .failure(.skipped("the record has no trackId, collectionId or artistId")) }
        guard let previewUrl, !previewUrl.isEmpty else {
            let what = itemKind.map { "a \($0) record" } ?? "the record"
            return .failure(.skipped("\(what) has no preview URL"))
        }
        guard let preview = URL(string: previewUrl), preview.isFetchable else {
            return .failure(
                .failed("preview URL \"\(previewUrl)\" is not an http(s) URL", url: URL(string: previewUrl)))
        }
        let title = trackName ?? collectionName ?? "untitled"
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
                artworkURL: (artworkUrl100 ?? artworkUrl60 ?? artworkUrl30 ?? artworkUrl512).flatMap(URL.init(string:)),
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
