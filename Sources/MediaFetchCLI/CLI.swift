import Foundation
import MediaFetchCore
import MediaFetchTesting

/// The `mediafetch` command line.
public enum CLI {
    public static let version = "0.1.0"

    /// Exit codes, as the README documents them.
    public enum ExitCode {
        public static let success: Int32 = 0
        public static let someFailed: Int32 = 1
        public static let usage: Int32 = 2
        public static let sourceFailed: Int32 = 3
        public static let interrupted: Int32 = 130
    }

    static let commands: [(name: String, summary: String)] = [
        (
            "run",
            "run CONFIG [--set KEY=VALUE]... [--refetch] [--quiet] [--json] [--cores auto|all]: run a pipeline "
                + "(resumes)"
        ),
        (
            "search",
            "search TERM [--media M] [--entity E] [--country CC] [--limit N] [--endpoint URL] [--json]: "
                + "search the iTunes catalog and print what it finds"
        ),
        ("check", "check CONFIG [--set KEY=VALUE]...: validate a config and print the resolved pipeline"),
        (
            "status",
            "status CONFIG [--json] [--follow]: what the ledger records: stored, verified, partial, failed, pending "
                + "(--follow: redrawn until the run ends)"
        ),
        ("clean", "clean CONFIG [--all]: discard partial downloads (with --all, the ledger too)"),
        ("plugins", "plugins [--markdown]: list every plugin with its options and defaults"),
        (
            "demo",
            "demo [--config PATH] [--set KEY=VALUE]... [--quiet]: the offline demo, from any folder: the built-in "
                + "demo config (config/demo.yaml is its copy) against the bundled mock catalog; writes demo-output/ "
                + "under the current folder"
        ),
        (
            "serve",
            "serve [CONFIG] [--port N] [--listen ADDR] [--token T]: a web app and JSON API to search, queue, pause, "
                + "resume, cancel and play downloads"
        ),
        ("mock-server", "mock-server [--port N]: serve the mock iTunes catalog on loopback until interrupted"),
    ]

    /// Runs the command line with the bundled plugins and answers the process exit code: the `mediafetch` tool.
    public static func main(_ arguments: [String]) async -> Int32 {
        await main(arguments, registry: BundledPlugins.registry)
    }

    /// Runs the command line with the plugins of `registry` and answers the process exit code.
    ///
    /// Your own `mediafetch`, with a sink of yours beside the bundled plugins, is this call in a `main.swift`:
    ///
    /// ```swift
    /// import MediaFetchCLI
    ///
    /// var registry = BundledPlugins.registry
    /// registry.register(sink: MySink.descriptor)
    /// exit(await CLI.main(Array(CommandLine.arguments.dropFirst()), registry: registry))
    /// ```
    ///
    /// - Parameters:
    ///   - arguments: the words after the program's name.
    ///   - registry: what `use:` in a config, `check`, `plugins`, `status` and `clean` can name.
    public static func main(_ arguments: [String], registry: PluginRegistry) async -> Int32 {
        var words = arguments
        guard let command = words.first else {
            print(usage)
            return ExitCode.usage
        }
        words.removeFirst()
        do {
            switch command {
            case "--help", "-h", "help":
                print(usage)
                return ExitCode.success
            case "--version", "-V":
                print("mediafetch \(version)")
                return ExitCode.success
            case _ where words.contains("--help") || words.contains("-h"):
                print(help(for: command) ?? usage)
                return help(for: command) == nil ? ExitCode.usage : ExitCode.success
            case "run": return try await RunCommand.run(words, registry: registry)
            case "search": return try await SearchCommand.run(words)
            case "check": return try CheckCommand.run(words, registry: registry)
            case "status": return try await StatusCommand.run(words, registry: registry)
            case "clean": return try await CleanCommand.run(words, registry: registry)
            case "plugins": return try PluginsCommand.run(words, registry: registry)
            case "demo": return try await DemoCommand.run(words, registry: registry)
            case "mock-server": return try await MockServerCommand.run(words)
            case "serve": return try await ServeCommand.run(words, registry: registry)
            default:
                var message = "unknown command \"\(command)\""
                if let near = ConfigLoader.nearest(command, in: commands.map(\.name)) {
                    message += " (did you mean \"\(near)\"?)"
                }
                throw UsageError(message + "; run `mediafetch --help` for the list")
            }
        } catch {
            printError("mediafetch: \(error)")
            // What the user can fix before anything is fetched is a usage error; the rest is the source's.
            let isUsage =
                error is UsageError || error is ConfigError || error is LedgerError || error is MockServerError
                || error is StartupError
            return isUsage ? ExitCode.usage : ExitCode.sourceFailed
        }
    }

    static var usage: String {
        var text = """
            mediafetch \(version): search a media catalog (Apple's iTunes Search API), download what it finds, store it.

            Usage: mediafetch COMMAND [OPTIONS]

            Commands:

            """
        for command in commands { text += "  \(command.summary)\n" }
        text += """

            Run `mediafetch COMMAND --help` for one command. Exit codes: 0 all stored, 1 some items failed,
            2 usage or config error, 3 the source failed, 130 interrupted.
            """
        return text
    }

    static func help(for command: String) -> String? {
        switch command {
        case "run": RunCommand.help
        case "search": SearchCommand.help
        case "check": CheckCommand.help
        case "status": StatusCommand.help
        case "clean": CleanCommand.help
        case "plugins": PluginsCommand.help
        case "demo": DemoCommand.help
        case "mock-server": MockServerCommand.help
        case "serve": ServeCommand.help
        default: nil
        }
    }
}

func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
