import MediaFetchCore

/// One request the mock server received, as it arrived.
public struct MockRequest: Sendable {
    /// One `name=value` pair of the query, decoded as a server does (`+` is a space, then percent-decoding).
    public struct QueryItem: Sendable, Hashable {
        public var name: String
        public var value: String

        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The method exactly as sent, e.g. `GET`.
    public var method: String
    /// The request target exactly as sent, path and query.
    public var target: String
    /// The path, percent-decoded.
    public var path: String
    /// The query string exactly as received (after `?`, still encoded); nil when the target had no `?`.
    public var rawQuery: String?
    /// The decoded query pairs, in order.
    public var queryItems: [QueryItem]
    /// The header fields; lookups ignore case.
    public var headers: HTTPHeaders
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// Which accepted connection carried the request, counting from 1 in accept order.
    public var connection: Int
    /// The request's position on its connection, counting from 1; above 1 means the connection was reused.
    public var sequenceOnConnection: Int
    /// For an upload (PUT or POST) read whole: how many body bytes arrived; nil for other requests.
    public var uploadedBytes: Int64?
    /// For an upload read whole: the body's SHA-256, lowercase hex.
    public var uploadedSHA256: String?

    public init(
        method: String,
        target: String,
        headers: HTTPHeaders = [:],
        version: String = "HTTP/1.1",
        connection: Int = 0,
        sequenceOnConnection: Int = 1
    ) {
        self.method = method
        self.target = target
        self.headers = headers
        self.version = version
        self.connection = connection
        self.sequenceOnConnection = sequenceOnConnection
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        path = MockRequest.percentDecode(String(parts.first ?? ""), plusIsSpace: false)
        rawQuery = parts.count > 1 ? String(parts[1]) : nil
        queryItems = rawQuery.map(MockRequest.decodeQuery) ?? []
    }

    /// The first value of the query parameter `name`.
    public func query(_ name: String) -> String? {
        queryItems.first { $0.name == name }?.value
    }

    /// Splits and decodes a query string. Lenient like most servers: a `%` not followed by two hex digits stays
    /// literal, and bytes that are not UTF-8 become U+FFFD.
    static func decodeQuery(_ query: String) -> [QueryItem] {
        query.split(separator: "&", omittingEmptySubsequences: true).map { pair in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = percentDecode(String(parts[0]), plusIsSpace: true)
            let value = parts.count > 1 ? percentDecode(String(parts[1]), plusIsSpace: true) : ""
            return QueryItem(name: name, value: value)
        }
    }

    static func percentDecode(_ text: String, plusIsSpace: Bool) -> String {
        let input = Array(text.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == UInt8(ascii: "%"), index + 2 < input.count,
                let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
                continue
            }
            output.append(plusIsSpace && byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
            index += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
