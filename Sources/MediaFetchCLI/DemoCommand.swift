import Foundation
import MediaFetchCore
import MediaFetchTesting

/// `mediafetch demo`: the whole path, offline, against the bundled mock catalog on loopback.
enum DemoCommand {
    static let help = """
        Usage: mediafetch demo [--config PATH] [--set KEY=VALUE]... [--quiet]

        Starts the mock iTunes catalog on a random loopback port, runs config/demo.yaml against it
        (its source.endpoint is pointed at the mock), and prints where the files are.
          --config PATH     another config to run against the mock (default config/demo.yaml)
          --set KEY=VALUE   override a config value, as for `run`
          --quiet           no progress on stderr
        """

    static func run(_ words: [String]) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--config", "--set"], bare: ["--quiet"])
        guard arguments.positional.isEmpty else {
            throw UsageError("demo takes no arguments; see `mediafetch demo --help`")
        }
        let path = arguments.value("--config") ?? "config/demo.yaml"
        guard FileManager.default.fileExists(atPath: path) else {
            throw UsageError("\(path) not found: run the demo from the repository's top folder, or give --config PATH")
        }
        let server = try MockCatalogServer()
        defer { server.stop() }
        let overrides = ["source.endpoint=\(server.baseURL.absoluteString)"] + arguments.all("--set")
        let registry = BundledPlugins.registry
        let spec = try ConfigLoader.load(path: path, overrides: overrides, registry: registry)
        if !arguments.has("--quiet") { printError("mock iTunes catalog serving at \(server.baseURL.absoluteString)") }
        let summary = try await RunCommand.execute(
            spec, registry: registry, quiet: arguments.has("--quiet"), json: false)
        if let output = spec.sink.options.path("path") {
            print("the files are in \(output)")
        }
        return summary.exitCode
    }
}
