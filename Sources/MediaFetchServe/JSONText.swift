import MediaFetchCore

/// JSON written by hand for what the event stream sends most (a download, many times a second): a fraction of
/// JSONSerialization's cost, with the same keys and escaping rules (RFC 8259).
enum JSONText {
    static func download(_ download: Download) -> String {
        var text = "{\"artist\":" + optional(download.artist)
        text += ",\"expectedBytes\":" + (download.expectedBytes.map { String($0) } ?? "null")
        text += ",\"id\":" + string(download.id)
        text += ",\"location\":" + optional(download.location)
        text += ",\"reason\":" + optional(download.reason)
        text += ",\"receivedBytes\":" + String(download.receivedBytes)
        text += ",\"status\":" + string(download.status.rawValue)
        text += ",\"title\":" + string(download.title) + "}"
        return text
    }

    static func optional(_ value: String?) -> String { value.map(string) ?? "null" }

    static func string(_ value: String) -> String { JSONString.literal(value) }
}
