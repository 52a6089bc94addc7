import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback server that answers every request with the same raw bytes and then closes the connection:
/// for answers a well-behaved server never gives, such as a body shorter than its Content-Length.
///
/// `@unchecked Sendable`: the listening descriptor is written once in `init`; the accept thread only reads it.
final class RawHTTPServer: @unchecked Sendable {
    let port: Int
    private let listener: Int32
    private let response: Data
    private let done = Mutex(false)

    var url: URL { URL(string: "http://127.0.0.1:\(port)/raw.bin")! }

    static func with<T>(
        response: String, body: Data = Data(), _ run: (RawHTTPServer) async throws -> T
    )
        async throws -> T
    {
        let server = try RawHTTPServer(response: Data(response.utf8) + body)
        defer { server.stop() }
        return try await run(server)
    }

    private init(response: Data) throws {
        self.response = response
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ServerError("socket failed") }
        var address = NginxServer.loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(listener, socketAddress, length) == 0 && getsockname(listener, socketAddress, &length) == 0
            }
        }
        guard bound, listen(listener, 16) == 0 else {
            close(listener)
            throw ServerError("bind or listen failed")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread { [self] in serve() }.start()
    }

    private func stop() {
        done.withLock { $0 = true }
        // Wakes the thread blocked in accept(2); it sees `done` and closes the listener.
        shutdown(listener, Int32(SHUT_RDWR))
    }

    private func serve() {
        while !done.withLock({ $0 }) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { continue }
            readRequest(connection)
            response.withUnsafeBytes { bytes in
                guard let start = bytes.baseAddress else { return }
                var sent = 0
                while sent < bytes.count {
                    let count = send(connection, start + sent, bytes.count - sent, Int32(MSG_NOSIGNAL))
                    if count <= 0 { break }
                    sent += count
                }
            }
            close(connection)
        }
        close(listener)
    }

    /// Reads up to the blank line that ends a request's headers.
    private func readRequest(_ connection: Int32) {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !received.ends(with: [13, 10, 13, 10]) {
            let count = recv(connection, &buffer, buffer.count, 0)
            if count <= 0 { return }
            received += buffer[0..<count]
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
