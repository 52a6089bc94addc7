import MediaFetchCore

/// `mediafetch check CONFIG`: validates without touching the network.
enum CheckCommand {
    static let help = """
        Usage: mediafetch check CONFIG [--set KEY=VALUE]...

        Validates a config (every error names file:line:column, the key and what is allowed) and
        prints the resolved pipeline: each plugin and every option with its value and where it came from.
        Exit codes: 0 valid, 2 not.
        """

    static func run(_ words: [String], registry: PluginRegistry) throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--set"], bare: [])
        guard arguments.positional.count == 1 else {
            throw UsageError("check takes one CONFIG file, e.g. `mediafetch check config/demo.yaml`")
        }
        let spec = try ConfigLoader.load(
            path: arguments.positional[0], overrides: arguments.all("--set"), registry: registry)
        // The factories check what depends on more than one key (term or ids, not both).
        _ = try PipelineParts(spec: spec, registry: registry)
        print(spec.describe())
        print("\(spec.configPath): OK")
        return CLI.ExitCode.success
    }
}
