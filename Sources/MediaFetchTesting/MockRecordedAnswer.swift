import Foundation

/// Records captured from Apple's Search API, which a ``MockCatalogServer`` (and a ``ScriptedTransport`` made
/// from the same ``MockCatalog``) answers every `/search` of their `media` and `entity` with, whatever the term:
/// the kinds the generated catalog has no songs for (albums, artists, podcasts and their episodes, films, TV
/// episodes, music videos, audiobooks, ebooks, software), as Apple sends them.
///
/// ```swift
/// let body = try Data(contentsOf: fixtures.appending(path: "podcast.json"))
/// let catalog = MockCatalog(songs: MockCatalog.standard.songs,
///                           recorded: [try MockRecordedAnswer(media: "podcast", body: body)])
/// let server = try MockCatalogServer(catalog: catalog)
/// ```
///
/// Each record is sent as captured, but for its media URLs (`previewUrl`, `episodeUrl`, `artworkUrl…`), which
/// move onto the server at `/recorded/<original host><original path>` so that a run fetches them from loopback.
/// The server serves those as generated files: artwork in any `<N>x<N>bb` size, a preview of a plausible size
/// for its type, and a whole podcast episode (a `previewUrl` that is its `episodeUrl`) as long as its
/// `trackTimeMillis` at 128 kbit/s. Paging (`limit`, `offset`) applies as to any answer; `term`, `attribute` and
/// `explicit` are not looked at.
public struct MockRecordedAnswer: Sendable {
    /// The `media` a search must ask for; a search without one asks for `music`.
    public var media: String
    /// The `entity` a search must ask for; nil matches only a search that names none.
    public var entity: String?
    /// Each record's JSON text, as it was captured.
    public var records: [String]

    public init(media: String, entity: String? = nil, records: [String]) {
        self.media = media
        self.entity = entity
        self.records = records
    }

    /// The records of a captured answer, `{"resultCount": N, "results": [...]}`, each kept as its own text.
    /// - Throws: ``MockServerError`` when `body` is not such an object.
    public init(media: String, entity: String? = nil, body: Data) throws {
        guard let records = Self.splitResults(Array(body)) else {
            throw MockServerError("a recorded answer must be {\"resultCount\": N, \"results\": [...]}")
        }
        self.init(media: media, entity: entity, records: records)
    }

    /// The keys whose values are media URLs the server takes over.
    static func isMediaURLKey(_ key: some Collection<UInt8>) -> Bool {
        if key.elementsEqual("previewUrl".utf8) || key.elementsEqual("episodeUrl".utf8) { return true }
        let prefix = "artworkUrl".utf8
        return key.starts(with: prefix) && key.count > prefix.count
            && key.dropFirst(prefix.count).allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// Where the server serves `original` (a record's `previewUrl`, `episodeUrl` or artwork at any size):
    /// `/recorded/<host><path>`, nil for a URL without a host.
    public static func servedPath(of original: URL) -> String? {
        guard let host = original.host, !host.isEmpty else { return nil }
        return "/recorded/" + host + original.path
    }

    /// `record` with every media URL's `scheme://` replaced by `base/recorded/`, so that its host becomes the
    /// first part of a path on the server; every other byte stays as it was.
    static func rewrite(_ record: String, base: String) -> String {
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), colon = UInt8(ascii: ":")
        let bytes = Array(record.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 256)
        // The last string read, and whether a colon followed it: then it was a key, and the next value is its.
        var lastString: ArraySlice<UInt8> = []
        var key: ArraySlice<UInt8>?
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            guard byte == quote else {
                if byte == colon {
                    key = lastString
                } else if ![UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r")]
                    .contains(byte)
                {
                    key = nil
                }
                output.append(byte)
                index += 1
                continue
            }
            var end = index + 1
            while end < bytes.count, bytes[end] != quote { end += bytes[end] == backslash ? 2 : 1 }
            guard end < bytes.count else {
                output += bytes[index...]
                break
            }
            let content = bytes[(index + 1)..<end]
            if let key, isMediaURLKey(key), let afterScheme = Self.afterScheme(content) {
                output.append(quote)
                output += Array((base + "/recorded/").utf8) + content[afterScheme...]
                output.append(quote)
            } else {
                output += bytes[index...end]
            }
            lastString = content
            key = nil
            index = end + 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Where the host starts in an `http://` or `https://` URL's bytes.
    private static func afterScheme(_ url: ArraySlice<UInt8>) -> Int? {
        for scheme in ["http://", "https://"] where url.starts(with: scheme.utf8) {
            return url.startIndex + scheme.utf8.count
        }
        return nil
    }

    /// The text of each element of the top-level `"results"` array of `body`, or nil when there is none.
    static func splitResults(_ body: [UInt8]) -> [String]? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let results = object["results"] as? [Any]
        else { return nil }
        // The array is found by its key at depth 1 of the object; strings are skipped, so that braces inside
        // them do not count.
        var depth = 0
        var inString = false
        var escaped = false
        var lastString: Range<Int>?
        var stringStart = 0
        var arrayDepth: Int?
        var elementStart: Int?
        var elements: [String] = []
        for (index, byte) in body.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                    lastString = stringStart..<index
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""):
                inString = true
                stringStart = index + 1
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                if arrayDepth == nil, byte == UInt8(ascii: "["), depth == 2,
                    let key = lastString, body[key].elementsEqual("results".utf8)
                {
                    arrayDepth = depth
                } else if let arrayDepth, depth == arrayDepth + 1 {
                    elementStart = index
                }
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if let arrayDepth, depth == arrayDepth + 1, let start = elementStart {
                    elements.append(String(decoding: body[start...index], as: UTF8.self))
                    elementStart = nil
                }
                if arrayDepth == depth { arrayDepth = nil }
                depth -= 1
            default:
                break
            }
        }
        return elements.count == results.count ? elements : nil
    }
}
