import Foundation

/// One option a plugin takes in its config section: its key, type, default and documentation.
public struct OptionSpec: Sendable {
    public var key: String
    public var type: OptionType
    /// Filled in when the config leaves the key out; nil when there is no default.
    public var defaultValue: OptionValue?
    public var required: Bool
    public var doc: String
    /// How the default reads in docs when it is not a plain value ("max-items, at most 200").
    public var defaultText: String?
    /// A credential (a secret key, a token): `mediafetch check` prints it as ``redacted``, and a plugin never
    /// puts it in a message, a log or the ledger.
    public var secret: Bool

    /// What `mediafetch check` prints in place of a secret option's value.
    public static let redacted = "(secret, not shown)"

    public init(
        _ key: String,
        _ type: OptionType,
        default defaultValue: OptionValue? = nil,
        required: Bool = false,
        defaultText: String? = nil,
        secret: Bool = false,
        doc: String
    ) {
        self.key = key
        self.type = type
        self.defaultValue = defaultValue
        self.required = required
        self.doc = doc
        self.defaultText = defaultText
        self.secret = secret
    }

    /// The default as the docs show it.
    public var defaultDescription: String {
        if let defaultText { return defaultText }
        if required { return "required" }
        return defaultValue?.description ?? "none"
    }
}

/// The types an option value can have; the config loader converts YAML to them and checks ranges.
public enum OptionType: Sendable, Hashable, CustomStringConvertible {
    case string
    /// An integer, within the range when there is one.
    case integer(ClosedRange<Int>?)
    case bool
    /// Seconds as a number, or a number with a unit: `500ms`, `30s`, `2m`, `1h`.
    case duration
    /// One of a fixed set of words, matched exactly.
    case choice([String])
    /// A sequence of strings; a single scalar is a list of one.
    case stringList
    /// A mapping of string to string (headers).
    case stringMap
    /// A file system path; relative paths are resolved against the config file's directory.
    case path
    /// An absolute http or https URL.
    case url
    /// A number of bytes: `1048576`, `500KB`, `20MB`, `1.5GB` (powers of 1000) or `512KiB`, `1GiB`
    /// (powers of 1024). Converted to ``OptionValue/integer(_:)``. Every size option is a limit, and the word
    /// `none` lifts it: that converts to ``OptionValue/string(_:)`` `"none"`, which
    /// ``PluginOptions/integer(_:)`` reads as no value.
    case byteSize

    public var description: String {
        switch self {
        case .string: "string"
        case .integer(let range):
            if let range { "integer \(range.lowerBound)..\(range.upperBound)" } else { "integer" }
        case .bool: "true or false"
        case .duration: "duration (seconds, or 500ms, 30s, 2m)"
        case .choice(let words): "one of " + words.joined(separator: ", ")
        case .stringList: "list of strings"
        case .stringMap: "mapping of string to string"
        case .path: "path"
        case .url: "http(s) URL"
        case .byteSize: "size (bytes, or 500KB, 20MB, 1GiB), or none"
        }
    }
}

/// A converted, validated option value.
public enum OptionValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case integer(Int)
    case bool(Bool)
    case duration(Duration)
    case list([String])
    /// Key-value pairs in config order.
    case map([KeyValue])
    /// An absolute path.
    case path(String)
    case url(URL)

    public struct KeyValue: Sendable, Hashable {
        public var key: String
        public var value: String

        public init(_ key: String, _ value: String) {
            self.key = key
            self.value = value
        }
    }

    public var description: String {
        switch self {
        case .string(let value): value.isEmpty ? "\"\"" : value
        case .integer(let value): String(value)
        case .bool(let value): String(value)
        case .duration(let value): value.formattedSeconds
        case .list(let values): "[" + values.joined(separator: ", ") + "]"
        case .map(let pairs): "{" + pairs.map { "\($0.key): \($0.value)" }.joined(separator: ", ") + "}"
        case .path(let value): value
        case .url(let value): value.absoluteString
        }
    }
}

extension Duration {
    /// Seconds as a config would spell them: `30s`, `0.5s`.
    public var formattedSeconds: String {
        seconds == seconds.rounded() ? "\(Int(seconds))s" : "\(seconds)s"
    }

    /// The duration in seconds, as a `Double` (for APIs that take a `TimeInterval`).
    public var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
