import Foundation

/// The plugin a config section picked, with its validated options.
public struct PluginSelection: Sendable {
    public var kind: PluginKind
    public var name: String
    public var options: PluginOptions
    /// Where `use:` (or the section) was, for errors the factory raises about the whole section.
    public var location: SourceLocation?

    public init(kind: PluginKind, name: String, options: PluginOptions, location: SourceLocation? = nil) {
        self.kind = kind
        self.name = name
        self.options = options
        self.location = location
    }
}

/// A validated config: which source, transport and sink, their options, and where run state lives.
public struct PipelineSpec: Sendable {
    /// The config file as given, for messages.
    public var configPath: String
    public var source: PluginSelection
    public var transport: PluginSelection
    public var sink: PluginSelection
    /// The `state:` directory, absolute (default `.mediafetch/<config name>/` beside the config).
    public var stateDirectory: URL
    /// The `download:` section's options (every key of ``DownloadPolicy/options``, defaults filled in).
    public var download: PluginOptions
    /// The top-level `ledger:`; nil means SQLite in ``stateDirectory``.
    public var ledger: LedgerSelection?
    /// The run's `name:` (default the config file's name without extension): every worker started with the same
    /// name and a shared ledger joins the same run.
    public var runName: String

    public init(
        configPath: String,
        source: PluginSelection,
        transport: PluginSelection,
        sink: PluginSelection,
        stateDirectory: URL,
        download: PluginOptions = PluginOptions(section: "download"),
        ledger: LedgerSelection? = nil,
        runName: String? = nil
    ) {
        self.configPath = configPath
        self.source = source
        self.transport = transport
        self.sink = sink
        self.stateDirectory = stateDirectory
        self.download = download
        self.ledger = ledger
        self.runName = runName ?? URL(fileURLWithPath: configPath).deletingPathExtension().lastPathComponent
    }

    /// Opens the run's ledger: the `ledger:` URI's plugin, or SQLite in the state directory.
    /// - Parameters:
    ///   - registry: where the ledger plugin that serves the URI's scheme is found.
    ///   - worker: this worker's id in a shared run; nil for host:pid.
    /// - Throws: ``LedgerError`` when it cannot be opened (the URI redacted), or when no registered ledger serves
    ///   the URI's scheme.
    public func openLedger(registry: PluginRegistry, worker: String? = nil) throws -> any RunLedger {
        guard let ledger else { return try Ledger(directory: stateDirectory) }
        guard let descriptor = registry.ledger(forScheme: ledger.scheme) else {
            throw LedgerError("this build has no ledger for \(ledger.redacted)")
        }
        return try descriptor.open(
            LedgerRequest(selection: ledger, runName: runName, stateDirectory: stateDirectory, worker: worker))
    }

    /// The download policy the config describes.
    public var downloadPolicy: DownloadPolicy { DownloadPolicy(options: download) }

    public func selection(_ kind: PluginKind) -> PluginSelection? {
        switch kind {
        case .source: source
        case .transport: transport
        case .sink: sink
        default: nil
        }
    }
}

/// The plugins a spec names, made by their factories.
public struct PipelineParts: Sendable {
    public var sourceName: String
    public var source: any Source
    public var transport: any Transport
    public var sink: any Sink

    /// Makes each plugin with its factory.
    /// - Throws: ``ConfigError`` from a factory (options that are valid alone but not together).
    public init(spec: PipelineSpec, registry: PluginRegistry) throws {
        let context = PluginContext(stateDirectory: spec.stateDirectory)
        guard let source = registry.source(named: spec.source.name),
            let transport = registry.transport(named: spec.transport.name),
            let sink = registry.sink(named: spec.sink.name)
        else {
            throw ConfigError("the config names a plugin this build does not have", at: nil)
        }
        self.sourceName = spec.source.name
        self.source = try source.make(spec.source.options, context)
        self.transport = try transport.make(spec.transport.options, context)
        self.sink = try sink.make(
            spec.sink.options,
            PluginContext(
                stateDirectory: spec.stateDirectory, transport: self.transport, downloadPolicy: spec.downloadPolicy))
    }
}
