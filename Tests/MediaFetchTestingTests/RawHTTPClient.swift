import Foundation
import Glibc
import MediaFetchCore

/// A blocking HTTP/1.1 client on one raw socket, so tests control exactly which bytes go on which connection
/// (URLSession pools connections and follows redirects on its own).
final class RawHTTPClient {
    struct Response {
        var status: Int
        var headers: HTTPHeaders
        var body: [UInt8]

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// How a connection ended when read to its end.
    enum Ending: Equatable {
        case closed
        case reset
        case timedOut
        case otherError(Int32)
    }

    struct ClientError: Error, CustomStringConvertible {
        var description: String
    }

    private let socket: Int32
    private var inbox: [UInt8] = []

    /// Connects to 127.0.0.1:`port`; reads give up after `timeout` seconds so a broken server fails a test
    /// instead of hanging it.
    init(port: UInt16, timeout: Int = 10) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { throw ClientError(description: "socket failed") }
        var time = timeval(tv_sec: timeout, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            close(socket)
            throw ClientError(description: "connect failed: errno \(errno)")
        }
    }

    deinit {
        close(socket)
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { throw ClientError(description: "send failed: errno \(errno)") }
            offset += count
        }
    }

    /// Sends a GET (or `method`) for `target` with extra header lines.
    func request(
        _ target: String, method: String = "GET", headers: [String] = [], version: String = "HTTP/1.1"
    ) throws -> Response {
        var text = "\(method) \(target) \(version)\r\nHost: 127.0.0.1\r\n"
        for line in headers { text += line + "\r\n" }
        try send(text + "\r\n")
        return try readResponse(isHead: method == "HEAD")
    }

    /// Reads one response; the body is read by `Content-Length` (none for HEAD, 204, 304).
    func readResponse(isHead: Bool = false) throws -> Response {
        let (status, headers) = try readHead()
        guard !isHead, status != 204, status != 304 else { return Response(status: status, headers: headers, body: []) }
        guard let length = headers["Content-Length"].flatMap(Int.init) else {
            throw ClientError(description: "response without Content-Length")
        }
        while inbox.count < length {
            guard try receive() else { throw ClientError(description: "body ended after \(inbox.count) of \(length)") }
        }
        let body = Array(inbox[0..<length])
        inbox.removeFirst(length)
        return Response(status: status, headers: headers, body: body)
    }

    /// Reads a response head only, leaving the body to ``readToEnd()``.
    func readHead() throws -> (status: Int, headers: HTTPHeaders) {
        while true {
            if let range = inbox.firstRange(of: Array("\r\n\r\n".utf8)) {
                let head = String(decoding: inbox[0..<range.lowerBound], as: UTF8.self)
                inbox.removeFirst(range.upperBound)
                let lines = head.components(separatedBy: "\r\n")
                let statusParts = lines[0].split(separator: " ")
                guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
                    throw ClientError(description: "bad status line \(lines[0])")
                }
                var headers = HTTPHeaders()
                for line in lines.dropFirst() {
                    guard let colon = line.firstIndex(of: ":") else { continue }
                    headers.add(
                        name: String(line[..<colon]),
                        value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                    )
                }
                return (status, headers)
            }
            guard try receive() else { throw ClientError(description: "connection ended before a response head") }
        }
    }

    /// Reads until the connection ends: what arrived (after anything already buffered) and how it ended.
    func readToEnd() -> (bytes: [UInt8], ending: Ending) {
        var bytes = inbox
        inbox.removeAll()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                bytes += buffer[0..<count]
                continue
            }
            if count == 0 { return (bytes, .closed) }
            let code = errno
            if code == EINTR { continue }
            if code == ECONNRESET { return (bytes, .reset) }
            if code == EAGAIN || code == EWOULDBLOCK { return (bytes, .timedOut) }
            return (bytes, .otherError(code))
        }
    }

    /// Whether the server closed the connection (reads end of stream) without sending anything more.
    func isClosedByPeer() -> Bool {
        let (bytes, ending) = readToEnd()
        return bytes.isEmpty && ending == .closed
    }

    private func receive() throws -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                inbox += buffer[0..<count]
                return true
            }
            if count == 0 { return false }
            if errno == EINTR { continue }
            throw ClientError(description: "recv failed: errno \(errno)")
        }
    }
}

/// Decodes a search or lookup answer for assertions.
struct SearchAnswer: Decodable {
    struct Record: Decodable {
        var wrapperType: String?
        var kind: String?
        var trackId: Int?
        var collectionId: Int?
        var artistId: Int?
        var trackName: String?
        var previewUrl: String?
    }

    var resultCount: Int
    var results: [Record]

    init(_ body: [UInt8]) throws {
        self = try JSONDecoder().decode(SearchAnswer.self, from: Data(body))
    }
}

/// A query string encoded as the iTunes API expects: spaces as `+`, everything but unreserved characters
/// percent-encoded (so `+`, `&`, `=` and `#` in a term survive).
func searchQuery(_ pairs: [(String, String)]) -> String {
    let allowed = CharacterSet(charactersIn: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._* ")
    return pairs.map { name, value in
        let encoded = value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
        return name + "=" + encoded.replacingOccurrences(of: " ", with: "+")
    }.joined(separator: "&")
}
