import MediaFetchCore

extension ExecSource {
    /// `use: exec` as a source: options `command`, `options`, `directory`, `name`, `timeout`.
    public static let descriptor = SourceDescriptor(
        info: PluginInfo(
            kind: .source,
            name: "exec",
            summary: "Runs a program of yours, in any language, that writes items as JSON lines "
                + "(Plugins/ExecPlugins/PROTOCOL.md).",
            options: ExecCommand.specs(role: "source")
        ),
        make: { options, _ in ExecSource(command: try ExecCommand(options: options)) }
    )
}
