/// Small text helpers shared by the config loader's messages.
enum ConfigText {
    /// The longest piece of user text a message repeats; a pasted blob should not drown the message.
    static let maxQuotedLength = 60

    /// `text` in double quotes, with control characters escaped and long text cut, so that any input
    /// (including a fuzzer's) gives a one-line, readable message.
    static func quote(_ text: String) -> String {
        var out = ""
        var count = 0
        for scalar in text.unicodeScalars {
            if count >= maxQuotedLength {
                out += "…"
                break
            }
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\t": out += "\\t"
            case "\r": out += "\\r"
            default:
                if scalar.properties.generalCategory == .control {
                    out += "\\u{" + String(scalar.value, radix: 16) + "}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
            count += 1
        }
        return "\"" + out + "\""
    }

    /// Words joined for a message: `a, b, c`.
    static func list(_ words: [String]) -> String {
        words.isEmpty ? "(none)" : words.joined(separator: ", ")
    }

    /// ` (did you mean "x"?)` when a close candidate exists, else the empty string.
    static func suggestion(for word: String, in candidates: [String]) -> String {
        guard let near = EditDistance.nearest(word, in: candidates) else { return "" }
        return " (did you mean \(quote(near))?)"
    }
}
