import Foundation

/// The songs a ``MockCatalogServer`` knows, with the same search the server runs, so that tests can compute
/// what an answer should contain; and answers recorded from Apple's API that it replays for other kinds
/// (``MockRecordedAnswer``).
public struct MockCatalog: Sendable {
    /// Every song, in catalog order (the order search answers use).
    public let songs: [MockSong]
    /// Recorded answers, replayed for searches of their media and entity instead of a search of `songs`.
    public let recorded: [MockRecordedAnswer]
    /// The generated files behind the recorded answers' preview and episode URLs, by served path.
    let recordedMedia: [String: RecordedMedia]
    /// The recorded artwork, by its served path with the size part set to `0x0bb`.
    let recordedArtwork: Set<String>
    /// Whether the previews are real AAC audio (``MockAudio``) that a browser can play, rather than generated
    /// bytes of the preview's size behind an `ftyp` box.
    public let servesRealAudio: Bool

    private let indexByTrackId: [Int: Int]
    /// Lower-cased artist, album and title per song, so a search does not lower-case 800 strings each time.
    private let haystacks: [(artist: String, album: String, title: String)]

    /// A catalog of exactly `songs`, and `recorded` answers for other searches. A later song with an already
    /// used `trackId` is dropped, so that ids stay unique whatever a test passes.
    /// With `servesRealAudio`, each preview is one of ``MockAudio``'s few-KB AAC files (chosen by track id), so
    /// that a page's audio element plays it; sizes are then theirs, not ``MockSong/previewSize``.
    public init(songs: [MockSong], recorded: [MockRecordedAnswer] = [], servesRealAudio: Bool = false) {
        self.servesRealAudio = servesRealAudio
        var kept: [MockSong] = []
        var index: [Int: Int] = [:]
        for song in songs where index[song.trackId] == nil {
            index[song.trackId] = kept.count
            kept.append(song)
        }
        self.songs = kept
        indexByTrackId = index
        haystacks = kept.map { ($0.artistName.lowercased(), $0.collectionName.lowercased(), $0.trackName.lowercased()) }
        self.recorded = recorded
        (recordedMedia, recordedArtwork) = Self.recordedFiles(recorded)
    }

    /// The song with `trackId`, if the catalog has it.
    public func song(trackId: Int) -> MockSong? {
        indexByTrackId[trackId].map { songs[$0] }
    }

    /// The songs of a collection, by disc then track number.
    public func songs(collectionId: Int) -> [MockSong] {
        songs.filter { $0.collectionId == collectionId }.sorted {
            ($0.discNumber, $0.trackNumber) < ($1.discNumber, $1.trackNumber)
        }
    }

    /// The songs of an artist, in catalog order.
    public func songs(artistId: Int) -> [MockSong] {
        songs.filter { $0.artistId == artistId }
    }

    /// The songs a search for `term` finds, in catalog order, before paging.
    ///
    /// A song matches when every whitespace-separated word of `term` occurs, ignoring case, inside its artist,
    /// album or title (a substring: "love" finds "Lovers"). `attribute` narrows the fields as Apple's does:
    /// `artistTerm` artist only, `albumTerm` album only, `songTerm` title only; anything else searches all three.
    /// A term with no words matches nothing.
    public func search(term: String, attribute: String? = nil) -> [MockSong] {
        let words = term.lowercased().split(whereSeparator: { $0.isWhitespace }).map(String.init)
        guard !words.isEmpty else { return [] }
        return songs.indices.filter { index in
            let fields = haystacks[index]
            let searched: [String]
            switch attribute {
            case "artistTerm": searched = [fields.artist]
            case "albumTerm": searched = [fields.album]
            case "songTerm": searched = [fields.title]
            default: searched = [fields.artist, fields.album, fields.title]
            }
            return words.allSatisfy { word in searched.contains { $0.contains(word) } }
        }.map { songs[$0] }
    }

    /// The path the server serves `song`'s preview at (see ``MockSong/previewPath``).
    public func previewPath(for song: MockSong) -> String { song.previewPath }

    /// The whole preview file of `song` as the server sends it, for byte-equality assertions.
    public func previewBytes(for song: MockSong) -> [UInt8] {
        let content = previewContent(for: song)
        return content.bytes(in: 0..<content.count)
    }

    /// The same songs, answers and search, with real AAC previews (see ``init(songs:recorded:servesRealAudio:)``).
    public func withRealAudio() -> MockCatalog {
        MockCatalog(songs: songs, recorded: recorded, servesRealAudio: true)
    }

    /// The artwork file at `size`×`size` of `song`'s album as the server sends it.
    public func artworkBytes(for song: MockSong, size: Int) -> [UInt8] {
        let content = MockCatalog.artworkContent(collectionId: song.collectionId, size: size)
        return content.bytes(in: 0..<content.count)
    }

    // MARK: - Content the server serves

    /// The start of an M4A file (an `ftyp` box naming M4A), so tools sniffing the file see audio.
    static let m4aHeader: [UInt8] = [
        0x00, 0x00, 0x00, 0x20, 0x66, 0x74, 0x79, 0x70, 0x4D, 0x34, 0x41, 0x20, 0x00, 0x00, 0x00, 0x00,
        0x4D, 0x34, 0x41, 0x20, 0x6D, 0x70, 0x34, 0x32, 0x69, 0x73, 0x6F, 0x6D, 0x00, 0x00, 0x00, 0x00,
    ]

    /// A JPEG/JFIF start of image, for the same reason.
    static let jpegHeader: [UInt8] = [
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01,
        0x00, 0x01, 0x00, 0x00,
    ]

    func previewContent(for song: MockSong) -> MockContent {
        if servesRealAudio {
            return MockContent(bytes: MockAudio.previews[song.trackId % MockAudio.previews.count])
        }
        return MockContent(size: song.previewSize, seed: UInt64(bitPattern: Int64(song.trackId)), prefix: Self.m4aHeader)
    }

    /// Small and deterministic per album and size, growing with the size so that 600x600 is bigger than 100x100.
    static func artworkContent(collectionId: Int, size: Int) -> MockContent {
        let seed = MockRandom.mix(UInt64(bitPattern: Int64(collectionId))) ^ UInt64(size)
        return MockContent(size: Int64(512 + min(size, 10_000) * 4), seed: seed, prefix: jpegHeader)
    }

    /// Any song of the album `collectionId`, whose fields describe the album.
    func firstSong(collectionId: Int) -> MockSong? {
        songs.first { $0.collectionId == collectionId }
    }

    func firstSong(artistId: Int) -> MockSong? {
        songs.first { $0.artistId == artistId }
    }

    /// The song whose preview lives at `path`, if any.
    func song(previewPath path: String) -> MockSong? {
        guard let name = path.split(separator: "/").last, name.hasPrefix("mzaf_"), name.hasSuffix(".plus.aac.p.m4a")
        else { return nil }
        let digits = name.dropFirst("mzaf_".count).dropLast(".plus.aac.p.m4a".count)
        guard let trackId = Int(digits), let song = song(trackId: trackId), song.previewPath == path else { return nil }
        return song
    }
}
