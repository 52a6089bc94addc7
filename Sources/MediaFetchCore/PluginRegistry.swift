import Foundation

/// The three kinds of plugin, one per config section.
///
/// An ``OpenEnumeration``: more kinds may come in a later version, so a `switch` over them needs a `default`.
public struct PluginKind: OpenEnumeration {
    /// The name, as `mediafetch plugins` and messages spell it: `source`.
    public let rawValue: String

    private init(_ rawValue: String) { self.rawValue = rawValue }

    public static let source = Self("source")
    public static let transport = Self("transport")
    public static let sink = Self("sink")

    public static let allCases: [Self] = [.source, .transport, .sink]
}

/// What the docs, `mediafetch plugins` and the config loader need to know of a plugin.
public struct PluginInfo: Sendable {
    public var kind: PluginKind
    /// The name a config's `use:` picks it by.
    public var name: String
    /// One line saying what it does.
    public var summary: String
    public var options: [OptionSpec]
    /// Defaults a source suggests for the options of other sections, by section (``PluginKind/sink`` or nil for
    /// the download section) and key: a podcast source's episodes want a layout by show and date, and a larger
    /// `max-size` than previews. A suggestion takes the place of the option's own default when the config leaves
    /// the key out and the section has such a key; what a config writes always wins. Each value must be of the
    /// option's type (a size as ``OptionValue/integer(_:)``). Only a source's suggestions are read.
    public var suggestedDefaults: [SuggestedDefault]

    /// A default a source suggests for another section's option; see ``PluginInfo/suggestedDefaults``.
    public struct SuggestedDefault: Sendable, Hashable {
        /// The section: `sink`, or nil for the download section.
        public var section: PluginKind?
        public var key: String
        public var value: OptionValue

        public init(section: PluginKind?, key: String, value: OptionValue) {
            self.section = section
            self.key = key
            self.value = value
        }

        /// The section and key as a config spells them: `sink.layout`, `download.max-size`.
        public var path: String { "\(section?.rawValue ?? "download").\(key)" }
    }

    public init(
        kind: PluginKind, name: String, summary: String, options: [OptionSpec],
        suggestedDefaults: [SuggestedDefault] = []
    ) {
        self.kind = kind
        self.name = name
        self.summary = summary
        self.options = options
        self.suggestedDefaults = suggestedDefaults
    }

    /// The defaults this plugin suggests for `section` (a kind, or nil for the download section), by key.
    public func suggestedDefaults(for section: PluginKind?) -> [String: OptionValue] {
        Dictionary(
            suggestedDefaults.filter { $0.section == section }.map { ($0.key, $0.value) },
            uniquingKeysWith: { first, _ in first })
    }

    public func option(_ key: String) -> OptionSpec? {
        options.first { $0.key == key }
    }
}

/// What a factory gets besides its options.
public struct PluginContext: Sendable {
    /// The run's state directory (staging files, ledger).
    public var stateDirectory: URL
    /// The run's transport, for a sink that talks HTTP itself (an object store uploads through it, so that a
    /// test that swaps the transport swaps the uploads too); nil for sources and transports.
    public var transport: (any Transport)?
    /// The config's download section: the retries and backoff a sink's own requests use too.
    public var downloadPolicy: DownloadPolicy

    public init(
        stateDirectory: URL, transport: (any Transport)? = nil, downloadPolicy: DownloadPolicy = DownloadPolicy()
    ) {
        self.stateDirectory = stateDirectory
        self.transport = transport
        self.downloadPolicy = downloadPolicy
    }
}

/// A plugin: its description and the factory that makes it from validated options.
///
/// Each plugin module exports one of these, e.g. `ITunesSource.descriptor`.
public struct PluginDescriptor<Product: Sendable>: Sendable {
    public var info: PluginInfo
    public var make: @Sendable (PluginOptions, PluginContext) throws -> Product

    public init(info: PluginInfo, make: @escaping @Sendable (PluginOptions, PluginContext) throws -> Product) {
        self.info = info
        self.make = make
    }
}

public typealias SourceDescriptor = PluginDescriptor<any Source>
public typealias TransportDescriptor = PluginDescriptor<any Transport>
public typealias SinkDescriptor = PluginDescriptor<any Sink>

/// Maps plugin names to factories, for each kind.
///
/// Built explicitly: the CLI registers every bundled plugin, tests register their own.
public struct PluginRegistry: Sendable {
    public private(set) var sources: [SourceDescriptor] = []
    public private(set) var transports: [TransportDescriptor] = []
    public private(set) var sinks: [SinkDescriptor] = []
    /// The plugin a section names when it leaves out `use:` (or the section is left out).
    public private(set) var defaults: [PluginKind: String] = [:]
    /// The ledgers a config's `ledger:` URI may pick by its scheme; SQLite in `state:` needs none.
    public private(set) var ledgers: [LedgerDescriptor] = []

    public init() {}

    /// Adds a source; `isDefault` makes it the one used when the config names none.
    public mutating func register(source: SourceDescriptor, isDefault: Bool = false) {
        sources.removeAll { $0.info.name == source.info.name }
        sources.append(source)
        if isDefault { defaults[.source] = source.info.name }
    }

    public mutating func register(transport: TransportDescriptor, isDefault: Bool = false) {
        transports.removeAll { $0.info.name == transport.info.name }
        transports.append(transport)
        if isDefault { defaults[.transport] = transport.info.name }
    }

    public mutating func register(sink: SinkDescriptor, isDefault: Bool = false) {
        sinks.removeAll { $0.info.name == sink.info.name }
        sinks.append(sink)
        if isDefault { defaults[.sink] = sink.info.name }
    }

    /// Adds a ledger for the URI schemes it names (replacing another's claim on them).
    public mutating func register(ledger: LedgerDescriptor) {
        for scheme in ledger.schemes {
            ledgers.removeAll { $0.schemes.contains(scheme) }
        }
        ledgers.append(ledger)
    }

    /// The ledger a `ledger:` URI of `scheme` opens, or nil.
    public func ledger(forScheme scheme: String) -> LedgerDescriptor? {
        ledgers.first { $0.schemes.contains(scheme.lowercased()) }
    }

    /// Every plugin of `kind`, in registration order.
    public func plugins(_ kind: PluginKind) -> [PluginInfo] {
        switch kind {
        case .source: sources.map(\.info)
        case .transport: transports.map(\.info)
        case .sink: sinks.map(\.info)
        default: []
        }
    }

    public func info(_ kind: PluginKind, named name: String) -> PluginInfo? {
        plugins(kind).first { $0.name == name }
    }

    public func source(named name: String) -> SourceDescriptor? { sources.first { $0.info.name == name } }
    public func transport(named name: String) -> TransportDescriptor? { transports.first { $0.info.name == name } }
    public func sink(named name: String) -> SinkDescriptor? { sinks.first { $0.info.name == name } }
}
