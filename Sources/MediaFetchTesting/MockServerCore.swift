import Dispatch
import Foundation
import Glibc
import MediaFetchCore
import Synchronization

/// Everything the server's threads share. Separate from ``MockCatalogServer`` so that the threads keep only
/// this alive: the public object can then be released, and its `deinit` stops the server.
final class MockServerCore: Sendable {
    let catalog: MockCatalog
    let api: MockITunesAPI
    let port: UInt16
    let baseURL: URL

    private let listener: Int32
    /// A pipe written once on stop and never read: every thread waiting in `poll` on its read end wakes up,
    /// which makes delays and stalls end promptly when the server stops.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    /// Entered per connection thread; `stop()` waits for it to drain.
    private let connectionThreads = DispatchGroup()
    /// Left once the server has fully stopped.
    private let stoppedGroup = DispatchGroup()
    private let state = Mutex(State())
    /// Body bytes handed to the kernel since start or the last reset (see ``MockCatalogServer/bytesServed``).
    private let bodyBytesServed = Atomic<Int64>(0)

    private struct State: Sendable {
        var requests: [MockRequest] = []
        var connectionsAccepted = 0
        var files: [String: MockFile] = [:]
        var hook: (@Sendable (MockRequest) -> MockFault?)?
        /// Open connection sockets, so that `stop()` can shut them down. A socket is closed only while the lock
        /// is held and after leaving this set, so its number cannot be reused under `stop()`'s feet.
        var openSockets: Set<Int32> = []
        var stopping = false
        var acceptThread: pthread_t?
    }

    /// Header blocks larger than this get 431: a client cannot make the server buffer without bound.
    static let headerLimit = 16 << 10

    init(catalog: MockCatalog, port requestedPort: UInt16, address host: String = "127.0.0.1") throws {
        self.catalog = catalog
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else { throw MockServerError.system("cannot create a socket", errno: errno) }
        var one: Int32 = 1
        setsockopt(socketFD, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = requestedPort.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            close(socketFD)
            throw MockServerError("not an IPv4 address: \(host)")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(socketFD, 1024) == 0 else {
            let code = errno
            close(socketFD)
            throw MockServerError.system("cannot bind \(host):\(requestedPort)", errno: code)
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socketFD, $0, &length) }
        }
        guard named == 0 else {
            let code = errno
            close(socketFD)
            throw MockServerError.system("cannot read the bound port", errno: code)
        }
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else {
            let code = errno
            close(socketFD)
            throw MockServerError.system("cannot create a pipe", errno: code)
        }
        // accept4 and pipe2 are GNU extensions Swift's Glibc module does not show; set close-on-exec by hand.
        _ = fcntl(pipeFDs[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(pipeFDs[1], F_SETFD, FD_CLOEXEC)
        listener = socketFD
        wakeRead = pipeFDs[0]
        wakeWrite = pipeFDs[1]
        port = UInt16(bigEndian: address.sin_port)
        guard let url = URL(string: "http://\(host):\(port)") else {
            throw MockServerError("cannot form the base URL for port \(port)")
        }
        baseURL = url
        api = MockITunesAPI(catalog: catalog, baseURL: url)
        stoppedGroup.enter()
        guard let thread = PosixThread.spawn(stackSize: 256 << 10, detached: false, { [self] in acceptLoop() }) else {
            closeAll()
            throw MockServerError("cannot start the accept thread")
        }
        state.withLock { $0.acceptThread = thread }
    }

    // MARK: - Log and configuration

    var requests: [MockRequest] { state.withLock { $0.requests } }
    var connectionsAccepted: Int { state.withLock { $0.connectionsAccepted } }

    var bytesServed: Int64 { bodyBytesServed.load(ordering: .relaxed) }

    func resetLog() {
        state.withLock {
            $0.requests.removeAll()
            $0.connectionsAccepted = 0
        }
        bodyBytesServed.store(0, ordering: .relaxed)
    }

    /// Counts body bytes a connection is sending.
    func served(_ count: Int) {
        if count > 0 { bodyBytesServed.add(Int64(count), ordering: .relaxed) }
    }

    func setFaultHook(_ hook: (@Sendable (MockRequest) -> MockFault?)?) {
        state.withLock { $0.hook = hook }
    }

    func addFile(path: String, file: MockFile) {
        state.withLock { $0.files[path] = file }
    }

    func removeFile(path: String) {
        _ = state.withLock { $0.files.removeValue(forKey: path) }
    }

    /// Asks the hook what to do wrong with `request` without logging it: an upload is logged once its body is in.
    func fault(for request: MockRequest) -> MockFault? {
        state.withLock { $0.hook }?(request)
    }

    /// Adds `request` to the log.
    func log(_ request: MockRequest) {
        state.withLock { $0.requests.append(request) }
    }

    /// Records `request` and asks the hook what to do wrong with it. The hook runs outside the lock, so that
    /// it may itself look at the log.
    func record(_ request: MockRequest) -> MockFault? {
        let hook = state.withLock {
            $0.requests.append(request)
            return $0.hook
        }
        return hook?(request)
    }

    // MARK: - Routing

    /// What `request` asks for, before faults and ranges.
    func resolve(_ request: MockRequest) -> MockRoute {
        if !["/search", "/lookup"].contains(request.path), let file = state.withLock({ $0.files[request.path] }) {
            return .file(file)
        }
        return Self.resolve(request, api: api)
    }

    /// What `request` asks for from the catalog alone (no added files): shared with ``ScriptedTransport``.
    static func resolve(_ request: MockRequest, api: MockITunesAPI) -> MockRoute {
        switch request.path {
        case "/search":
            let answer = api.search(request)
            return .api(status: answer.status, body: answer.body)
        case "/lookup":
            let answer = api.lookup(request)
            return .api(status: answer.status, body: answer.body)
        default:
            break
        }
        let catalog = api.catalog
        if let song = catalog.song(previewPath: request.path) {
            return .file(MockFile(content: catalog.previewContent(for: song), contentType: "audio/x-m4a"))
        }
        if let file = catalog.recordedFile(path: request.path) {
            return .file(file)
        }
        if let (collectionId, size) = parseArtworkPath(request.path),
            catalog.firstSong(collectionId: collectionId) != nil
        {
            let content = MockCatalog.artworkContent(collectionId: collectionId, size: size)
            return .file(MockFile(content: content, contentType: "image/jpeg"))
        }
        return .notFound
    }

    /// The file a path would serve, for tests' expectations.
    func file(at path: String) -> MockFile? {
        if case .file(let file) = resolve(MockRequest(method: "GET", target: path)) { return file }
        return nil
    }

    /// `/image/thumb/<collectionId>/<N>x<N>bb.jpg` with 1 ≤ N ≤ 10000.
    static func parseArtworkPath(_ path: String) -> (collectionId: Int, size: Int)? {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "image", parts[2] == "thumb",
            let collectionId = Int(parts[3]), parts[4].hasSuffix("bb.jpg")
        else { return nil }
        let sizes = parts[4].dropLast("bb.jpg".count).split(separator: "x", omittingEmptySubsequences: false)
        guard sizes.count == 2, sizes[0] == sizes[1], sizes[0].allSatisfy(\.isASCII), let size = Int(sizes[0]),
            (1...10_000).contains(size)
        else { return nil }
        return (collectionId, size)
    }

    // MARK: - Threads and sockets

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                let code = errno
                if state.withLock({ $0.stopping }) { return }
                if code == EINTR || code == ECONNABORTED { continue }
                // Out of descriptors or memory: back off instead of spinning, and keep serving the open ones.
                if waitForStop(seconds: 0.05) { return }
                continue
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var one: Int32 = 1
            // Small answers go out at once; without this, keep-alive exchanges meet delayed-ACK stalls.
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let number: Int? = state.withLock {
                if $0.stopping { return nil }
                $0.connectionsAccepted += 1
                $0.openSockets.insert(client)
                return $0.connectionsAccepted
            }
            guard let number else {
                close(client)
                return
            }
            connectionThreads.enter()
            let started = PosixThread.spawn(detached: true) { [self] in
                MockConnection(core: self, socket: client, number: number).run()
                connectionThreads.leave()
            }
            if started == nil {
                closeSocket(client, reset: false)
                connectionThreads.leave()
            }
        }
    }

    /// Closes a connection socket; with `reset`, the peer sees RST instead of FIN.
    func closeSocket(_ socket: Int32, reset: Bool) {
        state.withLock {
            $0.openSockets.remove(socket)
            if reset {
                var option = linger(l_onoff: 1, l_linger: 0)
                setsockopt(socket, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
            }
            close(socket)
        }
    }

    /// Waits up to `seconds`, ending early when the server stops.
    /// - Returns: true when the server is stopping.
    func waitForStop(seconds: Double) -> Bool {
        let deadline = DispatchTime.now().uptimeNanoseconds + UInt64(max(0, seconds) * 1e9)
        while true {
            let now = DispatchTime.now().uptimeNanoseconds
            let remaining = deadline > now ? Int32(min(Double(deadline - now) / 1e6, 60_000).rounded(.up)) : 0
            var descriptor = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
            let result = poll(&descriptor, 1, remaining)
            if result > 0 { return true }
            if result < 0 && errno == EINTR { continue }
            if DispatchTime.now().uptimeNanoseconds >= deadline { return false }
        }
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Stops accepting, cuts every connection, and returns once every thread has ended. Safe to call many times
    /// and from many threads; not from a fault hook (that thread would wait for itself).
    func stop() {
        let first = state.withLock {
            if $0.stopping { return false }
            $0.stopping = true
            // shutdown, not close: it wakes threads blocked in accept/recv/send while the numbers stay taken.
            shutdown(listener, Int32(SHUT_RDWR))
            for socket in $0.openSockets { shutdown(socket, Int32(SHUT_RDWR)) }
            return true
        }
        guard first else {
            stoppedGroup.wait()
            return
        }
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
        if let thread = state.withLock({ $0.acceptThread }) { pthread_join(thread, nil) }
        connectionThreads.wait()
        closeAll()
        stoppedGroup.leave()
    }

    /// Blocks until ``stop()`` has finished.
    func waitUntilStopped() {
        stoppedGroup.wait()
    }

    private func closeAll() {
        close(listener)
        close(wakeRead)
        close(wakeWrite)
    }
}
