import Foundation
import MediaFetchCore
import MediaFetchTesting

/// `mediafetch mock-server`: the mock catalog for trying configs and other tools, offline.
enum MockServerCommand {
    static let help = """
        Usage: mediafetch mock-server [--port N] [--recorded MEDIA[/ENTITY]=FILE]...

        Serves the mock iTunes catalog (search, lookup, previews with Range and ETag) on 127.0.0.1
        until interrupted. Point a config's source.endpoint, or `search --endpoint`, at the URL it prints.
          --port N       the port to listen on (default: a free one)
          --recorded M=F answer every search of media M (and entity, M/E) with the records of FILE, an
                         answer captured from Apple's API ({"resultCount": N, "results": [...]}); their
                         previews and artwork are served from loopback. May be repeated.
        """

    static func run(_ words: [String]) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--port", "--recorded"], bare: [])
        guard arguments.positional.isEmpty else {
            throw UsageError("mock-server takes no arguments besides --port and --recorded")
        }
        let portText = arguments.value("--port") ?? "0"
        guard let port = UInt16(portText) else {
            throw UsageError("--port \(portText) is not a port number (0..65535)")
        }
        let recorded = try arguments.all("--recorded").map(recordedAnswer)
        let server = try MockCatalogServer(
            catalog: MockCatalog(songs: MockCatalog.standard.songs, recorded: recorded), port: port)
        // Written straight to the descriptor: print() holds lines back when stdout is a file or a pipe,
        // and whoever started the server in the background needs its address now.
        let text = """
            mock iTunes catalog serving at \(server.baseURL.absoluteString) (\(server.catalog.songs.count) songs)
            try: mediafetch search love --endpoint \(server.baseURL.absoluteString)
            stop with Ctrl-C

            """
        FileHandle.standardOutput.write(Data(text.utf8))
        await SignalWatcher().firstSignal()
        server.stop()
        return CLI.ExitCode.success
    }

    /// `podcast/podcastEpisode=episodes.json` as the answer it names.
    static func recordedAnswer(_ text: String) throws -> MockRecordedAnswer {
        guard let equals = text.firstIndex(of: "="), equals != text.startIndex else {
            throw UsageError("--recorded \(text) is not MEDIA[/ENTITY]=FILE, e.g. podcast=answer.json")
        }
        let search = text[..<equals].split(separator: "/", maxSplits: 1).map(String.init)
        let path = String(text[text.index(after: equals)...])
        let body: Data
        do {
            body = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw UsageError("--recorded: cannot read \(path): \(error.localizedDescription)")
        }
        do {
            return try MockRecordedAnswer(media: search[0], entity: search.count > 1 ? search[1] : nil, body: body)
        } catch {
            throw UsageError("--recorded: \(path): \(error)")
        }
    }
}
