/// A place in a config file (or on the command line) that a message can point at.
public struct SourceLocation: Sendable, Hashable, CustomStringConvertible {
    /// The config file's path as the user gave it, or `--set` for a command-line override.
    public var file: String
    /// 1-based.
    public var line: Int
    /// 1-based.
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`; for a command-line override, `--set key (column N)`.
    public var description: String {
        file.hasPrefix("--set") ? "\(file) (column \(column))" : "\(file):\(line):\(column)"
    }
}

/// A config that cannot be used, with where and why, and what is allowed instead.
///
/// Reads like `config/demo.yaml:12:9: transport.use: unknown transport "crul"; known: curl,
/// foundation (did you mean "curl"?)`.
public struct ConfigError: Error, Sendable, CustomStringConvertible {
    public var location: SourceLocation?
    /// The dotted key path the problem is at, e.g. `source.limit`.
    public var key: String?
    public var message: String
    /// The error underneath, when there was one (a file that cannot be read), for programs that look.
    public var cause: (any Error & Sendable)?

    public init(
        _ message: String, at location: SourceLocation?, key: String? = nil, cause: (any Error & Sendable)? = nil
    ) {
        self.location = location
        self.key = key
        self.message = message
        self.cause = cause
    }

    public var description: String {
        var parts: [String] = []
        if let location { parts.append(location.description) }
        if let key, !key.isEmpty { parts.append(key) }
        parts.append(message)
        return parts.joined(separator: ": ")
    }
}
