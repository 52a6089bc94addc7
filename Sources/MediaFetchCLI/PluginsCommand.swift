import MediaFetchCore

/// `mediafetch plugins`: what a config can `use:`.
enum PluginsCommand {
    static let help = """
        Usage: mediafetch plugins [--markdown]

        Lists every plugin by kind (source, transport, sink) with its options, types and defaults.
          --markdown   print the README's config reference instead
        """

    static func run(_ words: [String], registry: PluginRegistry) throws -> Int32 {
        let arguments = try Arguments(words, valued: [], bare: ["--markdown"])
        guard arguments.positional.isEmpty else { throw UsageError("plugins takes no arguments") }
        print(arguments.has("--markdown") ? PluginDocs.markdown(registry) : PluginDocs.text(registry), terminator: "")
        return CLI.ExitCode.success
    }
}

/// The plugin reference, as text for the terminal and as Markdown for the README (a test keeps
/// the README's copy equal to this).
public enum PluginDocs {
    public static func text(_ registry: PluginRegistry) -> String {
        var text = ""
        for kind in PluginKind.allCases {
            for plugin in registry.plugins(kind) {
                let isDefault = registry.defaults[kind] == plugin.name ? " (default)" : ""
                text += "\(kind) \(plugin.name)\(isDefault): \(plugin.summary)\n"
                if let suggested = suggestions(plugin) { text += "    \(suggested)\n" }
                for option in plugin.options {
                    text += "    \(option.key): \(option.type), \(Self.defaultText(option))\n"
                    text += "        \(option.doc)\n"
                }
                text += "\n"
            }
        }
        text += "download (optional section, any transport and sink): retries, limits, failure budget\n"
        for option in DownloadPolicy.options {
            text += "    \(option.key): \(option.type), \(Self.defaultText(option))\n"
            text += "        \(option.doc)\n"
        }
        return text
    }

    /// "default 16", or "required" for an option without a default.
    static func defaultText(_ option: OptionSpec) -> String {
        option.defaultDescription == "required" ? "required" : "default \(option.defaultDescription)"
    }

    /// The defaults a source suggests for other sections, as a sentence; nil when it suggests none.
    static func suggestions(_ plugin: PluginInfo, code: Bool = false) -> String? {
        guard !plugin.suggestedDefaults.isEmpty else { return nil }
        let quote = { (text: String) in code ? "`\(text)`" : text }
        let parts = plugin.suggestedDefaults.map { "\(quote($0.path)) defaults to \(quote(describe($0.value)))" }
        return "With this \(plugin.kind), " + parts.joined(separator: " and ") + ", unless the config says otherwise."
    }

    /// A suggested value as a config would write it: sizes in MB or GB.
    private static func describe(_ value: OptionValue) -> String {
        if case .integer(let bytes) = value, bytes >= 1_000_000, bytes % 1_000_000 == 0 {
            return bytes % 1_000_000_000 == 0 ? "\(bytes / 1_000_000_000)GB" : "\(bytes / 1_000_000)MB"
        }
        return value.description
    }

    public static func markdown(_ registry: PluginRegistry) -> String {
        var text = ""
        for kind in PluginKind.allCases {
            for plugin in registry.plugins(kind) {
                let isDefault = registry.defaults[kind] == plugin.name ? " (the default \(kind))" : ""
                let stop = plugin.summary.hasSuffix(".") ? "" : "."
                text += "### \(kind) `\(plugin.name)`\(isDefault)\n\n\(plugin.summary)\(stop)\n\n"
                if let suggested = suggestions(plugin, code: true) { text += suggested + "\n\n" }
                text += "| key | type | default | what it does |\n| --- | --- | --- | --- |\n"
                text += "| `use` | `\(plugin.name)` | | picks this \(kind) |\n"
                for option in plugin.options {
                    let doc = option.doc.replacingOccurrences(of: "|", with: "\\|")
                    text += "| `\(option.key)` | \(option.type) | \(option.defaultDescription) | \(doc) |\n"
                }
                text += "\n"
            }
        }
        text += "### the `download` section (optional, any transport and sink)\n\n"
        text += "Retries, limits and the failure budget, applied by the pipeline to every download.\n\n"
        text += "| key | type | default | what it does |\n| --- | --- | --- | --- |\n"
        for option in DownloadPolicy.options {
            let doc = option.doc.replacingOccurrences(of: "|", with: "\\|")
            text += "| `\(option.key)` | \(option.type) | \(option.defaultDescription) | \(doc) |\n"
        }
        return text + "\n"
    }
}
