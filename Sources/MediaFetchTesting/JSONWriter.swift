import MediaFetchCore
/// Writes one JSON object with its keys in the order given.
///
/// Hand-written rather than `JSONSerialization` because Apple's records have a fixed key order and compact
/// number forms (`9.99`, `-1`), and a mock that mirrors them byte for byte makes captured fixtures and mock
/// answers interchangeable in tests.
struct JSONObjectWriter {
    private var text = "{"
    private var isFirst = true

    mutating func add(_ key: String, _ value: String) {
        addKey(key)
        text += JSONObjectWriter.quote(value)
    }

    mutating func add(_ key: String, _ value: Int) {
        addKey(key)
        text += String(value)
    }

    mutating func add(_ key: String, _ value: Bool) {
        addKey(key)
        text += value ? "true" : "false"
    }

    /// A price: whole numbers without a fraction (`-1`), others in Swift's shortest form (`9.99`).
    mutating func add(_ key: String, price value: Double) {
        addKey(key)
        if value == value.rounded(), abs(value) < 1e15 {
            text += String(Int(value))
        } else {
            text += String(value)
        }
    }

    /// A value that is already JSON text (a nested object).
    mutating func add(_ key: String, raw value: String) {
        addKey(key)
        text += value
    }

    /// The finished object.
    var result: String { text + "}" }

    private mutating func addKey(_ key: String) {
        if !isFirst { text += "," }
        isFirst = false
        text += JSONObjectWriter.quote(key) + ":"
    }

    /// A JSON string literal; non-ASCII stays as UTF-8, as Apple sends it.
    static func quote(_ value: String) -> String { JSONString.literal(value) }
}
