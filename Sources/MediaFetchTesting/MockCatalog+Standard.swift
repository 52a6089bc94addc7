extension MockCatalog {
    /// The catalog the server serves by default: about 800 songs by 36 artists, the same on every run.
    ///
    /// Built from word lists so that common words match many songs ("love" and "night" each match well over
    /// a hundred), with some artists, albums and titles made of hostile characters (é, ü, 日本語, `&`, `+`,
    /// `#`, `%`, `=`, `/`, `..`, a tab, a 300-character title) and a few exact duplicates of
    /// artist + album + title under different track ids.
    public static let standard: MockCatalog = {
        var builder = StandardCatalogBuilder()
        return MockCatalog(songs: builder.build())
    }()
}

/// Generates ``MockCatalog/standard``; a builder so that the word lists stay out of the public type.
private struct StandardCatalogBuilder {
    private var random = SeededGenerator(seed: 0x1_7E5_CA7A_1060)
    private var songs: [MockSong] = []
    private var artistSequence = 0
    private var albumSequence = 0

    private static let artists: [(name: String, genre: String)] = [
        ("The Velvet Foxes", "Rock"), ("Lena Marlow", "Pop"), ("Northern Lights Orchestra", "Classical"),
        ("Midnight Parade", "Alternative"), ("Jonas Reed", "Country"), ("Saltwater Kings", "Rock"),
        ("Ivy & The Echoes", "Pop"), ("Marco Bellini", "Jazz"), ("Ruby Shore", "R&B/Soul"),
        ("Desert Moon", "Alternative"), ("Paper Satellites", "Electronic"), ("Owen Hart Trio", "Jazz"),
        ("Electric Harbor", "Electronic"), ("Sofia Lindqvist", "Pop"), ("The Quiet Storm", "R&B/Soul"),
        ("Golden Hour", "Pop"), ("Kai Nakamura", "J-Pop"), ("Blue Lantern", "Rock"),
        ("Harper Vale", "Country"), ("Static Bloom", "Alternative"), ("Willow + Stone", "Folk"),
        ("Neon Coast", "Electronic"), ("Amara Okafor", "Hip-Hop/Rap"), ("Copper Wolves", "Rock"),
        ("Lucía Fernández", "Latin"), ("Jean-Luc Moreau", "Jazz"), ("Hollow Pines", "Folk"),
        ("Silver Tides", "Pop"), ("DJ Nova", "Dance"), ("Björk Halvorsen", "Alternative"),
    ]

    private static let albumAdjectives = [
        "Blue", "Summer", "Endless", "Midnight", "Golden", "Broken", "Electric", "Silent", "Wild", "Neon",
        "Velvet", "Crimson", "Distant", "Paper", "Sweet",
    ]
    private static let albumNouns = [
        "Nights", "Love", "Hearts", "Roads", "Dreams", "Skies", "Rivers", "Stories", "Lights", "Waves",
        "Fire", "Letters", "Echoes", "Songs", "Mornings",
    ]
    private static let titleFirst = [
        "Love", "Night", "Dancing", "Burning", "Falling", "Midnight", "Lonely", "Crazy", "Summer", "Hold",
        "Running", "Wild", "Sweet", "Heart", "Blue", "Golden", "Secret", "Lost", "Forever", "Slow",
    ]
    private static let titleSecond = [
        "Love", "Tonight", "in the Night", "Again", "Away", "Home", "Lights", "Rain", "Fire", "Heart",
        "Dreams", "Down", "Forever", "Baby", "Song", "Together", "Alone", "for Love", "All Night", "Road",
    ]

    /// Names that a file-system sink must not trust: path separators, dot segments, URL-special characters,
    /// non-ASCII text, control characters and a name longer than a file name may be.
    private static let hostileAlbums: [(artist: String, album: String, titles: [String])] = [
        ("Chloé & the Übermensch", "Café+Crème #1", ["100% Love", "Key=Value", "Up/Down", "Déjà Vu at Night"]),
        ("日本語バンド", "東京の夜 Night", ["愛 Love Song", "夜明け", "日本語のタイトル", "Sakura/桜"]),
        ("..", "...", [".", "..", "../../etc/passwd", "..\\..\\windows\\system32"]),
        ("AC/DC Tribute", "Rock & Roll / Part 2", ["Highway #9", "50% Off", "a=b&c=d", "Night+Day"]),
        ("C# Minor + Friends", "%20 Percent%2F", ["%2F Slash", "Plus + Minus", "Hash #tag", "Love = Love?"]),
        ("Mötley Ünion", "Über Straße", ["Müde Nacht", "Grüße", "Schön Love", "Tab\tSeparated"]),
        (
            "  Spaced Out  ", "Emoji 🎸 Love",
            ["🎸 Guitar Night", String(repeating: "Very Long Love Song Title ", count: 12), " lead", "trail. "]
        ),
    ]

    mutating func build() -> [MockSong] {
        for (index, artist) in Self.artists.enumerated() {
            let albumCount = index % 3 == 0 ? 3 : 2
            for album in 0..<albumCount {
                let name = pick(Self.albumAdjectives) + " " + pick(Self.albumNouns)
                let trackTotal = 8 + random.next(below: 7)
                var titles = (0..<trackTotal).map { _ in makeTitle() }
                // A handful of albums repeat their first title under a new track id (a reprise, a bonus take):
                // the exact duplicates a sink's collision handling has to cope with.
                if album == 0, index < 5, let first = titles.first { titles.append(first) }
                addAlbum(artist: artist.name, genre: artist.genre, album: name, titles: titles, artistIndex: index)
            }
        }
        for (offset, hostile) in Self.hostileAlbums.enumerated() {
            addAlbum(
                artist: hostile.artist, genre: "Alternative", album: hostile.album, titles: hostile.titles,
                artistIndex: Self.artists.count + offset
            )
        }
        return songs
    }

    private mutating func addAlbum(artist: String, genre: String, album: String, titles: [String], artistIndex: Int) {
        albumSequence += 1
        let collectionId = 1_400_000_000 + albumSequence * 11
        let artistId = 900_000 + (artistIndex + 1) * 13
        let year = 1995 + random.next(below: 30)
        let month = 1 + random.next(below: 12)
        let day = 1 + random.next(below: 28)
        let date = String(year) + "-" + twoDigits(month) + "-" + twoDigits(day) + "T12:00:00Z"
        let explicitFlags = titles.map { _ in random.next(below: 10) == 0 }
        let albumExplicit = explicitFlags.contains(true) ? "explicit" : "notExplicit"
        let collectionPrice = [7.99, 9.99, 11.99][random.next(below: 3)]
        for (number, title) in titles.enumerated() {
            let trackId = 1_500_000_000 + (songs.count + 1) * 7 + random.next(below: 7)
            let price: Double = random.next(below: 20) == 0 ? -1 : (random.next(below: 2) == 0 ? 0.99 : 1.29)
            songs.append(
                MockSong(
                    trackId: trackId,
                    artistName: artist,
                    collectionName: album,
                    trackName: title,
                    artistId: artistId,
                    collectionId: collectionId,
                    trackNumber: number + 1,
                    trackCount: titles.count,
                    trackTimeMillis: 120_000 + random.next(below: 300_001),
                    releaseDate: date,
                    primaryGenreName: genre,
                    trackPrice: price,
                    collectionPrice: collectionPrice,
                    trackExplicitness: explicitFlags[number] ? "explicit" : "notExplicit",
                    collectionExplicitness: albumExplicit,
                    isStreamable: random.next(below: 15) != 0
                )
            )
        }
    }

    private mutating func makeTitle() -> String {
        switch random.next(below: 6) {
        case 0: pick(Self.titleFirst)
        default: pick(Self.titleFirst) + " " + pick(Self.titleSecond)
        }
    }

    private mutating func pick(_ words: [String]) -> String {
        words[random.next(below: words.count)]
    }

    private func twoDigits(_ value: Int) -> String {
        value < 10 ? "0" + String(value) : String(value)
    }
}

/// SplitMix64 as a sequence: the standard library's generators are seeded randomly, which a fixed catalog
/// cannot use.
struct SeededGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state = state &+ 0x9E37_79B9_7F4A_7C15
        return MockRandom.mix(state)
    }

    /// A value in `0..<bound`; `bound` must be positive.
    mutating func next(below bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }
}
