import CYAML

/// Turns YAML text into a ``YAMLNode`` tree with libyaml's event API.
///
/// Anchors and aliases are rejected rather than resolved: a config has no use for them, and rejecting them
/// rules out alias bombs. Nesting is limited so that later recursive walks are bounded whatever the input.
enum YAMLParser {
    /// Far deeper than any config needs, shallow enough that recursive walks of the tree cannot exhaust the stack.
    static let maxDepth = 64

    struct Options {
        /// The name locations carry: the config path, or `--set <key>`.
        var file: String
        var origin: YAMLNode.Origin
        /// Added to columns on the first line, so that a `--set` value's columns count from the argument's start.
        var columnOffset = 0
        /// `--set` values must be a scalar or a flow collection: `a: b` there is more likely a typo than a mapping.
        var flowOnly = false
    }

    /// Parses one YAML document.
    /// - Returns: the document's root, or nil when the stream holds no document (empty, or only comments).
    /// - Throws: ``ConfigError`` for invalid YAML, a second document, anchors, aliases, non-scalar keys or
    ///   nesting deeper than ``maxDepth``.
    static func parse(_ bytes: [UInt8], options: Options) throws(ConfigError) -> YAMLNode? {
        let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
        defer { parser.deallocate() }
        guard yaml_parser_initialize(parser) == 1 else {
            throw ConfigError("out of memory while reading YAML", at: nil)
        }
        defer { yaml_parser_delete(parser) }

        // libyaml reads from this pointer throughout parsing, so it is copied into memory this function owns
        // (an array's buffer is only valid inside a closure, which cannot carry a typed throw through).
        let input = UnsafeMutablePointer<UInt8>.allocate(capacity: max(bytes.count, 1))
        defer { input.deallocate() }
        input.initialize(repeating: 0, count: max(bytes.count, 1))
        for (index, byte) in bytes.enumerated() { input[index] = byte }
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        yaml_parser_set_input_string(parser, input, bytes.count)

        var builder = TreeBuilder(options: options)
        var event = yaml_event_t()
        while !builder.finished {
            guard yaml_parser_parse(parser, &event) == 1 else {
                throw problem(parser.pointee, bytes: bytes, options: options)
            }
            // Runs at the end of each iteration, after the event's strings have been copied into Swift.
            defer { yaml_event_delete(&event) }
            try builder.handle(event)
        }
        return builder.root
    }

    /// The error libyaml reported, at the mark it gave.
    private static func problem(_ parser: yaml_parser_t, bytes: [UInt8], options: Options) -> ConfigError {
        if parser.error == YAML_MEMORY_ERROR {
            return ConfigError("out of memory while reading YAML", at: nil)
        }
        let problem = parser.problem.map { String(cString: $0) } ?? "invalid YAML"
        if parser.error == YAML_READER_ERROR {
            // Reader errors (bad UTF-8, control characters) carry a byte offset instead of a mark.
            let location = locationOfByte(Int(clamping: parser.problem_offset), in: bytes, options: options)
            return ConfigError("invalid YAML: \(problem)", at: location)
        }
        var message = "invalid YAML: \(problem)"
        if let context = parser.context {
            let contextMark = location(parser.context_mark, options: options)
            message += " (\(String(cString: context)) at line \(contextMark.line), column \(contextMark.column))"
        }
        return ConfigError(message, at: location(parser.problem_mark, options: options))
    }

    /// libyaml marks are 0-based; messages and editors are 1-based.
    static func location(_ mark: yaml_mark_t, options: Options) -> SourceLocation {
        let line = Int(clamping: mark.line)
        let column = Int(clamping: mark.column) + 1 + (line == 0 ? options.columnOffset : 0)
        return SourceLocation(file: options.file, line: line + 1, column: column)
    }

    private static func locationOfByte(_ offset: Int, in bytes: [UInt8], options: Options) -> SourceLocation {
        var line = 0
        var column = 0
        for byte in bytes.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 0
            } else if byte & 0xC0 != 0x80 {
                // Columns count characters, as libyaml's do: continuation bytes do not start one.
                column += 1
            }
        }
        return SourceLocation(
            file: options.file, line: line + 1, column: column + 1 + (line == 0 ? options.columnOffset : 0))
    }
}

/// Assembles nodes from libyaml events with an explicit stack (no recursion, so depth is only limited by
/// ``YAMLParser/maxDepth``).
private struct TreeBuilder {
    private enum Frame {
        case mapping(YAMLNode, pairs: [YAMLNode.Pair], pendingKey: YAMLNode?)
        case sequence(YAMLNode, items: [YAMLNode])
    }

    let options: YAMLParser.Options
    private var stack: [Frame] = []
    private(set) var root: YAMLNode?
    private(set) var finished = false
    private var documents = 0

    init(options: YAMLParser.Options) {
        self.options = options
    }

    mutating func handle(_ event: yaml_event_t) throws(ConfigError) {
        let location = YAMLParser.location(event.start_mark, options: options)
        switch event.type {
        case YAML_STREAM_END_EVENT:
            finished = true
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 {
                throw ConfigError(
                    "a config is one YAML document, and a second one starts here; remove the `---` line "
                        + "(or everything after the first document)",
                    at: location)
            }
        case YAML_ALIAS_EVENT:
            throw anchorError(at: location)
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            if scalar.anchor != nil { throw anchorError(at: location) }
            let text = Self.string(scalar.value, length: scalar.length)
            let tag = scalar.tag.map { String(cString: $0) }
            let node = YAMLNode(
                .scalar(text: text, style: Self.style(scalar.style), tag: tag), at: location, origin: options.origin)
            try attach(node)
        case YAML_MAPPING_START_EVENT:
            let mapping = event.data.mapping_start
            if mapping.anchor != nil { throw anchorError(at: location) }
            try checkStyle(isFlow: mapping.style == YAML_FLOW_MAPPING_STYLE, what: "mapping", at: location)
            try push(.mapping(YAMLNode(.mapping([]), at: location, origin: options.origin), pairs: [], pendingKey: nil))
        case YAML_SEQUENCE_START_EVENT:
            let sequence = event.data.sequence_start
            if sequence.anchor != nil { throw anchorError(at: location) }
            try checkStyle(isFlow: sequence.style == YAML_FLOW_SEQUENCE_STYLE, what: "sequence", at: location)
            try push(.sequence(YAMLNode(.sequence([]), at: location, origin: options.origin), items: []))
        case YAML_MAPPING_END_EVENT, YAML_SEQUENCE_END_EVENT:
            guard let frame = stack.popLast() else { return }
            switch frame {
            case .mapping(var node, let pairs, _):
                node.content = .mapping(pairs)
                try attach(node)
            case .sequence(var node, let items):
                node.content = .sequence(items)
                try attach(node)
            }
        default:
            // Stream start and document end carry nothing a config needs.
            break
        }
    }

    private mutating func push(_ frame: Frame) throws(ConfigError) {
        guard stack.count < YAMLParser.maxDepth else {
            throw ConfigError("nesting is deeper than \(YAMLParser.maxDepth) levels", at: frameLocation(frame))
        }
        stack.append(frame)
    }

    private func frameLocation(_ frame: Frame) -> SourceLocation {
        switch frame {
        case .mapping(let node, _, _), .sequence(let node, _): node.location
        }
    }

    /// Adds a finished node to the collection being built, or makes it the document's root.
    private mutating func attach(_ node: YAMLNode) throws(ConfigError) {
        guard let top = stack.popLast() else {
            root = node
            return
        }
        switch top {
        case .mapping(let mapping, var pairs, let pendingKey):
            if let pendingKey {
                pairs.append(YAMLNode.Pair(key: pendingKey, value: node))
                stack.append(.mapping(mapping, pairs: pairs, pendingKey: nil))
            } else {
                guard node.scalarText != nil else {
                    throw ConfigError("a key must be plain text, not \(node.summary)", at: node.location)
                }
                stack.append(.mapping(mapping, pairs: pairs, pendingKey: node))
            }
        case .sequence(let sequence, var items):
            items.append(node)
            stack.append(.sequence(sequence, items: items))
        }
    }

    private func checkStyle(isFlow: Bool, what: String, at location: SourceLocation) throws(ConfigError) {
        guard options.flowOnly, stack.isEmpty, !isFlow else { return }
        throw ConfigError(
            "an override value is a scalar or a flow \(what) such as {A: b} or [a, b]; "
                + "quote the value if it is text containing \": \" or \"- \"",
            at: location)
    }

    private func anchorError(at location: SourceLocation) -> ConfigError {
        ConfigError(
            "anchors (&name) and aliases (*name) are not supported in a config; write the value out", at: location)
    }

    private static func string(_ pointer: UnsafeMutablePointer<yaml_char_t>?, length: Int) -> String {
        guard let pointer, length > 0 else { return "" }
        return String(decoding: UnsafeBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    private static func style(_ style: yaml_scalar_style_t) -> YAMLNode.ScalarStyle {
        switch style {
        case YAML_SINGLE_QUOTED_SCALAR_STYLE: .singleQuoted
        case YAML_DOUBLE_QUOTED_SCALAR_STYLE: .doubleQuoted
        case YAML_LITERAL_SCALAR_STYLE: .literal
        case YAML_FOLDED_SCALAR_STYLE: .folded
        default: .plain
        }
    }
}
