import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// A real PostgreSQL (Debian's `postgresql`, version 15) in a throwaway cluster: `initdb` into a scratch folder,
/// then `pg_ctl start` on a free loopback port with its unix socket in the same folder, `fsync` off. The ledger
/// of a shared run is tested against it, never an imitation, so `FOR UPDATE SKIP LOCKED`, advisory locks and a
/// server restart behave as they do in production.
///
/// PostgreSQL refuses to run as root. Run as root (as CI is), the cluster belongs to the `postgres` user that
/// Debian's package creates (or `nobody` without it), and every server program runs as that user through
/// `setpriv`; the scratch folder is handed to that user.
///
/// ```swift
/// try await PostgreSQLServer.with { server in
///     // server.uri is postgresql://postgres@127.0.0.1:PORT/postgres
/// }
/// ```
///
/// ``stop(mode:)`` and ``start()`` stop and start the same cluster on the same port, for tests of a server that
/// goes away mid-run.
public final class PostgreSQLServer: Sendable {
    /// Where Debian 12 installs the server programs (they are not on `PATH`).
    public static let binFolder = "/usr/lib/postgresql/15/bin"
    public static let initdb = RequiredProgram("initdb", debianPackage: "postgresql", extraFolders: [binFolder])
    public static let pgCtl = RequiredProgram("pg_ctl", debianPackage: "postgresql", extraFolders: [binFolder])
    static let setpriv = RequiredProgram("setpriv", debianPackage: "util-linux", extraFolders: ["/usr/bin"])

    /// The cluster's superuser; it needs no password (`trust` authentication, loopback only).
    public static let user = "postgres"
    /// The database every cluster has.
    public static let database = "postgres"

    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The scratch folder: the cluster (`data`), the server log (`server.log`) and the unix socket.
    public let folder: URL
    /// A libpq URI for the cluster over TCP: `postgresql://postgres@127.0.0.1:PORT/postgres` (the listen address).
    public var uri: String { "postgresql://\(Self.user)@\(listenAddress):\(port)/\(Self.database)" }
    /// The same server over its unix socket (libpq's `host` query parameter naming the folder).
    public var socketURI: String { "postgresql://\(Self.user)@/\(Self.database)?host=\(folder.path)&port=\(port)" }

    private let pgCtlPath: String
    /// The unprivileged user the server programs run as when this process is root; nil otherwise.
    private let runAs: (name: String, uid: uid_t, gid: gid_t)?
    private let setprivPath: String?
    private let listenAddress: String

    /// Makes a cluster and starts it (about a second).
    /// - Parameter listenAddress: the address it listens on; 127.0.0.1 unless a test joins hosts by a network of
    ///   its own (network namespaces).
    /// - Throws: ``MissingProgram`` naming `initdb`/`pg_ctl` and the package that brings them; an error quoting
    ///   the server's log when the cluster cannot be made or started.
    ///   - trustedNetworks: networks (CIDR, `10.1.2.0/24`) whose clients may connect without a password, besides
    ///     loopback.
    public init(listenAddress: String = "127.0.0.1", trustedNetworks: [String] = []) throws {
        let initdb = try Self.initdb.locate()
        pgCtlPath = try Self.pgCtl.locate().path
        self.listenAddress = listenAddress
        if geteuid() == 0 {
            setprivPath = try Self.setpriv.locate().path
            runAs = try Self.unprivilegedUser()
        } else {
            setprivPath = nil
            runAs = nil
        }
        folder = URL(fileURLWithPath: "/tmp", isDirectory: true).appendingPathComponent(
            "mediafetch-pg-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let runAs {
            guard chown(folder.path, runAs.uid, runAs.gid) == 0 else {
                throw MockServerError("cannot hand \(folder.path) to \(runAs.name): errno \(errno)")
            }
        }
        port = try Self.freePort()
        do {
            try run(
                initdb.path,
                ["-D", dataFolder, "-U", Self.user, "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"],
                what: "initdb")
            if !trustedNetworks.isEmpty {
                let hba = URL(fileURLWithPath: dataFolder).appendingPathComponent("pg_hba.conf")
                let handle = try FileHandle(forWritingTo: hba)
                defer { try? handle.close() }
                try handle.seekToEnd()
                try handle.write(contentsOf: Data(trustedNetworks.map { "host all all \($0) trust\n" }.joined().utf8))
            }
            try start()
        } catch {
            removeFolder()
            throw error
        }
    }

    /// Runs `body` with a cluster of its own, stopped and removed however `body` ends.
    public static func with<T: Sendable>(
        listenAddress: String = "127.0.0.1", trustedNetworks: [String] = [], _ body: (PostgreSQLServer) async throws -> T
    ) async throws -> T {
        let server = try await offThePool {
            try PostgreSQLServer(listenAddress: listenAddress, trustedNetworks: trustedNetworks)
        }
        do {
            let result = try await body(server)
            await offThePool { server.shutDown() }
            return result
        } catch {
            await offThePool { server.shutDown() }
            throw error
        }
    }

    /// How ``stop(mode:)`` stops the server (`pg_ctl -m`).
    public struct StopMode: Sendable, Hashable {
        let name: String
        /// Waits for nothing: clients are disconnected, open transactions rolled back.
        public static let fast = StopMode(name: "fast")
        /// A crash: the server quits without a checkpoint and recovers from its WAL at the next start.
        public static let immediate = StopMode(name: "immediate")
    }

    /// Starts the (stopped) cluster on the same port and returns once it accepts connections. Blocking.
    /// - Throws: an error quoting the server's log when it does not come up.
    public func start() throws {
        let options =
            "-k \(folder.path) -c listen_addresses=\(listenAddress) -p \(port) -c fsync=off "
            + "-c max_connections=200"
        try run(
            pgCtlPath, ["-D", dataFolder, "-l", logPath, "-w", "-t", "60", "-o", options, "start"], what: "pg_ctl start")
    }

    /// Stops the server, keeping the cluster for a ``start()``. Blocking.
    public func stop(mode: StopMode = .fast) throws {
        try run(pgCtlPath, ["-D", dataFolder, "-m", mode.name, "-w", "-t", "60", "stop"], what: "pg_ctl stop")
    }

    /// Stops the server if it runs and removes the cluster. Safe to call more than once. Blocking.
    public func shutDown() {
        if FileManager.default.fileExists(atPath: dataFolder + "/postmaster.pid") {
            try? run(pgCtlPath, ["-D", dataFolder, "-m", "immediate", "-w", "stop"], what: "pg_ctl stop")
        }
        removeFolder()
    }

    deinit { shutDown() }

    /// The server's log so far, for a failing test's message.
    public func log() -> String {
        (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    }

    private var dataFolder: String { folder.appendingPathComponent("data").path }
    private var logPath: String { folder.appendingPathComponent("server.log").path }

    private func removeFolder() {
        try? FileManager.default.removeItem(at: folder)
    }

    /// Runs a server program (as the unprivileged user when this process is root) and waits for it, its output in a
    /// file of the scratch folder.
    ///
    /// Spawned and reaped here rather than by Foundation's `Process`: the server `pg_ctl start` leaves running inherits
    /// the descriptors `Process` watches for its child's end, so `waitUntilExit()` would wait as long as the server runs.
    private func run(_ program: String, _ arguments: [String], what: String) throws {
        var argv: [String]
        if let runAs, let setprivPath {
            argv = [setprivPath, "--reuid=\(runAs.uid)", "--regid=\(runAs.gid)", "--clear-groups", "--", program]
        } else {
            argv = [program]
        }
        argv += arguments
        let outputPath = folder.appendingPathComponent("\(what.replacingOccurrences(of: " ", with: "-")).out").path
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C.UTF-8"
        // env -C: the programs run in the scratch folder (root's working directory may be closed to their user).
        let status = try Self.spawnAndWait(
            ["/usr/bin/env", "-C", folder.path] + argv, environment: environment.map { "\($0.key)=\($0.value)" },
            output: outputPath)
        guard status == 0 else {
            let said = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw MockServerError(
                "\(what) failed (exit status \(status)): " + said.trimmingCharacters(in: .whitespacesAndNewlines)
                    + "\nserver log:\n" + log())
        }
    }

    /// `posix_spawn`s `argv`, its output into `output` and its input from `/dev/null`, and waits for it.
    /// - Returns: the exit status (128 + the signal when killed).
    private static func spawnAndWait(
        _ argv: [String], environment: [String], output: String
    ) throws -> Int32 {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup($0) } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid = pid_t()
        let code = posix_spawn(&pid, argv[0], &actions, nil, cArguments, cEnvironment)
        guard code == 0 else { throw MockServerError("cannot start \(argv[0]): \(String(cString: strerror(code)))") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw MockServerError("waiting for \(argv[0]) failed: errno \(errno)") }
        }
        let signal = status & 0x7f
        return signal == 0 ? (status >> 8) & 0xff : 128 + signal
    }

    /// The user a root process runs the server as: `postgres` (Debian's package makes it), else `nobody`.
    private static func unprivilegedUser() throws -> (name: String, uid: uid_t, gid: gid_t) {
        for name in ["postgres", "nobody"] {
            if let entry = getpwnam(name) { return (name, entry.pointee.pw_uid, entry.pointee.pw_gid) }
        }
        throw MockServerError(
            "PostgreSQL does not run as root and this machine has neither a postgres nor a nobody user; "
                + "`apt-get install postgresql` makes the postgres user")
    }

    /// A loopback port nothing listens on now.
    private static func freePort() throws -> Int {
        for _ in 0..<100 {
            let port = Int.random(in: 30_000...39_000)
            let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            guard socketFD >= 0 else { continue }
            defer { close(socketFD) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            if bound { return port }
        }
        throw MockServerError("no free loopback port for PostgreSQL")
    }

    /// Runs blocking work on a thread of its own, so that the task pool is never held up.
    public static func offThePool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }

    /// Runs blocking work on a thread of its own, so that the task pool is never held up.
    public static func offThePool(_ work: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { continuation in
            Thread {
                work()
                continuation.resume()
            }.start()
        }
    }
}
