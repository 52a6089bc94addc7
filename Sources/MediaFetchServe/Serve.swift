import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// `mediafetch serve`: a local web app and JSON API over the same core as a batch run (transport, sink, ledger,
/// retries, resume), with a ``DownloadQueue`` that the page feeds.
public enum Serve {
    /// What the command line decides beyond the config.
    public struct Options: Sendable {
        /// The address to listen on: 127.0.0.1 unless the user says otherwise.
        public var listen: String
        /// 0 picks a free port.
        public var port: UInt16
        /// The access token every `/api` call must carry; made at random when nil.
        public var token: String?
        /// The iTunes API's base URL.
        public var endpoint: URL
        /// Searches per minute at most (0: unpaced).
        public var requestsPerMinute: Int

        public init(
            listen: String = "127.0.0.1", port: UInt16 = 0, token: String? = nil,
            endpoint: URL = URL(string: "https://itunes.apple.com")!, requestsPerMinute: Int = 20
        ) {
            self.listen = listen
            self.port = port
            self.token = token
            self.endpoint = endpoint
            self.requestsPerMinute = requestsPerMinute
        }
    }

    /// Whether `address` is a loopback address, where a server may listen without a token of the user's.
    public static func isLoopback(_ address: String) -> Bool {
        address == "127.0.0.1" || address == "::1" || address.hasPrefix("127.")
    }

    /// Whether `address` is written as an IPv4 or IPv6 address, which is what the server binds.
    static func isIPAddress(_ address: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, address, &v4) == 1 || inet_pton(AF_INET6, address, &v6) == 1
    }

    /// A random token: 32 bytes from the system's generator, as hex.
    public static func makeToken() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
    }

    /// Serves until the calling task is cancelled: opens the state directory's queue (as it was left), starts
    /// the HTTP server, hands `ready` the URL to open (the token in its fragment), and runs the queue.
    /// - Returns: the queue run's summary (interrupted, once cancelled).
    /// - Throws: ``ServeError`` (a token that is missing or too short for a non-loopback address, an address that
    ///   cannot be bound), and what ``Runner/run(queue:events:)`` and ``DownloadQueue`` throw before the run.
    public static func run(
        spec: PipelineSpec, registry: PluginRegistry, options: Options,
        ready: @escaping @Sendable (URL) -> Void
    ) async throws -> RunSummary {
        if !isIPAddress(options.listen) {
            // A name (localhost) is refused before it is taken for a non-loopback address.
            throw ServeError("--listen \(options.listen) is not an IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)")
        }
        if !isLoopback(options.listen) && options.token == nil {
            throw ServeError(
                "--listen \(options.listen) makes the server reachable from other machines: give it --token T "
                    + "(at least 16 characters) as well")
        }
        let token = options.token ?? makeToken()
        guard token.utf8.count >= 16, token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ";") })
        else {
            throw ServeError("--token must be at least 16 printable characters, without spaces or semicolons")
        }
        if let shared = spec.ledger {
            // The queue, what a restart shows, lives beside the SQLite ledger in the state folder; a shared ledger
            // is for batch workers. Saying so beats a queue that silently records somewhere else.
            let place = shared.location.map { "\($0.file):\($0.line): " } ?? ""
            throw ServeError(
                "\(place)ledger: \(shared.redacted) is a shared ledger for `mediafetch run` workers; serve keeps its "
                    + "queue and its ledger in the state folder (\(spec.stateDirectory.path)). Remove `ledger:` from "
                    + "the config serve reads, or give serve a config of its own")
        }
        let queue = try DownloadQueue(stateDirectory: spec.stateDirectory, sourceName: spec.source.name)
        guard let transportFactory = registry.transport(named: spec.transport.name) else {
            throw ServeError("the config names a transport this build does not have: \(spec.transport.name)")
        }
        let searchTransport = try transportFactory.make(
            spec.transport.options, PluginContext(stateDirectory: spec.stateDirectory))
        let root =
            spec.sink.name == "directory"
            ? (spec.sink.options.path("path") ?? spec.sink.options.string("path")).map {
                URL(fileURLWithPath: $0, isDirectory: true)
            } : nil
        let app = ServeApp(
            queue: queue,
            search: CatalogSearch(
                endpoint: options.endpoint, transport: searchTransport, requestsPerMinute: options.requestsPerMinute),
            token: token, libraryRoot: root)
        let server = try HTTPServer(address: options.listen, port: options.port, maxBody: ServeApp.maxBody) {
            app.handle($0)
        }
        let port = server.port
        app.allow(hosts: hostNames(listen: options.listen), port: port)
        let shown = options.listen.contains(":") ? "[\(options.listen)]" : options.listen
        let host = shown == "0.0.0.0" || shown == "[::]" ? "127.0.0.1" : shown
        let encoded = token.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? token
        guard let url = URL(string: "http://\(host):\(port)/#token=\(encoded)") else {
            server.stop()
            throw ServeError("cannot form the URL of \(host):\(port)")
        }
        ready(url)
        let runner = Runner(spec: spec, registry: registry, options: .init(progressInterval: .milliseconds(200)))
        let summary: RunSummary
        do {
            summary = try await runner.run(queue: queue)
        } catch {
            server.stop()
            await searchTransport.shutdown()
            throw error
        }
        server.stop()
        await searchTransport.shutdown()
        return summary
    }

    /// The names the Host header may carry: the loopback names, the address listened on and, for a wildcard
    /// address, the machine's name and its interfaces' addresses.
    static func hostNames(listen: String) -> [String] {
        var names = ["127.0.0.1", "localhost", "[::1]"]
        names.append(listen.contains(":") ? "[\(listen)]" : listen)
        guard listen == "0.0.0.0" || listen == "::" else { return names }
        var buffer = [CChar](repeating: 0, count: 256)
        if gethostname(&buffer, buffer.count) == 0 {
            names.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0 else { return names }
        defer { freeifaddrs(list) }
        var cursor = list
        while let entry = cursor {
            defer { cursor = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr else { continue }
            var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            if address.pointee.sa_family == sa_family_t(AF_INET) {
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { v4 in
                    var raw = v4.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &raw, &text, socklen_t(text.count))
                }
                names.append(String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
            } else if address.pointee.sa_family == sa_family_t(AF_INET6) {
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { v6 in
                    var raw = v6.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &raw, &text, socklen_t(text.count))
                }
                let name = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                names.append("[\(name)]")
            }
        }
        return names
    }
}
