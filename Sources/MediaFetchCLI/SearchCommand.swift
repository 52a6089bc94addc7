import Foundation
import FoundationTransport
import ITunesSource
import MediaFetchCore
import Synchronization

/// `mediafetch search TERM`: a quick look at the catalog, without a config.
enum SearchCommand {
    static let help = """
        Usage: mediafetch search TERM [--media M] [--entity E] [--country CC] [--limit N] [--endpoint URL] [--json]

        Searches the iTunes catalog and prints every result it returns, one row each: kind, artist, title,
        album, duration, what a run could download (a preview, a whole episode, artwork only, or nothing)
        and its URL.
          --media M        music (default), movie, podcast, musicVideo, audiobook, shortFilm, tvShow, software, ebook, all
          --entity E       result type for the media, e.g. song, album, musicVideo
          --country CC     two-letter store country (default US)
          --limit N        results, 1..200 (default 25)
          --endpoint URL   API base URL (default https://itunes.apple.com; or a `mediafetch mock-server`)
          --json           print the items as JSON, each with its kind and "downloadable"
        """

    static func run(_ words: [String]) async throws -> Int32 {
        let arguments = try Arguments(
            words, valued: ["--media", "--entity", "--country", "--limit", "--endpoint"], bare: ["--json"])
        guard !arguments.positional.isEmpty else {
            throw UsageError("search needs a TERM, e.g. `mediafetch search jack johnson`")
        }
        let term = arguments.positional.joined(separator: " ")

        let limitText = arguments.value("--limit") ?? "25"
        guard let limit = Int(limitText), (1...200).contains(limit) else {
            throw UsageError("--limit \(limitText) is not a whole number in 1..200")
        }
        let media = arguments.value("--media") ?? "music"
        guard ITunesSource.mediaTypes.contains(media) else {
            let hint = ConfigLoader.nearest(media, in: ITunesSource.mediaTypes).map { " (did you mean \($0)?)" } ?? ""
            throw UsageError("--media \(media) is not one of \(ITunesSource.mediaTypes.joined(separator: ", "))\(hint)")
        }
        let country = arguments.value("--country") ?? "US"
        guard country.count == 2, country.allSatisfy({ $0.isASCII && $0.isLetter }) else {
            throw UsageError("--country \(country) is not a two-letter country code, e.g. US, GB, JP")
        }
        let endpointText = arguments.value("--endpoint") ?? "https://itunes.apple.com"
        guard let endpoint = URL(string: endpointText), endpoint.isFetchable else {
            throw UsageError("--endpoint \(endpointText) is not an http or https URL")
        }
        var parameters = [("media", media)]
        if let entity = arguments.value("--entity") { parameters.append(("entity", entity)) }
        parameters.append(("country", country))

        let source = ITunesSource(
            .init(
                endpoint: endpoint, query: .search(term: term), parameters: parameters, pageSize: limit,
                maxItems: limit, requestsPerMinute: 0))
        let transport = FoundationTransport()
        let found = Mutex<(items: [MediaItem], unusable: Int)>(([], 0))
        try await source.run(SourceContext(transport: transport, notice: { printError("note: \($0)") })) { output in
            switch output {
            case .item(let item): found.withLock { $0.items.append(item) }
            case .skipped(let ref, let reason):
                found.withLock { $0.unusable += 1 }
                printError("skipped \(ref): \(ItemRef.printable(reason))")
            case .failed(let ref, _, let reason):
                found.withLock { $0.unusable += 1 }
                printError("unusable \(ref): \(ItemRef.printable(reason))")
            }
        }
        await transport.shutdown()
        let (items, unusable) = found.withLock { $0 }
        if arguments.has("--json") {
            RunCommand.printJSON(items.map(SearchResult.init))
        } else if !items.isEmpty {
            print(table(items))
        } else if unusable == 0 {
            print("no results for \"\(term)\"")
        } else {
            print("none of the \(unusable) results for \"\(term)\" can be shown (why is said above)")
        }
        return CLI.ExitCode.success
    }

    static let header = ["KIND", "ARTIST", "TITLE", "ALBUM", "TIME", "DOWNLOAD", "URL"]
    /// The widest each column may be, in terminal cells; the URL, last, is never cut.
    static let caps = [16, 28, 36, 32, 8, 13, Int.max]

    /// One row per item, columns as wide as their widest cell up to their cap, measured in terminal cells (East
    /// Asian wide characters take two, combining marks none); a longer cell is cut on a character boundary with
    /// an ellipsis. Catalog text is printed with control and bidirectional characters made visible.
    static func table(_ items: [MediaItem]) -> String {
        let rows = items.map { item in
            [
                item.kind ?? "", item.artist ?? "", item.title, item.album ?? "", duration(item.durationMillis),
                Downloadable(item).label, (item.previewURL ?? item.artworkURL)?.absoluteString ?? "",
            ].map(ItemRef.printable)
        }
        let widths = header.indices.map { column in
            min(caps[column], ([header] + rows).map { DisplayWidth.of($0[column]) }.max() ?? 0)
        }
        func render(_ cells: [String]) -> String {
            let line = cells.indices.map { column in
                let cut = DisplayWidth.truncated(cells[column], to: widths[column])
                return column == cells.count - 1 ? cut : DisplayWidth.padded(cut, to: widths[column])
            }.joined(separator: "  ")
            // An empty last column would leave the padding of the one before it.
            return String(line.reversed().drop { $0 == " " }.reversed())
        }
        return ([header] + rows).map(render).joined(separator: "\n")
    }

    /// `3:25`, or `1:59:14` from an hour on.
    static func duration(_ millis: Int?) -> String {
        guard let millis, millis > 0 else { return "" }
        let seconds = millis / 1000
        let (hours, minutes) = (seconds / 3600, seconds / 60 % 60)
        let rest = String(format: "%02d", seconds % 60)
        return hours > 0 ? "\(hours):" + String(format: "%02d", minutes) + ":" + rest : "\(minutes):" + rest
    }
}

/// What a run could download of an item: its preview, the whole episode its preview is, its artwork only,
/// or nothing.
enum Downloadable: String, Encodable {
    case preview
    case wholeEpisode = "whole-episode"
    case artwork
    case nothing

    init(_ item: MediaItem) {
        if item.previewURL != nil {
            self = item.isFullLength ? .wholeEpisode : .preview
        } else {
            self = item.artworkURL == nil ? .nothing : .artwork
        }
    }

    /// The table's words.
    var label: String {
        switch self {
        case .preview: "preview"
        case .wholeEpisode: "whole episode"
        case .artwork: "artwork only"
        case .nothing: "nothing"
        }
    }
}

/// One item as `search --json` prints it: the item's own fields, and `downloadable`.
struct SearchResult: Encodable {
    var item: MediaItem

    private enum CodingKeys: String, CodingKey {
        case downloadable
    }

    func encode(to encoder: any Encoder) throws {
        try item.encode(to: encoder)
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Downloadable(item), forKey: .downloadable)
    }
}
