import Foundation
import FoundationTransport
import ITunesSource
import MediaFetchCore
import Synchronization

/// `mediafetch search TERM`: a quick look at the catalog, without a config.
enum SearchCommand {
    static let help = """
        Usage: mediafetch search TERM [--media M] [--entity E] [--country CC] [--limit N] [--endpoint URL] [--json]

        Searches the iTunes catalog and prints a table: artist, title, album, duration, preview URL.
          --media M        music (default), movie, podcast, musicVideo, audiobook, shortFilm, tvShow, software, ebook, all
          --entity E       result type for the media, e.g. song, album, musicVideo
          --country CC     two-letter store country (default US)
          --limit N        results, 1..200 (default 25)
          --endpoint URL   API base URL (default https://itunes.apple.com; or a `mediafetch mock-server`)
          --json           print the items as JSON
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
        let found = Mutex<[MediaItem]>([])
        try await source.run(SourceContext(transport: transport, notice: { printError("note: \($0)") })) { output in
            switch output {
            case .item(let item): found.withLock { $0.append(item) }
            case .skipped(let ref, let reason): printError("skipped \(ref): \(reason)")
            case .failed(let ref, _, let reason): printError("unusable \(ref): \(reason)")
            }
        }
        await transport.shutdown()
        let items = found.withLock { $0 }
        if arguments.has("--json") {
            RunCommand.printJSON(items)
        } else if items.isEmpty {
            print("no results for \"\(term)\"")
        } else {
            print(table(items))
        }
        return CLI.ExitCode.success
    }

    /// Columns sized to their content, long cells cut with an ellipsis.
    static func table(_ items: [MediaItem]) -> String {
        let header = ["ARTIST", "TITLE", "ALBUM", "TIME", "PREVIEW"]
        let rows = items.map { item in
            [
                item.artist ?? "", item.title, item.album ?? "", duration(item.durationMillis),
                item.previewURL?.absoluteString ?? "",
            ]
        }
        let caps = [28, 36, 32, 6, Int.max]
        let widths = header.indices.map { column in
            min(caps[column], ([header] + rows).map { $0[column].count }.max() ?? 0)
        }
        func render(_ cells: [String]) -> String {
            cells.indices.map { column in
                let cell = cells[column]
                let cut = cell.count > widths[column] ? cell.prefix(widths[column] - 1) + "…" : cell
                return column == cells.count - 1
                    ? cut : cut.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }
        return ([header] + rows).map(render).joined(separator: "\n")
    }

    static func duration(_ millis: Int?) -> String {
        guard let millis, millis > 0 else { return "" }
        let seconds = millis / 1000
        return "\(seconds / 60):" + String(format: "%02d", seconds % 60)
    }
}
