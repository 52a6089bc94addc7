import MediaFetchCore

/// One line mediafetch writes to a plugin: a JSON object built field by field, in the order given.
///
/// It is written the way PROTOCOL.md promises, so that a plugin in `sh` can pick fields out with `sed`: no
/// spaces between tokens, absent values left out, integers as plain digits, and strings escaping only `"`, `\`
/// and control characters (`\n`, `\r`, `\t`, `\u00XX`); `/` and non-ASCII text are written as they are.
struct JSONLine: Sendable {
    private var text = "{"

    init(type: String) {
        add("type", type)
    }

    mutating func add(_ key: String, _ value: String?) {
        guard let value else { return }
        field(key)
        Self.appendString(value, to: &text)
    }

    mutating func add(_ key: String, _ value: Int?) {
        guard let value else { return }
        field(key)
        text += String(value)
    }

    mutating func add(_ key: String, _ value: Int64?) {
        add(key, value.map { Int($0) })
    }

    /// A nested object of strings (the hello's `options`).
    mutating func add(_ key: String, object pairs: [(String, String)]) {
        field(key)
        text += "{"
        for (index, (name, value)) in pairs.enumerated() {
            if index > 0 { text += "," }
            Self.appendString(name, to: &text)
            text += ":"
            Self.appendString(value, to: &text)
        }
        text += "}"
    }

    /// The line's bytes, newline included.
    var bytes: [UInt8] { Array((text + "}\n").utf8) }

    private mutating func field(_ key: String) {
        if text.count > 1 { text += "," }
        Self.appendString(key, to: &text)
        text += ":"
    }

    /// `value` as a JSON string literal: core's writer, the same as the mock catalog's and serve's.
    static func appendString(_ value: String, to text: inout String) {
        text += JSONString.literal(value)
    }
}

/// Text from a plugin, fit to repeat in a message: at most 80 characters, control characters shown as `�`, in
/// double quotes.
struct Quoted: CustomStringConvertible {
    var text: String

    init(_ text: String) {
        self.text = text
    }

    var description: String {
        let shown = ItemRef.printable(text.count > 80 ? String(text.prefix(80)) + "…" : text)
        return "\"" + shown + "\""
    }
}
