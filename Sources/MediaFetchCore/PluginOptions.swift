import Foundation

/// A plugin's validated options, with defaults filled in and the place each came from,
/// handed to its factory.
public struct PluginOptions: Sendable {
    /// `source`, `transport` or `sink`.
    public var section: String
    /// Where the section itself starts, for errors about the section as a whole.
    public var sectionLocation: SourceLocation?
    public var values: [String: OptionValue]
    public var locations: [String: SourceLocation]
    /// The keys whose values are credentials (``OptionSpec/secret``): shown as ``OptionSpec/redacted``.
    public var secretKeys: Set<String>
    /// The keys whose values are sizes in bytes (``OptionType/byteSize``): shown with a unit, as a config writes them.
    public var byteSizeKeys: Set<String>

    public init(
        section: String,
        sectionLocation: SourceLocation? = nil,
        values: [String: OptionValue] = [:],
        locations: [String: SourceLocation] = [:],
        secretKeys: Set<String> = [],
        byteSizeKeys: Set<String> = []
    ) {
        self.section = section
        self.sectionLocation = sectionLocation
        self.values = values
        self.locations = locations
        self.secretKeys = secretKeys
        self.byteSizeKeys = byteSizeKeys
    }

    /// The value of `key` as messages may show it: ``OptionSpec/redacted`` for a secret.
    /// A size in bytes reads with the largest unit that divides it (`50MB`, `64MiB`), which the config reads back.
    public func printable(_ key: String) -> String? {
        guard let value = values[key] else { return nil }
        if secretKeys.contains(key) { return OptionSpec.redacted }
        if byteSizeKeys.contains(key), case .integer(let bytes) = value { return Self.byteSizeText(bytes) }
        return value.description
    }

    /// `bytes` with the largest unit that divides it exactly: `50MB`, `64MiB`, `1536B`... `0` and sizes no unit
    /// divides read as plain bytes.
    static func byteSizeText(_ bytes: Int) -> String {
        guard bytes != 0 else { return "0" }
        let units: [(String, Int)] = [
            ("TiB", 1 << 40), ("TB", 1_000_000_000_000), ("GiB", 1 << 30), ("GB", 1_000_000_000), ("MiB", 1 << 20),
            ("MB", 1_000_000), ("KiB", 1 << 10), ("KB", 1_000),
        ]
        for (suffix, factor) in units where bytes % factor == 0 { return "\(bytes / factor)\(suffix)" }
        return "\(bytes)B"
    }

    public func string(_ key: String) -> String? {
        switch values[key] {
        case .string(let value): value
        case .path(let value): value
        case .url(let value): value.absoluteString
        default: nil
        }
    }

    public func integer(_ key: String) -> Int? {
        if case .integer(let value) = values[key] { value } else { nil }
    }

    public func bool(_ key: String) -> Bool? {
        if case .bool(let value) = values[key] { value } else { nil }
    }

    public func duration(_ key: String) -> Duration? {
        if case .duration(let value) = values[key] { value } else { nil }
    }

    public func list(_ key: String) -> [String]? {
        if case .list(let value) = values[key] { value } else { nil }
    }

    public func map(_ key: String) -> [OptionValue.KeyValue]? {
        if case .map(let value) = values[key] { value } else { nil }
    }

    public func path(_ key: String) -> String? {
        if case .path(let value) = values[key] { value } else { nil }
    }

    public func url(_ key: String) -> URL? {
        if case .url(let value) = values[key] { value } else { nil }
    }

    /// An error about `key` (or the whole section when nil), pointing at where it was set.
    public func error(_ key: String?, _ message: String) -> ConfigError {
        let location = key.flatMap { locations[$0] } ?? sectionLocation
        return ConfigError(message, at: location, key: key.map { "\(section).\($0)" } ?? section)
    }
}
