import Foundation
import MediaFetchCore
import MediaFetchTesting

/// `mediafetch demo`: the whole path, offline, against the bundled mock catalog on loopback.
enum DemoCommand {
    /// Where the demo stores, relative to the current folder.
    static let outputFolder = "demo-output"

    static let help = """
        Usage: mediafetch demo [--config PATH] [--set KEY=VALUE]... [--quiet]

        Starts the mock iTunes catalog on a random loopback port and runs the demo config against it (its
        source.endpoint pointed at the mock): 40 previews land in \(outputFolder)/ under the current folder, and
        the run's state in .mediafetch/demo/ beside it. The config is built into the tool, so this works from
        any folder; config/demo.yaml in the repository is its readable copy. Nothing leaves the machine.
          --config PATH     run another config against the mock instead (its paths are relative to it)
          --set KEY=VALUE   override a config value, as for `run` (e.g. --set sink.path=elsewhere)
          --quiet           no progress on stderr
        """

    static func run(_ words: [String], registry: PluginRegistry) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--config", "--set"], bare: ["--quiet"])
        guard arguments.positional.isEmpty else {
            throw UsageError("demo takes no arguments; see `mediafetch demo --help`")
        }
        let server = try MockCatalogServer()
        defer { server.stop() }
        let endpoint = "source.endpoint=\(server.baseURL.absoluteString)"
        let spec: PipelineSpec
        if let path = arguments.value("--config") {
            spec = try ConfigLoader.load(path: path, overrides: [endpoint] + arguments.all("--set"), registry: registry)
        } else {
            // Paths given by --set are relative to the current folder, and so is the state beside the built-in
            // config: everything the demo writes is under the folder it runs in.
            let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath, isDirectory: true)
            spec = try ConfigLoader.load(
                text: DemoConfig.text, path: DemoConfig.path, baseDirectory: here,
                overrides: [endpoint, "sink.path=\(outputFolder)", "state=.mediafetch/demo"] + arguments.all("--set"),
                environment: ProcessInfo.processInfo.environment, registry: registry)
        }
        if !arguments.has("--quiet") { printError("mock iTunes catalog serving at \(server.baseURL.absoluteString)") }
        let summary = try await RunCommand.execute(
            spec, registry: registry, quiet: arguments.has("--quiet"), json: false)
        if let output = spec.sink.options.path("path") {
            print("the files are in \(output)")
        }
        return summary.exitCode
    }
}
