import Foundation
import MediaFetchCore

/// One line of a plugin's output, read as a JSON object, with typed access to its fields that turns every
/// mismatch into an ``ExecPluginError`` naming the plugin, the line and what was expected.
struct PluginMessage: Sendable {
    let role: String
    let plugin: String
    /// 1-based, counting every line the plugin wrote.
    let line: Int
    let fields: [String: JSONValue]
    /// The `type` field.
    let type: String

    /// Reads `bytes` (one line without its newline).
    /// - Parameter expected: what may come here, for the message when the line is not a JSON object with a type.
    init(_ bytes: [UInt8], line: Int, role: String, plugin: String, expected: String) throws(ExecPluginError) {
        self.role = role
        self.plugin = plugin
        self.line = line
        let value = try? JSONDecoder().decode(JSONValue.self, from: Data(bytes))
        guard case .object(let fields) = value else {
            let text = String(decoding: bytes, as: UTF8.self)
            throw ExecPluginError(
                .badOutput, role: role, plugin: plugin, line: line,
                "expected a JSON object on one line (\(expected)), got \(Quoted(text))")
        }
        guard case .string(let type) = fields["type"] else {
            throw ExecPluginError(
                .badOutput, role: role, plugin: plugin, line: line,
                "expected a \"type\" string field (\(expected))"
                    + (fields["type"].map { ", got \(Self.describe($0))" } ?? ""))
        }
        self.fields = fields
        self.type = type
    }

    /// An error about this line.
    func failure(_ message: String) -> ExecPluginError {
        ExecPluginError(.badOutput, role: role, plugin: plugin, line: line, message)
    }

    /// A string field; nil when absent or null.
    func string(_ key: String) throws(ExecPluginError) -> String? {
        switch fields[key] {
        case nil, .null?: return nil
        case .string(let value)?: return value
        case let other?:
            throw failure("expected \"\(key)\" to be a string in the \(type) message, got \(Self.describe(other))")
        }
    }

    /// A string field that must be there and not be empty.
    func requiredString(_ key: String) throws(ExecPluginError) -> String {
        guard let value = try string(key) else {
            throw failure("the \(type) message has no \"\(key)\"; expected a non-empty string")
        }
        guard !value.isEmpty else { throw failure("expected \"\(key)\" of the \(type) message to be non-empty") }
        return value
    }

    /// A whole number of at least 0; nil when absent or null.
    func integer(_ key: String) throws(ExecPluginError) -> Int? {
        switch fields[key] {
        case nil, .null?: return nil
        case .number(let value)? where value >= 0 && value <= 9_007_199_254_740_992 && value == value.rounded():
            return Int(value)
        case let other?:
            throw failure(
                "expected \"\(key)\" to be a whole number of at least 0 in the \(type) message, got "
                    + Self.describe(other))
        }
    }

    func bool(_ key: String) throws(ExecPluginError) -> Bool {
        guard case .bool(let value) = fields[key] else {
            throw failure(
                "expected \"\(key)\" to be true or false in the \(type) message"
                    + (fields[key].map { ", got \(Self.describe($0))" } ?? ", and it is missing"))
        }
        return value
    }

    /// An absolute http or https URL; nil when absent or null.
    func url(_ key: String) throws(ExecPluginError) -> URL? {
        guard let text = try string(key) else { return nil }
        guard let url = URL(string: text), url.isFetchable else {
            throw failure("expected \"\(key)\" to be an absolute http or https URL, got \(Quoted(text))")
        }
        return url
    }

    /// An ISO 8601 date or date and time (`2005-01-01`, `2005-01-01T12:00:00Z`); nil when absent or null.
    func date(_ key: String) throws(ExecPluginError) -> Date? {
        guard let text = try string(key) else { return nil }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        if let date = try? Date(text, strategy: Date.ISO8601FormatStyle().year().month().day()) { return date }
        throw failure(
            "expected \"\(key)\" to be an ISO 8601 date such as 2005-01-01 or 2005-01-01T12:00:00Z, got \(Quoted(text))"
        )
    }

    /// The item an `item` message describes; its fields, unknown ones included, become the item's raw record.
    func item() throws(ExecPluginError) -> MediaItem {
        var raw = fields
        raw["type"] = nil
        return MediaItem(
            id: try itemID(),
            kind: try string("kind"),
            title: try requiredString("title"),
            artist: try string("artist"),
            album: try string("album"),
            trackNumber: try integer("trackNumber"),
            discNumber: try integer("discNumber"),
            durationMillis: try integer("durationMillis"),
            releaseDate: try date("releaseDate"),
            genre: try string("genre"),
            previewURL: try url("previewUrl"),
            artworkURL: try url("artworkUrl"),
            raw: .object(raw))
    }

    /// An item's `id`: a non-empty string, or a whole number taken as its digits (catalogs' ids often are numbers,
    /// and a plugin passing one on should not have to know that mediafetch keys items by text).
    func itemID() throws(ExecPluginError) -> String {
        if case .number = fields["id"], let number = try integer("id") { return String(number) }
        return try requiredString("id")
    }

    /// The item a `skip` or `fail` message is about: its id, and its title when given (the id otherwise).
    func itemRef() throws(ExecPluginError) -> ItemRef {
        let id = try itemID()
        return ItemRef(id: id, title: try string("title") ?? id, artist: try string("artist"))
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool(let value): String(value)
        case .number(let value): value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
        case .string(let value): "the string \(Quoted(value))"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
