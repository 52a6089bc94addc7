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

    public init(
        section: String,
        sectionLocation: SourceLocation? = nil,
        values: [String: OptionValue] = [:],
        locations: [String: SourceLocation] = [:],
        secretKeys: Set<String> = []
    ) {
        self.section = section
        self.sectionLocation = sectionLocation
        self.values = values
        self.locations = locations
        self.secretKeys = secretKeys
    }

    /// The value of `key` as messages may show it: ``OptionSpec/redacted`` for a secret.
    public func printable(_ key: String) -> String? {
        guard let value = values[key] else { return nil }
        return secretKeys.contains(key) ? OptionSpec.redacted : value.description
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
