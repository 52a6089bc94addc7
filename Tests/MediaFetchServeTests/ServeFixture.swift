import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchServe
import MediaFetchTesting
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `mediafetch serve` in this process, against the mock catalog on loopback, with a folder sink in a scratch
/// folder; requests go over real sockets from threads of their own (never the task pool's).
final class ServeFixture: Sendable {
    let catalog: MockCatalogServer
    let scratch: URL
    let spec: PipelineSpec
    let token = "test-token-0123456789abcdef"
    private let url = Mutex<URL?>(nil)
    private let task = Mutex<Task<RunSummary, any Error>?>(nil)

    init(scratch existing: URL? = nil, catalog: MockCatalogServer? = nil) throws {
        self.catalog = try catalog ?? MockCatalogServer()
        scratch =
            existing ?? FileManager.default.temporaryDirectory.appendingPathComponent("serve-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        spec = try ConfigLoader.load(
            text: """
                source:
                  {use: itunes, term: unused, endpoint: "\(self.catalog.baseURL.absoluteString)", requests-per-minute: 0}
                transport: {use: curl, concurrency: 4}
                sink: {use: directory, path: library, layout: "{artist}/{title}.{ext}"}
                state: state
                """, path: "serve.yaml", baseDirectory: scratch, registry: BundledPlugins.registry)
    }

    var library: URL { scratch.appendingPathComponent("library") }
    var port: Int { url.withLock { $0?.port } ?? 0 }
    var host: String { "127.0.0.1:\(port)" }
    var origin: String { "http://\(host)" }

    /// Starts serving and waits (with a generous bound) for the URL.
    func start() async throws {
        let options = Serve.Options(
            port: 0, token: token, endpoint: catalog.baseURL, requestsPerMinute: 0)
        let spec = self.spec
        let started = Task {
            try await Serve.run(spec: spec, registry: BundledPlugins.registry, options: options) { url in
                self.url.withLock { $0 = url }
            }
        }
        task.withLock { $0 = started }
        let deadline = ContinuousClock.now + .seconds(60)
        while url.withLock({ $0 }) == nil, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        guard url.withLock({ $0 }) != nil else { throw ServeError("serve did not start within 60 s") }
    }

    /// Stops serving, as Ctrl-C does.
    func stop() async {
        let running = task.withLock { $0 }
        running?.cancel()
        _ = try? await running?.value
        url.withLock { $0 = nil }
    }

    var printedURL: URL? { url.withLock { $0 } }

    // MARK: Requests

    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]

        var json: Any? { try? JSONSerialization.jsonObject(with: Data(body)) }
        var object: [String: Any] { json as? [String: Any] ?? [:] }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// One request with the token, Host and (for a POST) Origin and Content-Type a page would send; `headers`
    /// replace them (an empty value leaves a header out).
    func request(
        _ method: String, _ target: String, body: String? = nil, headers: [String: String] = [:]
    ) async -> Response {
        var all = ["Host": host, "Authorization": "Bearer \(token)"]
        if method == "POST" {
            all["Origin"] = origin
            all["Content-Type"] = "application/json"
        }
        for (name, value) in headers { all[name] = value }
        var text = "\(method) \(target) HTTP/1.1\r\n"
        for (name, value) in all where !value.isEmpty { text += "\(name): \(value)\r\n" }
        let payload = Array((body ?? "").utf8)
        if body != nil || method == "POST" { text += "Content-Length: \(payload.count)\r\n" }
        text += "Connection: close\r\n\r\n"
        let bytes = Array(text.utf8) + payload
        let port = self.port
        return await Self.offThePool { Self.exchange(port: port, bytes, until: nil) }
    }

    /// Opens `/api/events` and reads until `done` holds for what arrived (or 60 s pass).
    func events(until done: @escaping @Sendable (String) -> Bool) async -> String {
        let text = "GET /api/events HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(token)\r\n\r\n"
        let port = self.port
        let response = await Self.offThePool {
            Self.exchange(port: port, Array(text.utf8)) { done(String(decoding: $0, as: UTF8.self)) }
        }
        return response.text
    }

    static func offThePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: body()) }
        }
    }

    /// Sends `request` and reads the answer to the end (or until `until` says enough), on the calling thread.
    static func exchange(port: Int, _ request: [UInt8], until: ((ArraySlice<UInt8>) -> Bool)?) -> Response {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return Response(status: 0, headers: [:], body: []) }
        defer { close(socket) }
        var timeout = timeval(tv_sec: 60, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { return Response(status: 0, headers: [:], body: []) }
        _ = request.withUnsafeBytes { send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            if count <= 0 { break }
            received.append(contentsOf: buffer[0..<count])
            if let until, let split = headEnd(received), until(received[split...]) { break }
        }
        return parse(received)
    }

    static func headEnd(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4)
        where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index + 4
        }
        return nil
    }

    static func parse(_ bytes: [UInt8]) -> Response {
        guard let split = headEnd(bytes) else { return Response(status: 0, headers: [:], body: bytes) }
        let head = String(decoding: bytes[0..<split], as: UTF8.self).components(separatedBy: "\r\n")
        let status = Int(head.first?.split(separator: " ").dropFirst().first ?? "") ?? 0
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(
                in: .whitespaces)
        }
        var body = Array(bytes[split...])
        if headers["transfer-encoding"]?.lowercased() == "chunked" { body = dechunk(body) }
        return Response(status: status, headers: headers, body: body)
    }

    static func dechunk(_ bytes: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var index = 0
        while index < bytes.count {
            guard let lineEnd = (index..<(bytes.count - 1)).first(where: { bytes[$0] == 13 && bytes[$0 + 1] == 10 })
            else { break }
            let sizeText = String(decoding: bytes[index..<lineEnd], as: UTF8.self).split(separator: ";").first ?? ""
            guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size > 0 else { break }
            let start = lineEnd + 2
            result.append(contentsOf: bytes[start..<min(bytes.count, start + size)])
            index = start + size + 2
        }
        return result
    }

    /// Searches the mock catalog through the API and answers the results.
    func search(_ term: String, limit: Int = 5) async -> [[String: Any]] {
        let encoded = term.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? term
        return (await request("GET", "/api/search?term=\(encoded)&limit=\(limit)")).object["results"]
            as? [[String: Any]] ?? []
    }

    func downloads() async -> [[String: Any]] {
        (await request("GET", "/api/downloads")).object["downloads"] as? [[String: Any]] ?? []
    }

    /// Waits (generous bound) until the download `id` satisfies `condition`; answers it as it then was.
    func waitFor(
        _ id: String, atMost limit: Duration = .seconds(120), _ condition: ([String: Any]) -> Bool
    ) async -> [String: Any]? {
        let deadline = ContinuousClock.now + limit
        var last: [String: Any]?
        while ContinuousClock.now < deadline {
            last = await downloads().first { $0["id"] as? String == id }
            if let last, condition(last) { return last }
            try? await Task.sleep(for: .milliseconds(25))
        }
        return last
    }
}
