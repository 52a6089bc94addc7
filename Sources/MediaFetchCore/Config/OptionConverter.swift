import Foundation

/// Converts a YAML node to an ``OptionValue`` by the option's declared ``OptionType``.
///
/// YAML's own implicit typing is ignored on purpose: `Yes` for a choice of `Yes`/`No` stays the word, and `no`
/// for a string option is the text "no". Every scalar goes through environment interpolation first.
struct OptionConverter: Sendable {
    var interpolator: EnvironmentInterpolator
    /// Relative paths written in the config file resolve against the file's directory…
    var configDirectory: URL
    /// …and relative paths given with `--set` against the directory the command was run in.
    var workingDirectory: URL
    /// What `~` expands to.
    var homeDirectory: String

    /// The longest duration accepted; it keeps the conversion to nanoseconds far from overflow.
    static let maxDurationSeconds = 1e9

    /// - Parameters:
    ///   - key: the dotted path for messages, `source.limit`.
    func convert(_ node: YAMLNode, as type: OptionType, key: String) throws(ConfigError) -> OptionValue {
        switch type {
        case .string:
            return .string(try text(node, expected: type, key: key))
        case .integer(let range):
            return .integer(try integer(node, range: range, key: key))
        case .bool:
            let word = try text(node, expected: type, key: key)
            switch word.lowercased() {
            case "true", "yes", "on": return .bool(true)
            case "false", "no", "off": return .bool(false)
            default:
                throw ConfigError(
                    "expected true or false (or yes/no, on/off), got \(ConfigText.quote(word))", at: node.location,
                    key: key)
            }
        case .duration:
            return .duration(try duration(node, key: key))
        case .choice(let words):
            let word = try text(node, expected: type, key: key)
            guard words.contains(word) else {
                throw ConfigError(
                    "expected one of \(ConfigText.list(words)), got \(ConfigText.quote(word))"
                        + ConfigText.suggestion(for: word, in: words),
                    at: node.location, key: key)
            }
            return .string(word)
        case .stringList:
            return .list(try list(node, key: key))
        case .stringMap:
            return .map(try map(node, key: key))
        case .path:
            return .path(try path(node, key: key))
        case .url:
            return .url(try url(node, key: key))
        case .byteSize:
            let word = try text(node, expected: type, key: key)
            // Every size option is a limit; `none` lifts it, where leaving the key out keeps the default.
            if word.trimmingCharacters(in: .whitespaces).lowercased() == "none" { return .string("none") }
            return .integer(try byteSize(node, key: key))
        }
    }

    private func byteSize(_ node: YAMLNode, key: String) throws(ConfigError) -> Int {
        let text = try text(node, expected: OptionType.byteSize, key: key)
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(suffix: String, factor: Double)] = [
            ("kib", 0x1p10), ("mib", 0x1p20), ("gib", 0x1p30), ("tib", 0x1p40),
            ("kb", 1e3), ("mb", 1e6), ("gb", 1e9), ("tb", 1e12), ("b", 1),
        ]
        var number = Substring(trimmed.lowercased())
        var factor = 1.0
        for unit in units where number.hasSuffix(unit.suffix) {
            number = number.dropLast(unit.suffix.count)
            factor = unit.factor
            break
        }
        number = Substring(number.trimmingCharacters(in: .whitespaces))
        let isNumber =
            number.unicodeScalars.contains { ("0"..."9").contains($0) }
            && number.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || $0 == "." }
            && number.filter { $0 == "." }.count <= 1
        guard isNumber, let value = Double(number), value * factor <= Double(Int64.max / 2) else {
            throw ConfigError(
                "expected \(OptionType.byteSize), got \(ConfigText.quote(text))", at: node.location, key: key)
        }
        return Int((value * factor).rounded())
    }

    /// A scalar's interpolated text.
    /// - Throws: when the node is a collection or was left empty.
    func text(_ node: YAMLNode, expected: OptionType, key: String) throws(ConfigError) -> String {
        try text(node, expected: expected.description, key: key)
    }

    func text(_ node: YAMLNode, expected: String, key: String) throws(ConfigError) -> String {
        guard let raw = node.wordText, !node.isNull else {
            // `key:` or `--set key=` left empty is YAML's null; an empty string is written `""`.
            let quoted = node.origin == .override ? "--set '\(key)=\"\"', quoted for the shell" : "write \"\""
            let empty = node.isNull && expected == OptionType.string.description ? " (for an empty one, \(quoted))" : ""
            throw ConfigError("expected \(expected), got \(node.summary)\(empty)", at: node.location, key: key)
        }
        return try interpolator.interpolate(raw, at: node.location, key: key)
    }

    private func integer(_ node: YAMLNode, range: ClosedRange<Int>?, key: String) throws(ConfigError) -> Int {
        let type = OptionType.integer(range)
        let text = try text(node, expected: type, key: key)
        var digits = Substring(text)
        if digits.first == "+" || digits.first == "-" { digits = digits.dropFirst() }
        // Only decimal digits: `1.5`, `0x10`, `1_000` and `1e3` are rejected rather than guessed at.
        guard !digits.isEmpty, digits.unicodeScalars.allSatisfy({ ("0"..."9").contains($0) }) else {
            throw ConfigError("expected \(type), got \(ConfigText.quote(text))", at: node.location, key: key)
        }
        guard let value = Int(text) else {
            throw ConfigError(
                "expected \(type), got \(ConfigText.quote(text)), which is too large", at: node.location, key: key)
        }
        if let range, !range.contains(value) {
            let name = key.split(separator: ".").last.map(String.init) ?? key
            throw ConfigError(
                "\(name) \(value) is out of range \(range.lowerBound)..\(range.upperBound)",
                at: node.location, key: key)
        }
        return value
    }

    private func duration(_ node: YAMLNode, key: String) throws(ConfigError) -> Duration {
        let text = try text(node, expected: OptionType.duration, key: key)
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(suffix: String, seconds: Double)] = [("ms", 0.001), ("s", 1), ("m", 60), ("h", 3600)]
        var number = Substring(trimmed)
        var factor = 1.0
        // `ms` before `m` and `s`: the longest suffix wins.
        for unit in units where number.hasSuffix(unit.suffix) {
            number = number.dropLast(unit.suffix.count)
            factor = unit.seconds
            break
        }
        number = Substring(number.trimmingCharacters(in: .whitespaces))
        if number.hasPrefix("-") {
            throw ConfigError(
                "duration \(ConfigText.quote(text)) is negative; use 0 or more, e.g. 30s or 500ms",
                at: node.location, key: key)
        }
        let isNumber =
            number.unicodeScalars.contains { ("0"..."9").contains($0) }
            && number.unicodeScalars.allSatisfy { ("0"..."9").contains($0) || $0 == "." }
            && number.filter { $0 == "." }.count <= 1
        guard isNumber, let value = Double(number) else {
            throw ConfigError(
                "expected \(OptionType.duration), got \(ConfigText.quote(text))", at: node.location, key: key)
        }
        let seconds = value * factor
        guard seconds <= Self.maxDurationSeconds else {
            throw ConfigError(
                "duration \(ConfigText.quote(text)) is too long; at most \(Int(Self.maxDurationSeconds)) seconds",
                at: node.location, key: key)
        }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    private func list(_ node: YAMLNode, key: String) throws(ConfigError) -> [String] {
        switch node.content {
        case .sequence(let items):
            var values: [String] = []
            for item in items {
                values.append(try text(item, expected: "a string", key: key))
            }
            return values
        case .scalar:
            // A single value is a list of one. A comma is not a separator: URLs and titles contain commas.
            return [try text(node, expected: OptionType.stringList, key: key)]
        case .mapping:
            throw ConfigError(
                "expected \(OptionType.stringList), got \(node.summary)", at: node.location, key: key)
        }
    }

    private func map(_ node: YAMLNode, key: String) throws(ConfigError) -> [OptionValue.KeyValue] {
        guard case .mapping(let pairs) = node.content else {
            throw ConfigError(
                "expected a mapping (\(OptionType.stringMap)), got \(node.summary)", at: node.location, key: key)
        }
        var values: [OptionValue.KeyValue] = []
        for pair in pairs {
            let entryKey = "\(key).\(pair.keyText)"
            guard !pair.value.isNull else {
                throw ConfigError(
                    "expected a string value for \(ConfigText.quote(pair.keyText)), got nothing "
                        + "(write \"\" for an empty value)",
                    at: pair.value.location, key: entryKey)
            }
            values.append(.init(pair.keyText, try text(pair.value, expected: "a string", key: entryKey)))
        }
        return values
    }

    private func path(_ node: YAMLNode, key: String) throws(ConfigError) -> String {
        let text = try text(node, expected: OptionType.path, key: key)
        guard !text.isEmpty else {
            throw ConfigError("expected a path, got an empty string", at: node.location, key: key)
        }
        guard !text.unicodeScalars.contains("\0") else {
            throw ConfigError("a path cannot contain a NUL character", at: node.location, key: key)
        }
        let base = node.origin == .file ? configDirectory : workingDirectory
        return resolve(path: text, against: base)
    }

    /// `path` with `~` expanded, made absolute against `base` and standardized (no `.` or `..`).
    func resolve(path: String, against base: URL) -> String {
        var expanded = path
        if path == "~" {
            expanded = homeDirectory
        } else if path.hasPrefix("~/") {
            expanded = homeDirectory + path.dropFirst()
        }
        return URL(fileURLWithPath: expanded, relativeTo: base).standardizedFileURL.path
    }

    private func url(_ node: YAMLNode, key: String) throws(ConfigError) -> URL {
        let text = try text(node, expected: OptionType.url, key: key)
        guard let url = URL(string: text), url.isFetchable else {
            throw ConfigError(
                "expected an absolute http or https URL with a host, got \(ConfigText.quote(text)); "
                    + "only http and https are allowed",
                at: node.location, key: key)
        }
        return url
    }
}
