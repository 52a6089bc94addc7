import MediaFetchCore

extension ExecSink {
    /// `use: exec` as a sink: the options of every `exec` plugin, and `layout`, `assets`, `artwork-size`,
    /// `sha256`, `concurrency`.
    public static let descriptor = SinkDescriptor(
        info: PluginInfo(
            kind: .sink,
            name: "exec",
            summary: "Runs a program of yours, in any language, that is asked in JSON lines where each file goes and "
                + "to store it (Plugins/ExecPlugins/PROTOCOL.md).",
            options: ExecCommand.specs(role: "sink") + [
                OptionSpec(
                    "layout", .string, default: .string(LayoutTemplate.defaultLayout),
                    doc: "The path each plan request suggests, with the placeholders of the directory sink's layout; "
                        + "the plugin may answer it or a path of its own. Either way every part is made safe and "
                        + "clashes are numbered \" (2)\" in the order items are found."
                )
            ] + CollectionOptions.specs().filter { ["assets", "artwork-size"].contains($0.key) } + [
                OptionSpec(
                    "sha256", .bool, default: .bool(false),
                    doc: "Send each file's SHA-256 with its store request, also when the download section verifies "
                        + "sizes only (about 1 s of CPU per 1.5 GB)."
                ),
                OptionSpec(
                    "concurrency", .integer(1...64), default: .integer(1),
                    doc: "Requests the plugin is sent before it answers; above 1 only for a plugin that works on "
                        + "several at once and answers each by its id. Each request's timeout starts when it is sent."
                ),
            ]
        ),
        make: { options, _ in try ExecSink(options: options) }
    )

    /// The factory: reads the options of ``descriptor``.
    /// - Throws: ``ConfigError`` at the key at fault.
    public convenience init(options: PluginOptions) throws(ConfigError) {
        let command = try ExecCommand(options: options)
        let layout: LayoutTemplate
        do {
            layout = try LayoutTemplate(options.string("layout") ?? LayoutTemplate.defaultLayout)
        } catch {
            throw options.error("layout", error.message)
        }
        self.init(
            command: command, layout: layout, collection: try CollectionOptions(options: options),
            sendsDigests: options.bool("sha256") ?? false, concurrency: options.integer("concurrency") ?? 1)
    }
}
