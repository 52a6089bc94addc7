/// A JSON string literal (RFC 8259) written by hand, for the JSON this package writes without `JSONEncoder`: the
/// mock catalog's answers and serve's event stream. Non-ASCII stays as UTF-8; control characters and the two
/// separators JavaScript once refused in strings (U+2028, U+2029) are escaped. `package`: shared by this package's
/// modules, not public API.
package enum JSONString {
    package static func literal(_ value: String) -> String {
        // Most strings need nothing escaped: a look at their bytes, then one copy, instead of a scalar at a time.
        // (0xE2 leads U+2028 and U+2029, and other scalars, which take the careful way.)
        let plain = !value.utf8.contains { byte in
            byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte == 0xE2
        }
        if plain { return "\"" + value + "\"" }
        var text = "\""
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x2028 || scalar.value == 0x2029:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        return text + "\""
    }
}
