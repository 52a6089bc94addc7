/// One `--set key.path=value` argument, parsed and ready to apply to a config's tree before validation.
///
/// Locations of everything an override brings read `--set <key path>` as the file, line 1, and the column of the
/// 1-based character offset in the argument: in `source.limit=20` the key is at column 8 (`limit`) and the value
/// at column 14. Validation errors about overridden values thus name the argument to fix.
struct ConfigOverride: Sendable {
    var argument: String
    /// The dotted key, split: `["source", "headers", "X-Foo"]`.
    var path: [String]
    /// The 1-based column of each path component in the argument.
    var columns: [Int]
    var value: YAMLNode

    /// Parses `argument`; the value is read as YAML (a scalar, or a flow collection like `{A: b}` or `[a, b]`),
    /// and taken as the plain text it is when it is not valid YAML or when the option wants one word.
    /// - Throws: ``ConfigError`` naming the argument when it has no `=` or an empty key.
    init(parsing argument: String) throws(ConfigError) {
        self.argument = argument
        guard let equals = argument.firstIndex(of: "=") else {
            throw Self.malformed(argument, "expected key=value, e.g. --set source.limit=20")
        }
        let keyText = String(argument[..<equals])
        guard !keyText.isEmpty else {
            throw Self.malformed(argument, "the key before = is empty; e.g. --set source.limit=20")
        }
        let components = keyText.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !components.contains(where: \.isEmpty) else {
            throw Self.malformed(argument, "the key \(ConfigText.quote(keyText)) has an empty part between dots")
        }
        var columns: [Int] = []
        var column = 1
        for component in components {
            columns.append(column)
            column += component.count + 1
        }
        path = components
        self.columns = columns

        let file = "--set \(keyText)"
        let valueColumnOffset = keyText.count + 1
        let options = YAMLParser.Options(
            file: file, origin: .override, columnOffset: valueColumnOffset, flowOnly: true)
        let text = String(argument[argument.index(after: equals)...])
        let location = SourceLocation(file: file, line: 1, column: valueColumnOffset + 1)
        do {
            // An empty value (`--set source.term=`) is YAML's empty document: the same as `term:` with nothing
            // after it.
            value = try YAMLParser.parse(Array(text.utf8), options: options) ?? .null(at: location, origin: .override)
        } catch {
            // Not YAML (`jack: johnson`, `{artist}/{title}.{ext}`): a person on a command line meant the words.
            value = YAMLNode(.scalar(text: text, style: .plain, tag: nil), at: location, origin: .override)
        }
        value.overrideText = text
        try ConfigTreeChecks.checkDuplicateKeys(value, path: keyText)
    }

    private static func malformed(_ argument: String, _ problem: String) -> ConfigError {
        ConfigError(
            "malformed override --set \(ConfigText.quote(argument)): \(problem)",
            at: SourceLocation(file: "--set", line: 1, column: 1))
    }

    var keyPath: String { path.joined(separator: ".") }

    private func location(ofComponent index: Int) -> SourceLocation {
        SourceLocation(file: "--set \(keyPath)", line: 1, column: columns[index])
    }

    /// Sets the value in `root`, creating missing mappings along the path and replacing an existing value
    /// (key included, so that its location names this override).
    /// - Throws: when the path runs through a value that is not a mapping.
    func apply(to root: inout YAMLNode) throws(ConfigError) {
        try set(in: &root, depth: 0)
    }

    private func set(in node: inout YAMLNode, depth: Int) throws(ConfigError) {
        var pairs: [YAMLNode.Pair]
        switch node.content {
        case .mapping(let existing):
            pairs = existing
        case .scalar where node.isNull:
            // `transport:` with nothing under it is an empty section; an override may fill it.
            pairs = []
        default:
            let parent = path[..<depth].joined(separator: ".")
            throw ConfigError(
                "cannot set \(keyPath): \(parent.isEmpty ? "the config" : parent) is \(node.summary), not a mapping",
                at: location(ofComponent: depth), key: keyPath)
        }
        let name = path[depth]
        let keyNode = YAMLNode(
            .scalar(text: name, style: .plain, tag: nil), at: location(ofComponent: depth), origin: .override)
        let index = pairs.firstIndex { $0.keyText == name }
        if depth == path.count - 1 {
            let pair = YAMLNode.Pair(key: keyNode, value: value)
            if let index { pairs[index] = pair } else { pairs.append(pair) }
        } else if let index {
            try set(in: &pairs[index].value, depth: depth + 1)
        } else {
            var child = YAMLNode(.mapping([]), at: keyNode.location, origin: .override)
            try set(in: &child, depth: depth + 1)
            pairs.append(YAMLNode.Pair(key: keyNode, value: child))
        }
        node.content = .mapping(pairs)
    }
}
