import Foundation

/// Answers `/search` and `/lookup` the way Apple's iTunes Search API does, from a ``MockCatalog``.
///
/// Pure (no sockets), so that ``MockCatalogServer`` and ``ScriptedTransport`` give the same answers.
struct MockITunesAPI: Sendable {
    let catalog: MockCatalog
    /// Where preview and artwork URLs in records point.
    let baseURL: URL
    /// The catalog's recorded answers with their media URLs moved onto `baseURL`, in the catalog's order.
    private let recordedRecords: [[String]]

    init(catalog: MockCatalog, baseURL: URL) {
        self.catalog = catalog
        self.baseURL = baseURL
        let base = MockSong.trimmedBase(baseURL)
        recordedRecords = catalog.recorded.map { $0.records.map { MockRecordedAnswer.rewrite($0, base: base) } }
    }

    static let contentType = "text/javascript; charset=utf-8"

    static let media: Set<String> = [
        "movie", "podcast", "music", "musicVideo", "audiobook", "shortFilm", "tvShow", "software", "ebook", "all",
    ]

    /// Valid `entity` values per `media`, from Apple's documentation.
    static let entities: [String: Set<String>] = [
        "music": ["musicArtist", "musicTrack", "album", "musicVideo", "mix", "song"],
        "movie": ["movieArtist", "movie"],
        // podcastEpisode is not in Apple's table, but its search answers it (with the episodes).
        "podcast": ["podcastAuthor", "podcast", "podcastEpisode"],
        "musicVideo": ["musicArtist", "musicVideo"],
        "audiobook": ["audiobookAuthor", "audiobook"],
        "shortFilm": ["shortFilmArtist", "shortFilm"],
        "tvShow": ["tvEpisode", "tvSeason"],
        "software": ["software", "iPadSoftware", "macSoftware"],
        "ebook": ["ebook"],
        "all": ["movie", "album", "allArtist", "podcast", "musicVideo", "mix", "audiobook", "tvSeason", "allTrack"],
    ]

    static let musicAttributes: Set<String> = [
        "mixTerm", "genreIndex", "artistTerm", "composerTerm", "albumTerm", "ratingIndex", "songTerm",
    ]

    /// Other media's attributes, accepted when `media` is not music so that such a search is not a 400.
    static let otherAttributes: Set<String> = [
        "actorTerm", "languageTerm", "allArtistTerm", "tvEpisodeTerm", "shortFilmTerm", "producerTerm",
        "titleTerm", "featureFilmTerm", "movieArtistTerm", "movieTerm", "authorTerm", "descriptionTerm",
        "tvSeasonTerm", "directorTerm", "keywordsTerm", "musicVideoTerm", "releaseYearTerm", "allTrackTerm",
    ]

    /// The `queryParameters` object of Apple's 400 answers, copied from a captured one.
    static let errorQueryParameters = """
        {"output":"json", "callback":"A javascript function to handle your search results", \
        "country":"ISO-2A country code", "limit":"The number of search results to return", \
        "term":"A search string", "lang":"ISO-2A language code"}
        """

    func search(_ request: MockRequest) -> (status: Int, body: [UInt8]) {
        var invalid: [String] = []
        let media = request.query("media")
        let entity = request.query("entity")
        let attribute = request.query("attribute")
        let term = request.query("term")
        if let media, !Self.media.contains(media) {
            invalid.append("mediaType")
        } else {
            let scope = media ?? "music"
            var allowed = Self.entities[scope] ?? []
            if scope == "all" { allowed.formUnion(Self.entities["music"] ?? []) }
            if let entity, !allowed.contains(entity) { invalid.append("resultEntity") }
            let attributes = scope == "music" ? Self.musicAttributes : Self.musicAttributes.union(Self.otherAttributes)
            if let attribute, !attributes.contains(attribute) { invalid.append("attributeType") }
        }
        if let country = request.query("country"), !Self.isCountryCode(country) { invalid.append("country") }
        if term == nil { invalid.append("term") }
        guard invalid.isEmpty, let term else { return Self.error(keys: invalid) }

        let limit = min(200, max(1, Int(request.query("limit") ?? "") ?? 50))
        let offset = max(0, Int(request.query("offset") ?? "") ?? 0)
        if let index = catalog.recorded.firstIndex(where: { $0.media == (media ?? "music") && $0.entity == entity }) {
            let records = recordedRecords[index]
            let page = offset < records.count ? Array(records[offset..<min(records.count, offset + limit)]) : []
            return (200, Self.results(page))
        }
        var songs: [MockSong] = []
        if ["music", "all"].contains(media ?? "music") {
            songs = catalog.search(term: term, attribute: attribute)
        }
        if request.query("explicit")?.lowercased() == "no" {
            songs.removeAll { $0.trackExplicitness == "explicit" }
        }
        let records: [String]
        switch entity {
        case nil, "song", "musicTrack", "allTrack":
            records = songs.map { $0.jsonRecord(baseURL: baseURL) }
        case "album":
            records = Self.unique(songs, by: \.collectionId).map { $0.collectionJSONRecord(baseURL: baseURL) }
        case "musicArtist", "allArtist":
            records = Self.unique(songs, by: \.artistId).map { $0.artistJSONRecord() }
        default:
            records = []
        }
        let page = offset < records.count ? Array(records[offset..<min(records.count, offset + limit)]) : []
        return (200, Self.results(page))
    }

    func lookup(_ request: MockRequest) -> (status: Int, body: [UInt8]) {
        guard let idList = request.query("id") else {
            // Apple also looks up by amgArtistId, upc and isbn; the mock has none of those, so they find nothing.
            let otherKeys = ["amgArtistId", "amgAlbumId", "upc", "isbn"]
            return otherKeys.contains { request.query($0) != nil } ? (200, Self.results([])) : Self.error(keys: ["id"])
        }
        let entity = request.query("entity")
        if let entity, !(Self.entities["music"] ?? []).contains(entity) { return Self.error(keys: ["resultEntity"]) }
        let limit = request.query("limit").flatMap { Int($0) }.map { min(200, max(1, $0)) }
        var records: [String] = []
        for id in idList.split(separator: ",").compactMap({ Int($0.trimmingCharacters(in: .whitespaces)) }) {
            if let song = catalog.song(trackId: id) {
                records.append(song.jsonRecord(baseURL: baseURL))
            } else if let album = catalog.firstSong(collectionId: id) {
                records.append(album.collectionJSONRecord(baseURL: baseURL))
                if entity == "song" || entity == "musicTrack" {
                    let children = catalog.songs(collectionId: id).prefix(limit ?? 200)
                    records += children.map { $0.jsonRecord(baseURL: baseURL) }
                }
            } else if let artist = catalog.firstSong(artistId: id) {
                records.append(artist.artistJSONRecord())
                let songs = catalog.songs(artistId: id)
                if entity == "song" || entity == "musicTrack" {
                    records += songs.prefix(limit ?? 50).map { $0.jsonRecord(baseURL: baseURL) }
                } else if entity == "album" {
                    let albums = Self.unique(songs, by: \.collectionId).prefix(limit ?? 50)
                    records += albums.map { $0.collectionJSONRecord(baseURL: baseURL) }
                }
            }
        }
        return (200, Self.results(records))
    }

    /// Apple's envelope, including the blank lines it pads the body with.
    static func results(_ records: [String]) -> [UInt8] {
        let list = records.joined(separator: ",\n")
        return Array("\n\n\n{\n \"resultCount\":\(records.count),\n \"results\": [\n\(list)]\n}\n\n\n".utf8)
    }

    static func error(keys: [String]) -> (status: Int, body: [UInt8]) {
        let message = JSONObjectWriter.quote("Invalid value(s) for key(s): [\(keys.joined(separator: ", "))]")
        return (400, Array("{\"errorMessage\":\(message), \"queryParameters\":\(errorQueryParameters)}".utf8))
    }

    static func isCountryCode(_ text: String) -> Bool {
        text.unicodeScalars.count == 2 && text.unicodeScalars.allSatisfy { $0.isASCII && $0.properties.isAlphabetic }
    }

    /// The first song of each distinct key, in order.
    private static func unique(_ songs: [MockSong], by key: KeyPath<MockSong, Int>) -> [MockSong] {
        var seen: Set<Int> = []
        return songs.filter { seen.insert($0[keyPath: key]).inserted }
    }
}
