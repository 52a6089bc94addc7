import Foundation

/// Builds iTunes Search API URLs with every value encoded the way the API reads it.
///
/// `URLQueryItem` leaves `+` alone and the API reads `+` as a space, so values are form-encoded by
/// hand: a space becomes `+`, and everything but ASCII letters, digits and `. - _ *` is
/// percent-encoded as UTF-8.
public enum ITunesQuery {
    /// `endpoint` + `/path?name=value&...`, keeping any path prefix the endpoint has (a mirror).
    public static func url(endpoint: URL, path: String, parameters: [(String, String)]) -> URL? {
        var base = endpoint.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        let query = parameters.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&")
        return URL(string: "\(base)/\(path)" + (query.isEmpty ? "" : "?\(query)"))
    }

    /// Form-encodes one name or value.
    public static func encode(_ value: String) -> String {
        var encoded = ""
        encoded.reserveCapacity(value.utf8.count)
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "-"),
                UInt8(ascii: "_"), UInt8(ascii: "*"):
                encoded.unicodeScalars.append(UnicodeScalar(byte))
            case UInt8(ascii: " "):
                encoded.append("+")
            default:
                encoded.append(String(format: "%%%02X", byte))
            }
        }
        return encoded
    }
}
