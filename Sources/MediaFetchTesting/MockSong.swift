import Foundation

/// One song of a ``MockCatalog``: the fields an iTunes song record carries, with derived preview and
/// artwork paths so that a test can predict every URL and byte the mock server will serve.
public struct MockSong: Sendable, Hashable {
    /// Unique within a catalog; it also names the preview file and seeds its bytes.
    public var trackId: Int
    public var artistId: Int
    public var collectionId: Int
    public var artistName: String
    public var collectionName: String
    public var trackName: String
    public var trackNumber: Int
    public var trackCount: Int
    public var discNumber: Int
    public var discCount: Int
    /// The full track's length (not the preview's), in milliseconds.
    public var trackTimeMillis: Int
    /// ISO 8601, e.g. `2005-01-01T12:00:00Z`.
    public var releaseDate: String
    public var primaryGenreName: String
    /// -1 means "album only", as in Apple's records.
    public var trackPrice: Double
    public var collectionPrice: Double
    /// `explicit`, `notExplicit` or `cleaned`.
    public var trackExplicitness: String
    public var collectionExplicitness: String
    public var isStreamable: Bool

    /// Makes a song; ids and details a test does not care about get plausible defaults derived from `trackId`.
    public init(
        trackId: Int,
        artistName: String,
        collectionName: String,
        trackName: String,
        artistId: Int? = nil,
        collectionId: Int? = nil,
        trackNumber: Int = 1,
        trackCount: Int = 1,
        discNumber: Int = 1,
        discCount: Int = 1,
        trackTimeMillis: Int = 200_000,
        releaseDate: String = "2005-01-01T12:00:00Z",
        primaryGenreName: String = "Rock",
        trackPrice: Double = 1.29,
        collectionPrice: Double = 9.99,
        trackExplicitness: String = "notExplicit",
        collectionExplicitness: String = "notExplicit",
        isStreamable: Bool = true
    ) {
        self.trackId = trackId
        // Ids of other kinds live in their own ranges so that a lookup id is never ambiguous.
        self.artistId = artistId ?? 900_000 + trackId % 100_000
        self.collectionId = collectionId ?? 1_400_000_000 + trackId % 100_000_000
        self.artistName = artistName
        self.collectionName = collectionName
        self.trackName = trackName
        self.trackNumber = trackNumber
        self.trackCount = trackCount
        self.discNumber = discNumber
        self.discCount = discCount
        self.trackTimeMillis = trackTimeMillis
        self.releaseDate = releaseDate
        self.primaryGenreName = primaryGenreName
        self.trackPrice = trackPrice
        self.collectionPrice = collectionPrice
        self.trackExplicitness = trackExplicitness
        self.collectionExplicitness = collectionExplicitness
        self.isStreamable = isStreamable
    }

    /// The path of this song's preview on the mock server, shaped like Apple's:
    /// `/itunes-assets/AudioPreview125/v4/<2 hex>/<2 hex>/mzaf_<trackId>.plus.aac.p.m4a`.
    public var previewPath: String {
        let hash = MockRandom.mix(UInt64(bitPattern: Int64(trackId)))
        let first = String(format: "%02x", Int(hash & 0xFF))
        let second = String(format: "%02x", Int((hash >> 8) & 0xFF))
        return "/itunes-assets/AudioPreview125/v4/\(first)/\(second)/mzaf_\(trackId).plus.aac.p.m4a"
    }

    /// The preview's size in bytes: fixed per song, between 300_000 and 1_200_000.
    public var previewSize: Int64 {
        300_000 + Int64(MockRandom.mix(UInt64(bitPattern: Int64(trackId)) ^ 0x51CE) % 900_001)
    }

    /// The path of the album artwork at `size`×`size` pixels: `/image/thumb/<collectionId>/<size>x<size>bb.jpg`.
    public func artworkPath(size: Int) -> String {
        "/image/thumb/\(collectionId)/\(size)x\(size)bb.jpg"
    }

    /// The song as Apple's search and lookup answers carry it, keys in Apple's order, with preview and artwork
    /// URLs under `baseURL` (the mock server's).
    public func jsonRecord(baseURL: URL) -> String {
        let base = MockSong.trimmedBase(baseURL)
        var json = JSONObjectWriter()
        json.add("wrapperType", "track")
        json.add("kind", "song")
        json.add("artistId", artistId)
        json.add("collectionId", collectionId)
        json.add("trackId", trackId)
        json.add("artistName", artistName)
        json.add("collectionName", collectionName)
        json.add("trackName", trackName)
        json.add("collectionCensoredName", collectionName)
        json.add("trackCensoredName", trackName)
        json.add("artistViewUrl", artistViewURL)
        let trackViewURL = "https://music.apple.com/us/album/\(Self.slug(trackName))/\(collectionId)?i=\(trackId)&uo=4"
        json.add("collectionViewUrl", trackViewURL)
        json.add("trackViewUrl", trackViewURL)
        json.add("previewUrl", base + previewPath)
        json.add("artworkUrl30", base + artworkPath(size: 30))
        json.add("artworkUrl60", base + artworkPath(size: 60))
        json.add("artworkUrl100", base + artworkPath(size: 100))
        json.add("collectionPrice", price: collectionPrice)
        json.add("trackPrice", price: trackPrice)
        json.add("releaseDate", releaseDate)
        json.add("collectionExplicitness", collectionExplicitness)
        json.add("trackExplicitness", trackExplicitness)
        json.add("discCount", discCount)
        json.add("discNumber", discNumber)
        json.add("trackCount", trackCount)
        json.add("trackNumber", trackNumber)
        json.add("trackTimeMillis", trackTimeMillis)
        json.add("country", "USA")
        json.add("currency", "USD")
        json.add("primaryGenreName", primaryGenreName)
        json.add("isStreamable", isStreamable)
        return json.result
    }

    /// The collection (album) record a lookup of `collectionId` answers with: no `previewUrl`, as at Apple.
    public func collectionJSONRecord(baseURL: URL) -> String {
        let base = MockSong.trimmedBase(baseURL)
        var json = JSONObjectWriter()
        json.add("wrapperType", "collection")
        json.add("collectionType", "Album")
        json.add("artistId", artistId)
        json.add("collectionId", collectionId)
        json.add("artistName", artistName)
        json.add("collectionName", collectionName)
        json.add("collectionCensoredName", collectionName)
        json.add("artistViewUrl", artistViewURL)
        let albumSlug = Self.slug(collectionName)
        json.add("collectionViewUrl", "https://music.apple.com/us/album/\(albumSlug)/\(collectionId)?uo=4")
        json.add("artworkUrl60", base + artworkPath(size: 60))
        json.add("artworkUrl100", base + artworkPath(size: 100))
        json.add("collectionPrice", price: collectionPrice)
        json.add("collectionExplicitness", collectionExplicitness)
        json.add("trackCount", trackCount)
        json.add("copyright", "℗ \(releaseDate.prefix(4)) \(artistName)")
        json.add("country", "USA")
        json.add("currency", "USD")
        json.add("releaseDate", releaseDate)
        json.add("primaryGenreName", primaryGenreName)
        return json.result
    }

    /// The artist record a lookup of `artistId` answers with.
    public func artistJSONRecord() -> String {
        var json = JSONObjectWriter()
        json.add("wrapperType", "artist")
        json.add("artistType", "Artist")
        json.add("artistName", artistName)
        json.add("artistLinkUrl", artistViewURL)
        json.add("artistId", artistId)
        json.add("primaryGenreName", primaryGenreName)
        return json.result
    }

    private var artistViewURL: String {
        "https://music.apple.com/us/artist/\(Self.slug(artistName))/\(artistId)?uo=4"
    }

    /// Lower-case ASCII letters and digits joined by dashes, as Apple's store links are.
    static func slug(_ text: String) -> String {
        var out = ""
        var pendingDash = false
        for scalar in text.lowercased().unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                if pendingDash, !out.isEmpty { out += "-" }
                pendingDash = false
                out.unicodeScalars.append(scalar)
            } else {
                pendingDash = true
            }
        }
        return out.isEmpty ? "unknown" : out
    }

    /// `http://127.0.0.1:PORT` without a trailing slash, so that paths can be appended.
    static func trimmedBase(_ url: URL) -> String {
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
