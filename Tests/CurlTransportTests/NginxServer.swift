import Foundation
import MediaFetchTesting

#if canImport(Glibc)
    import Glibc
#endif

/// A throwaway nginx on a random loopback port, serving files the test writes into ``documentRoot``.
///
/// Everything nginx writes (pid, logs, temp files) stays in its own temp directory, so it runs as any user.
/// The access log records `$connection $connection_requests $status $request_uri` per request, for tests of
/// connection reuse.
///
/// Two more servers on their own ports, when asked for, share the document root:
/// * `tls`: https with a certificate from a throwaway ``TLSFixture`` authority, HTTP/2 offered; ``tlsLog``
///   records `$connection $server_protocol $msec $request_time $status $request_uri`.
/// * `forwardProxy`: a plain-http forward proxy to the main server; ``proxyLog`` records `$status $request`, so a
///   test sees the request line a client sent to a proxy (`GET http://host:port/path HTTP/1.1`).
final class NginxServer {
    let directory: URL
    let documentRoot: URL
    let accessLog: URL
    let tlsLog: URL
    let proxyLog: URL
    let port: Int
    /// Set when started with `tls`.
    let tls: TLSFixture?
    let tlsPort: Int?
    /// Set when started with `forwardProxy`.
    let proxyPort: Int?
    private let process: Process
    /// Held open for as long as the server should live; see ``init()``. Its write end is closed on exec: inherited
    /// by every child the test process starts after it (another test's nginx, when tests run in parallel), it kept
    /// the shell's `cat` from seeing its end, and each nginx's stop waited for the others' for ever.
    private let lifeline: Pipe = {
        let pipe = Pipe()
        _ = fcntl(pipe.fileHandleForWriting.fileDescriptor, F_SETFD, FD_CLOEXEC)
        return pipe
    }()

    var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }
    var httpsBaseURL: URL { URL(string: "https://127.0.0.1:\(tlsPort!)")! }
    var proxyURL: String { "http://127.0.0.1:\(proxyPort!)" }

    /// Starts nginx and returns once it accepts connections; runs `body`; stops nginx whatever happens.
    static func with<T>(
        tls: Bool = false, forwardProxy: Bool = false, _ body: (NginxServer) async throws -> T
    ) async throws -> T {
        let server = try await NginxServer(tls: tls, forwardProxy: forwardProxy)
        defer { server.stop() }
        return try await body(server)
    }

    private init(tls withTLS: Bool, forwardProxy: Bool) async throws {
        directory = FileManager.default.temporaryDirectory
            .appendingPathComponent("curl-nginx-\(UUID().uuidString)", isDirectory: true)
        documentRoot = directory.appendingPathComponent("www", isDirectory: true)
        accessLog = directory.appendingPathComponent("access.log")
        tlsLog = directory.appendingPathComponent("tls.log")
        proxyLog = directory.appendingPathComponent("proxy.log")
        for sub in ["www/files", "www/slow", "tmp"] {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        port = try Self.freePort()
        do {
            tls = withTLS ? try await TLSFixture(in: directory) : nil
        } catch {
            try? FileManager.default.removeItem(at: directory)
            throw error
        }
        tlsPort = withTLS ? try Self.freePort() : nil
        proxyPort = forwardProxy ? try Self.freePort() : nil
        let root = directory.path
        // nginx 1.22 turns HTTP/2 on in `listen`; the `http2 on;` directive only came in 1.25.1.
        let tlsServer =
            if let tls, let tlsPort {
                """
                server {
                    listen 127.0.0.1:\(tlsPort) ssl http2;
                    ssl_certificate \(tls.certificateFile.path);
                    ssl_certificate_key \(tls.keyFile.path);
                    access_log \(root)/tls.log protocol;
                    root \(root)/www;
                    location /slow/ { limit_rate 64k; }
                }
                """
            } else { "" }
        let proxyServer =
            if let proxyPort {
                """
                server {
                    listen 127.0.0.1:\(proxyPort);
                    access_log \(root)/proxy.log proxy;
                    location / { proxy_pass http://127.0.0.1:\(port)$request_uri; }
                }
                """
            } else { "" }
        let config = """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(root)/nginx.pid;
            error_log \(root)/error.log warn;
            events { worker_connections 1024; }
            http {
                log_format reuse '$connection $connection_requests $status $request_uri';
                log_format protocol '$connection $server_protocol $msec $request_time $status $request_uri';
                log_format proxy '$status $request';
                access_log \(root)/access.log reuse;
                client_body_temp_path \(root)/tmp/body;
                proxy_temp_path \(root)/tmp/proxy;
                fastcgi_temp_path \(root)/tmp/fastcgi;
                uwsgi_temp_path \(root)/tmp/uwsgi;
                scgi_temp_path \(root)/tmp/scgi;
                default_type application/octet-stream;
                types { application/json json; }
                keepalive_requests 100000;
                server {
                    listen 127.0.0.1:\(port);
                    root \(root)/www;
                    gzip on;
                    gzip_types application/json;
                    gzip_min_length 0;
                    location /slow/ { limit_rate 64k; }
                    location = /redirect-http { return 302 /files/a.bin; }
                    location = /redirect-file { return 302 file:///etc/passwd; }
                    location = /redirect-loop { return 302 /redirect-loop; }
                }
            \(tlsServer)
            \(proxyServer)
            }
            """
        let configFile = directory.appendingPathComponent("nginx.conf")
        try config.write(to: configFile, atomically: true, encoding: .utf8)
        // nginx runs under a small shell that kills it once its standard input ends: when this server stops,
        // and also when the test process dies without stopping it (a killed `swift test` left nginx running).
        // SIGKILL, not SIGTERM: with `master_process off` nginx keeps the signal mask it inherits, and the
        // test runner's threads block SIGTERM, so a polite stop would never arrive.
        let nginx = try RequiredProgram.nginx.locate()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "\"$0\" \"$@\" < /dev/null & server=$!; cat > /dev/null; kill -9 $server; wait", nginx.path,
            "-p", root, "-c", configFile.path, "-e", "\(root)/error.log",
        ]
        process.standardInput = lifeline
        try process.run()
        try waitUntilListening()
    }

    func stop() {
        try? lifeline.fileHandleForWriting.close()
        process.waitUntilExit()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Writes `data` at `path` under the document root and answers its URL.
    @discardableResult
    func serve(_ data: Data, at path: String) throws -> URL {
        let file = documentRoot.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
        return baseURL.appendingPathComponent(path)
    }

    /// The access log's lines, waiting (up to a deadline) until there are at least `count`: nginx writes a
    /// line when it finishes a request, which can be a moment after the client has the last byte.
    func accessLogLines(atLeast count: Int) throws -> [String] {
        try logLines(accessLog, atLeast: count)
    }

    /// A log's lines (``accessLog``, ``tlsLog`` or ``proxyLog``), waiting as ``accessLogLines(atLeast:)`` does.
    func logLines(_ log: URL, atLeast count: Int) throws -> [String] {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            let lines = text.split(separator: "\n").map(String.init)
            if lines.count >= count || ContinuousClock.now > deadline { return lines }
            usleep(5_000)
        }
    }

    private func waitUntilListening() throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            guard process.isRunning else { break }
            if [port, tlsPort, proxyPort].compactMap({ $0 }).allSatisfy(Self.canConnect) { return }
            usleep(10_000)
        }
        let log = (try? String(contentsOf: directory.appendingPathComponent("error.log"), encoding: .utf8)) ?? ""
        stop()
        throw ServerError("nginx did not start on port \(port): \(log)")
    }

    /// A port the kernel just handed out; nginx binds it a moment later.
    static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket failed") }
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else { throw ServerError("bind failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func canConnect(port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = loopback(port: port)
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
    }

    static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        return address
    }
}

struct ServerError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
