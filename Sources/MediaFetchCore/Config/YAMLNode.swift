/// One node of a parsed YAML document, kept with the place it started so that every config error can point at it.
///
/// Only what a config needs survives parsing: scalars keep their text, style and tag (conversion is by the
/// option's type, never by YAML's implicit typing), mappings keep their pairs in order (duplicates included,
/// so the loader can report both lines), sequences keep their items.
struct YAMLNode: Sendable {
    /// Where a node came from: the config file, or a `--set` argument (paths resolve differently).
    enum Origin: Sendable, Hashable {
        case file
        case override
    }

    enum ScalarStyle: Sendable, Hashable {
        case plain
        case singleQuoted
        case doubleQuoted
        case literal
        case folded
    }

    /// One entry of a mapping. Keys are always scalars: the parser rejects anything else.
    struct Pair: Sendable {
        var key: YAMLNode
        var value: YAMLNode

        /// The key's text (empty for a non-scalar key, which the parser never produces).
        var keyText: String { key.scalarText ?? "" }
    }

    enum Content: Sendable {
        case scalar(text: String, style: ScalarStyle, tag: String?)
        case mapping([Pair])
        case sequence([YAMLNode])
    }

    var content: Content
    var location: SourceLocation
    var origin: Origin
    /// The text a `--set` value was written as, so that an option expecting one word can take
    /// `--set sink.layout={artist}/{title}.{ext}` as written rather than as YAML's flow mapping.
    var overrideText: String?

    init(_ content: Content, at location: SourceLocation, origin: Origin) {
        self.content = content
        self.location = location
        self.origin = origin
    }

    /// An empty plain scalar: what YAML gives for `key:` with nothing after it.
    static func null(at location: SourceLocation, origin: Origin) -> YAMLNode {
        YAMLNode(.scalar(text: "", style: .plain, tag: nil), at: location, origin: origin)
    }

    var scalarText: String? {
        if case .scalar(let text, _, _) = content { text } else { nil }
    }

    /// The text of a value that should be one word: a scalar's, or what a `--set` value was written as.
    var wordText: String? {
        scalarText ?? overrideText
    }

    /// True for a value that was left out (`key:`). Only an empty *plain* scalar counts: `""` is an empty string,
    /// and `~` or `null` stay text because `~` is a meaningful path.
    var isNull: Bool {
        if case .scalar(let text, .plain, _) = content { text.isEmpty } else { false }
    }

    /// How a message names what was found: `"abc"`, `a mapping`, `a sequence`, `nothing`.
    var summary: String {
        switch content {
        case .scalar(let text, _, _): isNull ? "nothing" : ConfigText.quote(text)
        case .mapping: "a mapping"
        case .sequence: "a sequence"
        }
    }
}
