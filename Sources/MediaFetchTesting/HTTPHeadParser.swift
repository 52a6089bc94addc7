import MediaFetchCore

/// Parses a request line and header fields, rejecting anything malformed instead of guessing.
enum HTTPHeadParser {
    struct Head {
        var method: String
        var target: String
        var version: String
        var headers: HTTPHeaders
    }

    /// Why a head was refused: the status to answer with.
    struct Failure: Error {
        var status: Int
        var reason: String
    }

    /// Parses `bytes`, the head without its closing blank line.
    static func parse(_ bytes: ArraySlice<UInt8>) -> Result<Head, Failure> {
        var lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).map { line in
            line.last == UInt8(ascii: "\r") ? line.dropLast() : line
        }
        // The caller stops at the blank line, so a trailing empty piece can only come from the last line's LF.
        if lines.last?.isEmpty == true { lines.removeLast() }
        guard let requestLine = lines.first else { return .failure(Failure(status: 400, reason: "empty request")) }
        let parts = requestLine.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
            return .failure(Failure(status: 400, reason: "malformed request line"))
        }
        guard parts[0].allSatisfy(isTokenByte) else { return .failure(Failure(status: 400, reason: "bad method")) }
        guard parts[1].allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            return .failure(Failure(status: 400, reason: "bad request target"))
        }
        let version = String(decoding: parts[2], as: UTF8.self)
        guard version == "HTTP/1.1" || version == "HTTP/1.0" else {
            let looksLikeHTTP = version.hasPrefix("HTTP/") && version.count == 8
            return .failure(Failure(status: looksLikeHTTP ? 505 : 400, reason: "unsupported version \(version)"))
        }
        var target = String(decoding: parts[1], as: UTF8.self)
        if !target.hasPrefix("/") {
            // Absolute form (`GET http://host/path`), as proxies send it: keep the path and query.
            guard let stripped = stripAuthority(target) else {
                return .failure(Failure(status: 400, reason: "bad request target"))
            }
            target = stripped
        }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else {
                return .failure(Failure(status: 400, reason: "header line without a colon"))
            }
            let name = line[line.startIndex..<colon]
            // An empty name, whitespace before the colon or an obsolete folded line are all refused (RFC 9112 5).
            guard !name.isEmpty, name.allSatisfy(isTokenByte) else {
                return .failure(Failure(status: 400, reason: "bad header name"))
            }
            let value = line[line.index(after: colon)...].drop { $0 == 0x20 || $0 == 0x09 }
            let trimmed = value.reversed().drop { $0 == 0x20 || $0 == 0x09 }.reversed()
            guard !trimmed.contains(where: { $0 < 0x20 && $0 != 0x09 || $0 == 0x7F }) else {
                return .failure(Failure(status: 400, reason: "control character in a header value"))
            }
            headers.add(name: String(decoding: name, as: UTF8.self), value: String(decoding: trimmed, as: UTF8.self))
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        return .success(Head(method: method, target: target, version: version, headers: headers))
    }

    private static func stripAuthority(_ target: String) -> String? {
        let lower = target.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return nil }
        let afterScheme = target[target.index(target.range(of: "://")?.upperBound ?? target.endIndex, offsetBy: 0)...]
        guard let slash = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) else { return "/" }
        let rest = String(afterScheme[slash...])
        return rest.hasPrefix("/") ? rest : "/" + rest
    }

    /// RFC 9110 `tchar`.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
        }
    }
}
