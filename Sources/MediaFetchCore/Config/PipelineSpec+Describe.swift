import Foundation

extension PipelineSpec {
    /// The resolved pipeline as `mediafetch check` prints it: each section's plugin, then every option with its
    /// value and where the value came from (`file:line:column`, the `--set` argument, or `default`). A secret
    /// option (``OptionSpec/secret``) shows ``OptionSpec/redacted`` instead of its value.
    ///
    /// ```
    /// config: demo.yaml
    /// source: itunes  (demo.yaml:2:8)
    ///     limit: 50  (default)
    ///     term: jack johnson  (demo.yaml:3:3)
    /// transport: foundation  (default plugin)
    /// ...
    /// state: /home/me/demo/.mediafetch/demo
    /// ```
    public func describe() -> String {
        var lines = ["config: \(configPath)"]
        for kind in PluginKind.allCases {
            guard let selection = selection(kind) else { continue }
            // Without `use:` the selection points at the section (or nowhere), and the plugin is the default.
            let named = selection.location.flatMap { $0 == selection.options.sectionLocation ? nil : $0 }
            let origin = named.map(originText) ?? "default plugin"
            lines.append("\(kind): \(selection.name)  (\(origin))")
            // Sorted so that the output is stable; the registry's order is not part of the spec.
            for key in selection.options.values.keys.sorted() {
                guard let value = selection.options.printable(key) else { continue }
                let origin = selection.options.locations[key].map(originText) ?? "default"
                lines.append("    \(key): \(value)  (\(origin))")
            }
        }
        lines.append("download:")
        for key in download.values.keys.sorted() {
            guard let value = download.printable(key) else { continue }
            let origin = download.locations[key].map(originText) ?? "default"
            lines.append("    \(key): \(value)  (\(origin))")
        }
        lines.append("state: \(stateDirectory.path)")
        lines.append("name: \(runName)")
        // Never the URI as written: a password in it (or put there by ${VAR}) is shown as ***.
        lines.append("ledger: " + (ledger.map { $0.redacted } ?? "sqlite in state"))
        return lines.joined(separator: "\n")
    }

    /// Overrides carry `--set <key>` as their file name, so the argument shows as it was typed.
    private func originText(_ location: SourceLocation) -> String {
        location.file.hasPrefix("--set") ? location.file : location.description
    }
}
