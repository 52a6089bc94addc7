/// Structural checks on a parsed tree that do not depend on any plugin.
enum ConfigTreeChecks {
    /// Throws for the first mapping, anywhere in `node`, that has the same key twice; YAML leaves this
    /// undefined and silently keeping either value would hide a mistake.
    /// - Parameter path: the dotted key path of `node`, for the error's key.
    static func checkDuplicateKeys(_ node: YAMLNode, path: String) throws(ConfigError) {
        // Depth is bounded by YAMLParser.maxDepth, so this recursion is too.
        switch node.content {
        case .scalar:
            return
        case .sequence(let items):
            for item in items { try checkDuplicateKeys(item, path: path) }
        case .mapping(let pairs):
            var seen: [String: SourceLocation] = [:]
            for pair in pairs {
                let childPath = path.isEmpty ? pair.keyText : "\(path).\(pair.keyText)"
                if let first = seen[pair.keyText] {
                    throw ConfigError(
                        "duplicate key \(ConfigText.quote(pair.keyText)): first at line \(first.line), "
                            + "again at line \(pair.key.location.line); keep one",
                        at: pair.key.location, key: childPath)
                }
                seen[pair.keyText] = pair.key.location
                try checkDuplicateKeys(pair.value, path: childPath)
            }
        }
    }
}
