import Foundation

/// `manifest.json`: `{"format": 1, "items": [{"item": {...}, "files": [{...}]}]}`, items in plan order.
///
/// Keys are sorted so the same collection always gives the same bytes; dates are ISO 8601 in UTC;
/// `item` is the ``MediaItem`` as the source decoded it (its `raw` record included), `files` are
/// ``CollectedFile``s (asset, path, size, sha256, source).
public enum CollectionManifest {
    /// The manifest layout's version, bumped when a key changes meaning.
    public static let formatVersion = 1

    struct Document: Encodable {
        var format: Int
        var items: [CollectedItem]
    }

    /// The manifest's bytes.
    public static func render(_ items: [CollectedItem]) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        var data = try encoder.encode(Document(format: formatVersion, items: items))
        data.append(UInt8(ascii: "\n"))
        return data
    }
}
