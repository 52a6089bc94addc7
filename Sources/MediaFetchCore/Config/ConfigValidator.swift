import Foundation

/// Checks a parsed (and overridden) config tree against the registry's plugins and builds the ``PipelineSpec``.
struct ConfigValidator {
    static let topLevelKeys = ["source", "transport", "sink", "download", "state", "ledger", "name"]

    var registry: PluginRegistry
    /// The config path as the user gave it.
    var path: String
    var converter: OptionConverter

    func validate(_ root: YAMLNode) throws(ConfigError) -> PipelineSpec {
        guard case .mapping(let pairs) = root.content else {
            throw ConfigError(
                "expected a mapping with a source: section at the top level, got \(root.summary)", at: root.location)
        }
        var sections: [String: YAMLNode.Pair] = [:]
        for pair in pairs {
            let key = pair.keyText
            guard Self.topLevelKeys.contains(key) else {
                throw ConfigError(
                    "unknown top-level key \(ConfigText.quote(key))"
                        + ConfigText.suggestion(for: key, in: Self.topLevelKeys)
                        + "; allowed: \(ConfigText.list(Self.topLevelKeys))",
                    at: pair.key.location, key: key)
            }
            sections[key] = pair
        }
        guard sections["source"] != nil else {
            throw ConfigError(
                "missing required section \"source\"; a config needs at least\n" + example(), at: root.location,
                key: "source")
        }
        let source = try selection(.source, section: sections["source"], root: root)
        // The source may suggest defaults for other sections (a podcast's layout and size limit).
        let suggestions = registry.info(.source, named: source.name)
        let transport = try selection(.transport, section: sections["transport"], root: root)
        let sink = try selection(
            .sink, section: sections["sink"], root: root, suggested: suggestions?.suggestedDefaults(for: .sink) ?? [:])
        let state: String
        if let pair = sections["state"],
            case .path(let value) = try converter.convert(pair.value, as: .path, key: "state")
        {
            state = value
        } else {
            // One state directory per config: configs side by side in a folder must not share a ledger.
            let name = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
            state =
                converter.configDirectory.appendingPathComponent(".mediafetch")
                .appendingPathComponent(name.isEmpty ? "config" : name).standardizedFileURL.path
        }
        let download = try sectionOptions(
            "download", pairs: try mappingPairs(sections["download"], key: "download"),
            specs: DownloadPolicy.options, owner: "the download section",
            sectionLocation: sections["download"]?.key.location, root: root,
            suggested: suggestions?.suggestedDefaults(for: nil) ?? [:])
        let configName = URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        return PipelineSpec(
            configPath: path, source: source, transport: transport, sink: sink,
            stateDirectory: URL(fileURLWithPath: state, isDirectory: true), download: download,
            ledger: try ledger(sections["ledger"]),
            runName: try runName(sections["name"]) ?? (configName.isEmpty ? "config" : configName))
    }

    /// The top-level `name:`: printable text of at most 200 characters.
    private func runName(_ pair: YAMLNode.Pair?) throws(ConfigError) -> String? {
        guard let pair else { return nil }
        let name = try converter.text(pair.value, expected: "a run name", key: "name")
        guard !name.isEmpty, name.count <= 200, !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw ConfigError(
                "a run name is 1 to 200 printable characters, got \(ConfigText.quote(name)); every worker of one run "
                    + "uses the same name", at: pair.value.location, key: "name")
        }
        return name
    }

    /// The top-level `ledger:` URI, its `${VAR}` references resolved (each value percent-encoded, so that a password
    /// holding `@` or `/` keeps the URI whole), with a registered ledger for its scheme. Messages never quote the
    /// resolved URI, only the redacted one.
    private func ledger(_ pair: YAMLNode.Pair?) throws(ConfigError) -> LedgerSelection? {
        guard let pair else { return nil }
        let node = pair.value
        guard let raw = node.wordText, !node.isNull else {
            throw ConfigError(
                "expected a connection URI such as postgresql://USER@HOST:PORT/DB, got \(node.summary); leave "
                    + "ledger: out for the SQLite ledger in state:", at: node.location, key: "ledger")
        }
        let uri = try converter.interpolator.interpolate(
            raw, at: node.location, key: "ledger", escape: { Self.percentEncoded($0) })
        let known = registry.ledgers.flatMap(\.schemes)
        guard let scheme = LedgerSelection.scheme(of: uri) else {
            throw ConfigError(
                "expected a connection URI such as postgresql://USER@HOST:PORT/DB, got "
                    + "\(ConfigText.quote(LedgerSelection.redact(uri))); leave ledger: out for the SQLite ledger in state:",
                at: node.location, key: "ledger")
        }
        guard registry.ledger(forScheme: scheme) != nil else {
            throw ConfigError(
                "unknown ledger scheme \(ConfigText.quote(scheme)) in \(ConfigText.quote(LedgerSelection.redact(uri)))"
                    + "; known: \(known.isEmpty ? "none in this build" : ConfigText.list(known))"
                    + "; leave ledger: out for the SQLite ledger in state:",
                at: node.location, key: "ledger")
        }
        return LedgerSelection(uri: uri, location: node.location)
    }

    /// `text` percent-encoded but for the characters a URI never needs to encode.
    static func percentEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// A minimal config, for messages about an empty or sourceless file.
    func example() -> String {
        let name = registry.defaults[.source] ?? registry.plugins(.source).first?.name ?? "itunes"
        var lines = ["    source:", "      use: \(name)"]
        if let info = registry.info(.source, named: name) {
            for option in info.options where option.required {
                lines.append("      \(option.key): ...")
            }
        }
        return lines.joined(separator: "\n")
    }

    /// Resolves one section: picks the plugin, checks and converts its options, fills defaults.
    /// - Parameter section: the section's pair in the top-level mapping, or nil when it was left out.
    /// - Parameter suggested: defaults the source suggests for this section, by key.
    private func selection(
        _ kind: PluginKind, section: YAMLNode.Pair?, root: YAMLNode, suggested: [String: OptionValue] = [:]
    ) throws(ConfigError) -> PluginSelection {
        let known = registry.plugins(kind).map(\.name)
        var optionPairs: [YAMLNode.Pair] = []
        var useNode: YAMLNode?
        if let section {
            switch section.value.content {
            case .mapping(let pairs):
                for pair in pairs {
                    if pair.keyText == "use" { useNode = pair.value } else { optionPairs.append(pair) }
                }
            case .scalar where section.value.isNull:
                break
            default:
                throw ConfigError(
                    "expected a mapping, got \(section.value.summary); write the plugin as use: <name> "
                        + "on its own line below \(kind):",
                    at: section.value.location, key: kind.rawValue)
            }
        }
        let sectionLocation = section?.key.location
        let info: PluginInfo
        if let useNode {
            let name = try converter.text(useNode, expected: "a \(kind) name", key: "\(kind).use")
            guard let found = registry.info(kind, named: name) else {
                throw ConfigError(
                    "unknown \(kind) \(ConfigText.quote(name)); known: \(ConfigText.list(known))"
                        + ConfigText.suggestion(for: name, in: known),
                    at: useNode.location, key: "\(kind).use")
            }
            info = found
        } else if let name = registry.defaults[kind], let found = registry.info(kind, named: name) {
            info = found
        } else if let sectionLocation {
            throw ConfigError(
                "missing required key \"use\"; this build has no default \(kind), so name one of: "
                    + ConfigText.list(known),
                at: sectionLocation, key: "\(kind).use")
        } else {
            throw ConfigError(
                "missing required section \"\(kind)\"; this build has no default \(kind), so add a \(kind): section "
                    + "with use: one of \(ConfigText.list(known))",
                at: root.location, key: kind.rawValue)
        }

        let options = try sectionOptions(
            kind.rawValue, pairs: optionPairs, specs: info.options,
            owner: "\(kind) \(ConfigText.quote(info.name))", extraKeys: ["use"], sectionLocation: sectionLocation,
            root: root, suggested: suggested)
        return PluginSelection(
            kind: kind, name: info.name, options: options, location: useNode?.location ?? sectionLocation)
    }

    /// The pairs of a section that must be a mapping (or left empty).
    private func mappingPairs(_ section: YAMLNode.Pair?, key: String) throws(ConfigError) -> [YAMLNode.Pair] {
        guard let section else { return [] }
        switch section.value.content {
        case .mapping(let pairs): return pairs
        case .scalar where section.value.isNull: return []
        default:
            throw ConfigError("expected a mapping, got \(section.value.summary)", at: section.value.location, key: key)
        }
    }

    /// Checks and converts a section's keys against `specs`, and fills in defaults.
    /// - Parameters:
    ///   - owner: how messages name whose keys these are: `source "itunes"`, `the download section`.
    ///   - extraKeys: keys handled elsewhere that are allowed too (`use`).
    ///   - suggested: defaults that replace the specs' own for keys the section leaves out (the source's).
    private func sectionOptions(
        _ name: String, pairs: [YAMLNode.Pair], specs: [OptionSpec], owner: String, extraKeys: [String] = [],
        sectionLocation: SourceLocation?, root: YAMLNode, suggested: [String: OptionValue] = [:]
    ) throws(ConfigError) -> PluginOptions {
        var values: [String: OptionValue] = [:]
        var locations: [String: SourceLocation] = [:]
        let allowed = extraKeys + specs.map(\.key)
        for pair in pairs {
            let key = pair.keyText
            guard let spec = specs.first(where: { $0.key == key }) else {
                throw ConfigError(
                    "unknown key \(ConfigText.quote(key)) for \(owner)"
                        + ConfigText.suggestion(for: key, in: allowed) + "; allowed: \(ConfigText.list(allowed))",
                    at: pair.key.location, key: "\(name).\(key)")
            }
            values[key] = try converter.convert(pair.value, as: spec.type, key: "\(name).\(key)")
            locations[key] = pair.key.location
        }
        for spec in specs where values[spec.key] == nil {
            if let value = suggested[spec.key] ?? spec.defaultValue {
                values[spec.key] = resolvedDefault(value)
            } else if spec.required {
                throw ConfigError(
                    "missing required key \(ConfigText.quote(spec.key)) for \(owner) (\(spec.type): \(spec.doc))",
                    at: sectionLocation ?? root.location, key: "\(name).\(spec.key)")
            }
        }
        return PluginOptions(
            section: name, sectionLocation: sectionLocation, values: values, locations: locations,
            secretKeys: Set(specs.filter(\.secret).map(\.key)),
            byteSizeKeys: Set(specs.filter { $0.type == .byteSize }.map(\.key)))
    }

    /// A default path is relative to the config, like one written in it, so that factories only see absolute paths.
    private func resolvedDefault(_ value: OptionValue) -> OptionValue {
        guard case .path(let path) = value else { return value }
        return .path(converter.resolve(path: path, against: converter.configDirectory))
    }
}
