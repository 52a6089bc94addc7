import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP proxy on loopback in front of a real server that resets the connection (RST both ways) once, when a
/// connection has carried `resetAfter` bytes toward the server: an upload cut off mid-body, as a flaky network or
/// a restarting load balancer does it.
final class ResettingProxy: Sendable {
    private struct State {
        var armed = true
        var resets = 0
        var sockets: Set<Int32> = []
        var stopping = false
    }

    let port: UInt16
    private let listener: Int32
    private let upstream: UInt16
    private let resetAfter: Int64
    private let state = Mutex(State())
    private let threads = DispatchGroup()

    init(upstreamPort: UInt16, resetAfter: Int64) throws {
        upstream = upstreamPort
        self.resetAfter = resetAfter
        (listener, port) = try Self.listenOnLoopback("proxy")
        threads.enter()
        Thread { [self] in
            acceptLoop()
            threads.leave()
        }.start()
    }

    /// How many connections were reset.
    var resets: Int { state.withLock { $0.resets } }

    /// Arms the proxy again: the next connection past `resetAfter` bytes is reset too.
    func arm() { state.withLock { $0.armed = true } }

    func stop() {
        state.withLock {
            $0.stopping = true
            shutdown(listener, Int32(SHUT_RDWR))
            for socket in $0.sockets { shutdown(socket, Int32(SHUT_RDWR)) }
        }
        threads.wait()
        close(listener)
    }

    /// A socket listening on a free port of 127.0.0.1, and that port.
    static func listenOnLoopback(_ what: String) throws -> (Int32, UInt16) {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = loopback(0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard socketFD >= 0, bound == 0, listen(socketFD, 64) == 0 else { throw SeaweedError("\(what): cannot listen") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        return (socketFD, UInt16(bigEndian: address.sin_port))
    }

    private static func loopback(_ port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = Self.loopback(upstream)
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            let accepted = state.withLock { state -> Bool in
                guard !state.stopping, connected else { return false }
                state.sockets.formUnion([client, server])
                return true
            }
            guard accepted else {
                close(client)
                close(server)
                continue
            }
            let pair = Pair(client: client, server: server)
            threads.enter()
            threads.enter()
            Thread { [self] in
                pump(from: client, to: server, towardServer: true)
                finish(pair)
                threads.leave()
            }.start()
            Thread { [self] in
                pump(from: server, to: client, towardServer: false)
                finish(pair)
                threads.leave()
            }.start()
        }
    }

    /// One proxied connection: both sockets are closed when both of its pumps have ended.
    private final class Pair: Sendable {
        let client: Int32
        let server: Int32
        let ended = Atomic(0)

        init(client: Int32, server: Int32) {
            self.client = client
            self.server = server
        }
    }

    private func finish(_ pair: Pair) {
        guard pair.ended.add(1, ordering: .relaxed).newValue == 2 else { return }
        state.withLock {
            $0.sockets.subtract([pair.client, pair.server])
            close(pair.client)
            close(pair.server)
        }
    }

    /// Copies bytes one way until either side ends; the client-to-server pump resets both once, when armed and
    /// past the limit.
    private func pump(from source: Int32, to destination: Int32, towardServer: Bool) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var carried: Int64 = 0
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(source, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { break }
            if towardServer, carried + Int64(count) >= resetAfter, takeTheReset() {
                var option = linger(l_onoff: 1, l_linger: 0)
                for socket in [source, destination] {
                    setsockopt(socket, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
                    shutdown(socket, Int32(SHUT_RDWR))
                }
                return
            }
            carried += Int64(count)
            let delivered = buffer.withUnsafeBytes { bytes -> Bool in
                guard let base = bytes.baseAddress else { return false }
                var sent = 0
                while sent < count {
                    let done = send(destination, base + sent, count - sent, Int32(MSG_NOSIGNAL))
                    guard done > 0 else { return false }
                    sent += done
                }
                return true
            }
            guard delivered else { break }
        }
        shutdown(destination, Int32(SHUT_WR))
    }

    private func takeTheReset() -> Bool {
        state.withLock { state in
            guard state.armed else { return false }
            state.armed = false
            state.resets += 1
            return true
        }
    }
}

/// A port on loopback that takes connections (the kernel completes them) and never answers: a store behind a
/// wrong port, a proxy that hangs.
final class SilentListener: Sendable {
    let port: UInt16
    private let listener: Int32

    init() throws {
        (listener, port) = try ResettingProxy.listenOnLoopback("silent listener")
    }

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    deinit { close(listener) }
}
