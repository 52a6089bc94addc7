import Foundation

/// One thing a source found: a song, a video, an audiobook, or a plain file from a URL list.
///
/// Only `id` and `title` are always present; everything else is whatever the catalog knew.
public struct MediaItem: Sendable, Hashable, Codable {
    /// Stable within its source (the iTunes track id, or the URL of a list entry); with the source's name
    /// it keys the item across runs.
    public var id: String
    /// The catalog's kind, e.g. "song", "music-video", "podcast"; nil when it did not say.
    public var kind: String?
    public var title: String
    public var artist: String?
    public var album: String?
    public var trackNumber: Int?
    public var discNumber: Int?
    /// Play time in milliseconds.
    public var durationMillis: Int?
    public var releaseDate: Date?
    public var genre: String?
    public var previewURL: URL?
    public var artworkURL: URL?
    /// Whether ``previewURL`` is the whole work rather than an excerpt: a podcast episode's preview is the
    /// episode itself, often an hour or more of audio. The download section's `max-size` is what stops such a
    /// file from being fetched by surprise.
    public var isFullLength: Bool
    /// The media type the source announced for ``previewURL`` (a feed enclosure's `type`), when it said: names
    /// take their extension from it when the URL has none (`audio/mpeg` is `mp3`).
    public var previewType: String?
    /// The record the source decoded this item from, unknown fields included.
    public var raw: JSONValue?

    public init(
        id: String,
        kind: String? = nil,
        title: String,
        artist: String? = nil,
        album: String? = nil,
        trackNumber: Int? = nil,
        discNumber: Int? = nil,
        durationMillis: Int? = nil,
        releaseDate: Date? = nil,
        genre: String? = nil,
        previewURL: URL? = nil,
        artworkURL: URL? = nil,
        isFullLength: Bool = false,
        previewType: String? = nil,
        raw: JSONValue? = nil
    ) {
        self.id = id
        self.kind = kind
        self.title = title
        self.artist = artist
        self.album = album
        self.trackNumber = trackNumber
        self.discNumber = discNumber
        self.durationMillis = durationMillis
        self.releaseDate = releaseDate
        self.genre = genre
        self.previewURL = previewURL
        self.artworkURL = artworkURL
        self.isFullLength = isFullLength
        self.previewType = previewType
        self.raw = raw
    }

    /// Decodes what encoding a `MediaItem` wrote; `isFullLength` may be missing (JSON written before it existed, or
    /// by a program that does not know it), and then is false.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decode(String.self, forKey: .id)
        kind = try container.decodeIfPresent(String.self, forKey: .kind)
        title = try container.decode(String.self, forKey: .title)
        artist = try container.decodeIfPresent(String.self, forKey: .artist)
        album = try container.decodeIfPresent(String.self, forKey: .album)
        trackNumber = try container.decodeIfPresent(Int.self, forKey: .trackNumber)
        discNumber = try container.decodeIfPresent(Int.self, forKey: .discNumber)
        durationMillis = try container.decodeIfPresent(Int.self, forKey: .durationMillis)
        releaseDate = try container.decodeIfPresent(Date.self, forKey: .releaseDate)
        genre = try container.decodeIfPresent(String.self, forKey: .genre)
        previewURL = try container.decodeIfPresent(URL.self, forKey: .previewURL)
        artworkURL = try container.decodeIfPresent(URL.self, forKey: .artworkURL)
        isFullLength = try container.decodeIfPresent(Bool.self, forKey: .isFullLength) ?? false
        previewType = try container.decodeIfPresent(String.self, forKey: .previewType)
        raw = try container.decodeIfPresent(JSONValue.self, forKey: .raw)
    }

    /// A short reference for messages and events.
    public var ref: ItemRef { ItemRef(id: id, title: title, artist: artist) }
}

/// Which file of an item is meant.
///
/// An ``OpenEnumeration``: more kinds (an episode, a transcript) may come in a later version, so a `switch` over them
/// needs a `default`.
public struct AssetKind: OpenEnumeration, Codable {
    /// The name, as configs, layouts (`{asset}`), the ledger and JSON spell it: `preview`.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    public static let preview = Self("preview")
    public static let artwork = Self("artwork")

    public static let allCases: [Self] = [.preview, .artwork]
}

extension MediaItem {
    /// The URL of `asset`, if the item has one.
    public func url(for asset: AssetKind) -> URL? {
        switch asset {
        case .preview: previewURL
        case .artwork: artworkURL
        default: nil
        }
    }

    /// The file extension `asset` should be stored with, taken from its URL ("m4a" for
    /// `mzaf_1.plus.aac.p.m4a`); empty when the URL has none that looks like one (short, ASCII
    /// letters and digits), so a name is never given a made-up type.
    public func fileExtension(for asset: AssetKind) -> String {
        let url = url(for: asset)
        // Most URLs end in a plain name like `f00001.m4a`, read on bytes: URL.pathExtension decodes the whole
        // path and cost a tenth of a re-run's planning, once per item.
        if let url, let ext = Self.plainExtension(ofEncodedPath: url.path(percentEncoded: true)) { return ext }
        let ext = url?.pathExtension.lowercased() ?? ""
        let looksLikeOne = ext.utf8.count <= 8 && ext.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) }
        if looksLikeOne && !ext.isEmpty { return ext }
        // A tracking or download URL often ends in no name at all; the announced type still says what it is.
        if asset == .preview, let type = previewType {
            let essence = type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            return essence.flatMap { Self.extensions[$0] } ?? ""
        }
        return ""
    }

    /// The lowercased extension of a percent-encoded URL path without `%` whose last component is a plain name (not
    /// only dots before its last) ending in 1 to 8 ASCII letters and digits after a dot; nil for any other path, which
    /// Foundation's rules then judge. Where it answers, it answers as `URL.pathExtension` would.
    static func plainExtension(ofEncodedPath path: String) -> String? {
        path.withUTF8Bytes { bytes in
            guard let last = bytes.last, last != UInt8(ascii: "/") else { return nil }
            let start = bytes.lastIndex(of: UInt8(ascii: "/")).map { $0 + 1 } ?? 0
            // A stem of dots only (`..m4a`) has no extension for Foundation; a `%` anywhere may not decode.
            guard let dot = bytes[start...].lastIndex(of: UInt8(ascii: ".")),
                bytes[start..<dot].contains(where: { $0 != UInt8(ascii: ".") }), !bytes.contains(UInt8(ascii: "%"))
            else { return nil }
            let ext = bytes[(dot + 1)...]
            let isLetterOrDigit = { (byte: UInt8) in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
            }
            guard (1...8).contains(ext.count), ext.allSatisfy(isLetterOrDigit) else { return nil }
            return String(decoding: ext, as: UTF8.self).lowercased()
        }
    }

    /// The extensions of the media types feeds announce.
    static let extensions = [
        "audio/mpeg": "mp3", "audio/mp3": "mp3", "audio/mp4": "m4a", "audio/x-m4a": "m4a", "audio/m4a": "m4a",
        "audio/aac": "aac", "audio/ogg": "ogg", "audio/opus": "opus", "audio/flac": "flac", "audio/wav": "wav",
        "audio/x-wav": "wav", "video/mp4": "mp4", "video/x-m4v": "m4v", "video/quicktime": "mov",
        "video/webm": "webm", "audio/webm": "weba",
    ]
}

/// Enough of an item to name it in a message: `Jack Johnson – Upside Down [1469577741]`.
public struct ItemRef: Sendable, Hashable, Codable, CustomStringConvertible {
    public var id: String
    public var title: String
    public var artist: String?

    public init(id: String, title: String, artist: String? = nil) {
        self.id = id
        self.title = title
        self.artist = artist
    }

    /// For a terminal: control and bidirectional-override characters from the catalog are shown as `�`
    /// (a title must not be able to rewrite the line it is printed on), and an id that is a URL (a URL
    /// list's item) is left out, since messages name the URL anyway.
    public var description: String {
        let shown = id.contains("://") ? "" : " [\(Self.printable(id))]"
        if let artist, !artist.isEmpty { return "\(Self.printable(artist)) – \(Self.printable(title))" + shown }
        return Self.printable(title) + shown
    }

    /// `text` with control characters and bidirectional controls replaced by U+FFFD.
    public static func printable(_ text: String) -> String {
        String(
            String.UnicodeScalarView(
                text.unicodeScalars.map { scalar in
                    let value = scalar.value
                    let hidden =
                        value < 0x20 || (0x7F...0x9F).contains(value) || (0x202A...0x202E).contains(value)
                        || (0x2066...0x2069).contains(value) || value == 0x200E || value == 0x200F || value == 0x061C
                    return hidden ? "\u{FFFD}" : scalar
                }))
    }
}
