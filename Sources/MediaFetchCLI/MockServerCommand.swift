import Foundation
import MediaFetchCore
import MediaFetchTesting

/// `mediafetch mock-server`: the mock catalog for trying configs and other tools, offline.
enum MockServerCommand {
    static let help = """
        Usage: mediafetch mock-server [--port N]

        Serves the mock iTunes catalog (search, lookup, previews with Range and ETag) on 127.0.0.1
        until interrupted. Point a config's source.endpoint, or `search --endpoint`, at the URL it prints.
          --port N   the port to listen on (default: a free one)
        """

    static func run(_ words: [String]) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--port"], bare: [])
        guard arguments.positional.isEmpty else { throw UsageError("mock-server takes no arguments besides --port") }
        let portText = arguments.value("--port") ?? "0"
        guard let port = UInt16(portText) else {
            throw UsageError("--port \(portText) is not a port number (0..65535)")
        }
        let server = try MockCatalogServer(port: port)
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
}
