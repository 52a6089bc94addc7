import Foundation
import MediaFetchCore
import MediaFetchServe

/// `mediafetch serve [CONFIG]`: the web app and JSON API over the same core.
enum ServeCommand {
    static let help = """
        Usage: mediafetch serve [CONFIG] [--port N] [--listen ADDR] [--token T] [--set KEY=VALUE]...

        Serves a local web app and JSON API: search the iTunes catalog, queue downloads, pause, resume or
        cancel each, and play what is stored. The first line on stdout is the URL to open; the access token is
        in its fragment (after #token=), and every /api call needs it as Authorization: Bearer TOKEN.

        CONFIG gives the transport, the sink, the state directory (ledger and queue) and, with an itunes source,
        the API endpoint and pacing; its term is not used. Without one: the curl transport, a folder
        mediafetch-library/ and state in .mediafetch/serve/ under the current folder, and Apple's endpoint.
        What was queued is there again after a restart: stored stays stored, paused stays paused, what was
        downloading resumes.
          --port N        the port (default 8640; 0 picks a free one)
          --listen ADDR   the address to listen on (default 127.0.0.1); any other needs --token
          --token T       the access token (default: a new random one each start), at least 16 characters
          --set KEY=VALUE override a config value, as for run
        """

    static let defaultConfig = """
        source: {use: itunes, term: serve}
        transport: {use: curl}
        sink: {use: directory, path: mediafetch-library}
        state: .mediafetch/serve
        """

    static func run(_ words: [String], registry: PluginRegistry) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--port", "--listen", "--token", "--set"], bare: [])
        guard arguments.positional.count <= 1 else { throw UsageError("serve takes at most one CONFIG file") }
        let spec: PipelineSpec
        if let path = arguments.positional.first {
            spec = try ConfigLoader.load(path: path, overrides: arguments.all("--set"), registry: registry)
        } else {
            spec = try ConfigLoader.load(
                text: defaultConfig, path: "(serve defaults)",
                baseDirectory: URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true),
                overrides: arguments.all("--set"), registry: registry)
        }
        let portText = arguments.value("--port") ?? "8640"
        guard let port = UInt16(portText) else {
            throw UsageError("--port \(portText) is not a port number (0..65535)")
        }
        var options = Serve.Options(
            listen: arguments.value("--listen") ?? "127.0.0.1", port: port, token: arguments.value("--token"))
        if spec.source.name == "itunes" {
            options.endpoint = spec.source.options.url("endpoint") ?? options.endpoint
            options.requestsPerMinute = spec.source.options.integer("requests-per-minute") ?? 20
        } else {
            printError("note: the config's source is \(spec.source.name), so searches go to \(options.endpoint)")
        }
        let chosen = options
        let outcome = await SignalWatcher().run { () -> Result<RunSummary, any Error> in
            do {
                return .success(
                    try await Serve.run(spec: spec, registry: registry, options: chosen) { url in
                        // Straight to the descriptor: whoever started the server needs the URL now.
                        FileHandle.standardOutput.write(Data((url.absoluteString + "\n").utf8))
                        printError(
                            "serving \(spec.configPath) on \(url.host ?? "?"):\(url.port ?? 0); stop with Ctrl-C")
                    })
            } catch {
                return .failure(error)
            }
        }
        do {
            _ = try outcome.get()
        } catch let error as ServeError {
            throw UsageError(error.message)
        }
        return CLI.ExitCode.success
    }
}
