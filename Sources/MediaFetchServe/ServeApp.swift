import Dispatch
import Foundation
import ITunesSource
import MediaFetchCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The routes of `mediafetch serve`, and the checks every request passes first: the Host header must be one of
/// the server's own names (DNS rebinding), `/api` needs the bearer token, a state-changing call needs a JSON
/// body and the server's own Origin, and bodies and query strings have limits. `Serve/openapi.json` in the
/// repository documents every route; a test holds the two together.
final class ServeApp: Sendable {
    static let maxBody = 64 * 1024
    static let maxQuery = 2048
    static let maxIDs = 200

    let queue: DownloadQueue
    let search: CatalogSearch
    let token: String
    let libraryRoot: URL?
    /// `host:port` values the Host header may carry (filled in once the port is known).
    private let allowedHosts = Mutex<Set<String>>([])

    init(queue: DownloadQueue, search: CatalogSearch, token: String, libraryRoot: URL?) {
        self.queue = queue
        self.search = search
        self.token = token
        self.libraryRoot = libraryRoot
    }

    func allow(hosts: [String], port: UInt16) {
        allowedHosts.withLock { allowed in
            for host in hosts { allowed.insert("\(host):\(port)".lowercased()) }
        }
    }

    // MARK: Routing

    func handle(_ request: HTTPServer.Request) -> HTTPServer.Response {
        guard let host = request.header("Host")?.lowercased(), allowedHosts.withLock({ $0.contains(host) }) else {
            return Self.error(
                403,
                "the Host header \(request.header("Host").map { "\"\($0)\"" } ?? "(none)") is not this "
                    + "server's address; open the URL mediafetch serve printed")
        }
        let queryLength = request.query.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 2 }
        guard queryLength <= Self.maxQuery else {
            return Self.error(414, "the query string is over \(Self.maxQuery) bytes")
        }
        let path = request.path
        if path == "/api" || path.hasPrefix("/api/") {
            return api(request, host: host)
        }
        if path.hasPrefix("/library/") {
            guard request.method == "GET" || request.method == "HEAD" else { return Self.notAllowed("GET, HEAD") }
            guard authorized(request) || cookieAuthorized(request) else { return unauthorized() }
            return library(String(path.dropFirst("/library/".count)), request)
        }
        guard let asset = PageAssets.files[path] else {
            return Self.error(404, "no such page: \(path)")
        }
        guard request.method == "GET" || request.method == "HEAD" else { return Self.notAllowed("GET, HEAD") }
        return HTTPServer.Response(
            status: 200,
            headers: Self.commonHeaders + [
                ("Content-Type", asset.type), ("Content-Security-Policy", PageAssets.policy),
            ],
            body: .bytes(Array(asset.text.utf8)))
    }

    private func api(_ request: HTTPServer.Request, host: String) -> HTTPServer.Response {
        guard authorized(request) else { return unauthorized() }
        // ["", "api", ...]
        let route = Array(
            request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init).dropFirst(2))
        let allowed: String
        switch (route.first, route.count) {
        case ("search", 1), ("events", 1): allowed = "GET"
        case ("downloads", 1): allowed = "GET, POST"
        case ("downloads", 3) where ["pause", "resume", "cancel"].contains(route[2]): allowed = "POST"
        case ("session", 1): allowed = "POST"
        default: return Self.error(404, "no such API route: \(request.method) \(request.path)")
        }
        // An undeclared method is refused before anything else is looked at.
        guard
            allowed.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == request.method })
        else { return Self.notAllowed(allowed) }
        var body: [String: Any] = [:]
        if request.method == "POST" {
            if let refusal = checkStateChange(request, host: host) { return refusal }
            switch Self.parseObject(request.body) {
            case .success(let object): body = object
            case .failure(let message): return Self.error(400, message)
            }
        }
        switch (route[0], request.method) {
        case ("search", _): return searchRoute(request)
        case ("events", _): return events()
        case ("downloads", "GET"): return Self.json(200, ["downloads": queue.downloads.map(Self.object)])
        case ("downloads", _) where route.count == 1: return addDownloads(body)
        case ("downloads", _): return control(route[1], route[2])
        default:
            // The audio element cannot send a bearer token: a cookie for /library only, strict same-site.
            return HTTPServer.Response(
                status: 204,
                headers: Self.commonHeaders + [
                    ("Set-Cookie", "mediafetch-token=\(token); Path=/library; HttpOnly; SameSite=Strict")
                ])
        }
    }

    // MARK: Checks

    private func authorized(_ request: HTTPServer.Request) -> Bool {
        // The scheme's name is case-insensitive (RFC 9110 section 11.1): `bearer` is `Bearer`.
        guard let value = request.header("Authorization"), value.utf8.count > 7,
            value.prefix(7).lowercased() == "bearer "
        else { return false }
        return Self.constantTimeEqual(String(value.dropFirst(7)), token)
    }

    private func cookieAuthorized(_ request: HTTPServer.Request) -> Bool {
        guard let cookies = request.header("Cookie") else { return false }
        for cookie in cookies.split(separator: ";") {
            let pair = cookie.trimmingCharacters(in: .whitespaces)
            if pair.hasPrefix("mediafetch-token="),
                Self.constantTimeEqual(String(pair.dropFirst("mediafetch-token=".count)), token)
            {
                return true
            }
        }
        return false
    }

    private func unauthorized() -> HTTPServer.Response {
        var response = Self.error(
            401,
            "missing or wrong access token: send Authorization: Bearer TOKEN (the token is in the URL "
                + "mediafetch serve printed, after #token=)")
        response.headers.append(("WWW-Authenticate", "Bearer"))
        return response
    }

    /// A state-changing call comes from this server's own page (its Origin), with a JSON body: a page of another
    /// site cannot send either without the browser asking first, and no CORS answer ever says yes.
    private func checkStateChange(_ request: HTTPServer.Request, host: String) -> HTTPServer.Response? {
        guard let origin = request.header("Origin")?.lowercased(), origin == "http://" + host else {
            return Self.error(403, "a state-changing call needs the Origin of this server (http://\(host))")
        }
        guard request.header("Content-Type")?.lowercased().hasPrefix("application/json") == true else {
            return Self.error(415, "the body must be JSON, sent as Content-Type: application/json")
        }
        guard !request.bodyTooLarge else { return Self.error(413, "the body is over \(Self.maxBody) bytes") }
        return nil
    }

    /// Compares without an early exit, so that the time taken does not tell how much of a guess was right.
    static func constantTimeEqual(_ given: String, _ expected: String) -> Bool {
        let (a, b) = (Array(given.utf8), Array(expected.utf8))
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in b.indices { difference |= (index < a.count ? a[index] : 0) ^ b[index] }
        return difference == 0
    }

    // MARK: Routes

    private func searchRoute(_ request: HTTPServer.Request) -> HTTPServer.Response {
        let parameters: CatalogSearch.Parameters
        switch CatalogSearch.Parameters.parse(request.query(_:)) {
        case .success(let parsed): parameters = parsed
        case .failure(let error): return Self.error(400, error.message)
        }
        let search = self.search
        let result = Self.blocking { await search.run(parameters) }
        switch result {
        case .success(let items):
            return Self.json(200, ["results": items.map(Self.result)])
        case .failure(let error) where error.rejected:
            return Self.error(400, "the catalog refused the search: \(error.message)")
        case .failure(let error):
            return Self.error(502, "the catalog search failed: \(error.message)")
        }
    }

    private func addDownloads(_ body: [String: Any]) -> HTTPServer.Response {
        guard let ids = body["ids"] as? [Any], !ids.isEmpty, ids.count <= Self.maxIDs else {
            return Self.error(400, "the body must be {\"ids\": [...]} with 1 to \(Self.maxIDs) ids from a search")
        }
        var items: [MediaItem] = []
        var seen: Set<String> = []
        for value in ids {
            guard let id = value as? String, !id.isEmpty, id.utf8.count <= 256 else {
                return Self.error(400, "every id must be a non-empty string (the \"id\" of a search result)")
            }
            // An id given twice is queued, and answered, once.
            guard seen.insert(id).inserted else { continue }
            guard let item = search.item(id) ?? queue.item(id) else {
                return Self.error(404, "unknown id \"\(id)\": search for it first, then queue the result's id")
            }
            guard item.previewURL != nil else {
                return Self.error(400, "\"\(item.title)\" [\(id)] has no preview to download")
            }
            items.append(item)
        }
        return Self.json(200, ["downloads": queue.add(items).map(Self.object)])
    }

    private func control(_ id: String, _ action: String) -> HTTPServer.Response {
        do {
            let download: Download
            switch action {
            case "pause": download = try queue.pause(id)
            case "resume": download = try queue.resume(id)
            default: download = try queue.cancel(id)
            }
            return Self.json(200, Self.object(download))
        } catch {
            return Self.error(error.code == .unknownItem ? 404 : 409, error.message)
        }
    }

    private func events() -> HTTPServer.Response {
        let stream = EventStream()
        stream.render = { changes in
            // `at` is the oldest change's time: the latency a watcher reads from it is the batch's worst.
            let at = changes.map(\.at).min() ?? 0
            return "event: downloads\ndata: {\"at\":\(Int64(at)),\"downloads\":["
                + changes.map { JSONText.download($0.download) }.joined(separator: ",") + "]}\n\n"
        }
        // Observed before the snapshot is taken: a change in between comes again as an event, never not at all.
        let observation = queue.observe { download in
            stream.send(download, at: (Date().timeIntervalSince1970 * 1000).rounded())
        }
        let snapshot = queue.downloads.map(JSONText.download).joined(separator: ",")
        stream.send(
            "retry: 1000\nevent: snapshot\ndata: {\"at\":\(Int64(Date().timeIntervalSince1970 * 1000)),"
                + "\"downloads\":[\(snapshot)]}\n\n")
        stream.cleanup = { observation.cancel() }
        return HTTPServer.Response(
            status: 200,
            headers: Self.commonHeaders + [("Content-Type", "text/event-stream"), ("X-Accel-Buffering", "no")],
            body: .stream(stream))
    }

    // MARK: The library

    /// A stored file under the sink's root, with Range. Every component is opened with O_NOFOLLOW from the root
    /// down, so neither `..` (decoded from `%2e%2e` too) nor a symbolic link leads out of it.
    private func library(_ relative: String, _ request: HTTPServer.Request) -> HTTPServer.Response {
        guard let root = libraryRoot else {
            return Self.error(404, "this server's sink is not a folder, so it has no library to serve")
        }
        let components = relative.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard !components.isEmpty,
            components.allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." && !$0.contains("\0") })
        else {
            return Self.error(404, "no such file in the library: \(relative)")
        }
        var folder = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard folder >= 0 else { return Self.error(404, "the library folder does not exist yet") }
        for component in components.dropLast() {
            let next = openat(folder, component, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            close(folder)
            guard next >= 0 else { return Self.error(404, "no such file in the library: \(relative)") }
            folder = next
        }
        let file = openat(folder, components[components.count - 1], O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        close(folder)
        var info = stat()
        guard file >= 0, fstat(file, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            if file >= 0 { close(file) }
            return Self.error(404, "no such file in the library: \(relative)")
        }
        let size = Int64(info.st_size)
        var headers =
            Self.commonHeaders + [
                ("Content-Type", Self.mediaType(relative)), ("Accept-Ranges", "bytes"),
            ]
        guard let range = request.header("Range") else {
            return HTTPServer.Response(
                status: 200, headers: headers, body: .file(descriptor: file, offset: 0, length: size))
        }
        guard let (start, end) = Self.byteRange(range, size: size) else {
            close(file)
            headers.append(("Content-Range", "bytes */\(size)"))
            return HTTPServer.Response(status: 416, headers: headers)
        }
        headers.append(("Content-Range", "bytes \(start)-\(end)/\(size)"))
        return HTTPServer.Response(
            status: 206, headers: headers, body: .file(descriptor: file, offset: start, length: end - start + 1))
    }

    /// `bytes=A-B`, `bytes=A-` or `bytes=-N` of a file of `size` bytes, as first and last byte; nil when it
    /// cannot be satisfied (or names several ranges).
    static func byteRange(_ header: String, size: Int64) -> (Int64, Int64)? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let (first, last) = (String(spec[..<dash]), String(spec[spec.index(after: dash)...]))
        if first.isEmpty {
            guard let count = Int64(last), count > 0, size > 0 else { return nil }
            return (max(0, size - count), size - 1)
        }
        guard let start = Int64(first), start >= 0, start < size else { return nil }
        if last.isEmpty { return (start, size - 1) }
        guard let end = Int64(last), end >= start else { return nil }
        return (start, min(end, size - 1))
    }

    static func mediaType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "m4a", "aac": "audio/mp4"
        case "mp3": "audio/mpeg"
        case "m4v", "mp4": "video/mp4"
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        default: "application/octet-stream"
        }
    }

    // MARK: JSON

    static let commonHeaders = [
        ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"), ("Referrer-Policy", "no-referrer"),
        ("X-Frame-Options", "DENY"),
    ]

    static func object(_ download: Download) -> [String: Any] {
        [
            "id": download.id, "title": download.title, "artist": download.artist ?? NSNull(),
            "status": download.status.rawValue, "receivedBytes": download.receivedBytes,
            "expectedBytes": download.expectedBytes ?? NSNull(), "location": download.location ?? NSNull(),
            "reason": download.reason ?? NSNull(),
        ]
    }

    static func result(_ item: MediaItem) -> [String: Any] {
        [
            "id": item.id, "kind": item.kind ?? NSNull(), "title": item.title, "artist": item.artist ?? NSNull(),
            "album": item.album ?? NSNull(),
            "duration": item.durationMillis.map { Double($0) / 1000 } ?? NSNull(),
            "previewUrl": item.previewURL?.absoluteString ?? NSNull(),
            "artworkUrl": item.artworkURL?.absoluteString ?? NSNull(),
            "downloadable": item.previewURL != nil,
        ]
    }

    static func encode(_ object: Any) -> [UInt8] {
        (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])).map(Array.init)
            ?? Array("{}".utf8)
    }

    static func json(_ status: Int, _ object: Any) -> HTTPServer.Response {
        HTTPServer.Response(
            status: status, headers: commonHeaders + [("Content-Type", "application/json")],
            body: .bytes(encode(object)))
    }

    static func error(_ status: Int, _ message: String) -> HTTPServer.Response {
        json(status, ["error": message])
    }

    static func notAllowed(_ allowed: String) -> HTTPServer.Response {
        var response = error(405, "method not allowed here; allowed: \(allowed)")
        response.headers.append(("Allow", allowed))
        return response
    }

    enum Parsed {
        case success([String: Any])
        case failure(String)
    }

    static func parseObject(_ body: [UInt8]) -> Parsed {
        guard let value = try? JSONSerialization.jsonObject(with: Data(body)) else {
            return .failure("the body is not valid JSON")
        }
        guard let object = value as? [String: Any] else { return .failure("the body must be a JSON object") }
        return .success(object)
    }

    /// Runs async work from a server thread (not one of the task pool's), which waits for it.
    static func blocking<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let result = Mutex<T?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        // Set before the signal.
        return result.withLock { $0 }!
    }
}
