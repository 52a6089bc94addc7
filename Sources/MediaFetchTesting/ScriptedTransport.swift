import Foundation
import MediaFetchCore
import Synchronization

/// A ``Transport`` that answers from closures instead of the network, for tests that swap the transport.
///
/// `send` returns whatever the send closure builds. `download` asks the download closure for the resource
/// (``File``) and then behaves as the `Transport` contract says a real transport does against a server with
/// ranges: with `resumeFrom > 0` and a matching (or no) validator it appends the rest after the kept bytes
/// (206); with a stale validator it rewrites the whole file and sets `restarted` (200); a status other than 200
/// throws ``TransportError/Code/httpStatus(_:)`` and leaves the destination alone. The body is written in
/// pieces, never held whole, so a 512 MiB file costs no memory; cancellation is seen between pieces.
///
/// A ``File`` can carry a ``MockFault`` to script what goes wrong: a redirect (followed up to `maxRedirects`,
/// only to http and https), a truncated body, a reset connection, a stall (longer than `idleTimeout`, it ends
/// with ``TransportError/Code/timedOut``), a server that ignores ranges or changed its ETag.
///
/// ```swift
/// let transport = ScriptedTransport(
///     send: { request in HTTPResponse(status: 200, headers: [:], url: request.url, body: Data("{}".utf8)) },
///     download: { _ in ScriptedTransport.File(bytes: Array(repeating: 7, count: 1000), etag: "\"v1\"") }
/// )
/// ```
///
/// ``init(catalog:baseURL:maxConcurrentTransfers:)`` answers like ``MockCatalogServer`` without sockets, and
/// ``init(answeringFor:settings:)`` answers for a running server in-process: its files, its fault hook and its
/// request log, which is how this transport passes ``TransportContract`` itself.
public final class ScriptedTransport: Transport {
    /// The resource a download closure describes: what a server would have for the URL.
    public struct File: Sendable {
        /// 200 serves the file; anything else is the status the download fails with.
        public var status: Int
        /// The strong ETag, quoted, or nil.
        public var etag: String?
        public var lastModified: String?
        /// Extra response headers.
        public var headers: HTTPHeaders
        /// When set, only this many body bytes arrive and the download throws `truncated` (the bytes stay).
        public var truncateAfter: Int?
        /// When true, a resume always gets the whole file again, as from a server without range support.
        public var ignoresRange: Bool
        /// What goes wrong with this answer, scripted as for ``MockCatalogServer``; nil for nothing.
        public var fault: MockFault?
        fileprivate var content: MockContent

        /// The file's bytes, read whole: for small scripted files and expectations.
        public var bytes: [UInt8] { content.bytes(in: 0..<content.count) }

        public init(
            status: Int = 200,
            bytes: [UInt8] = [],
            etag: String? = nil,
            lastModified: String? = nil,
            headers: HTTPHeaders = [:],
            truncateAfter: Int? = nil,
            ignoresRange: Bool = false,
            fault: MockFault? = nil
        ) {
            self.init(
                status: status, content: MockContent(bytes: bytes), etag: etag, lastModified: lastModified,
                headers: headers, truncateAfter: truncateAfter, ignoresRange: ignoresRange, fault: fault)
        }

        /// A file of `size` bytes generated from `seed` (the bytes
        /// ``MockCatalogServer/addFile(path:size:seed:contentType:)``
        /// serves), never held in memory.
        public init(size: Int64, seed: UInt64, etag: String? = nil, fault: MockFault? = nil) {
            let content = MockContent(size: size, seed: seed)
            self.init(status: 200, content: content, etag: etag ?? content.etag, fault: fault)
        }

        fileprivate init(
            status: Int, content: MockContent, etag: String?, lastModified: String? = nil, headers: HTTPHeaders = [:],
            truncateAfter: Int? = nil, ignoresRange: Bool = false, fault: MockFault? = nil
        ) {
            self.status = status
            self.content = content
            self.etag = etag
            self.lastModified = lastModified
            self.headers = headers
            self.truncateAfter = truncateAfter
            self.ignoresRange = ignoresRange
            self.fault = fault
        }
    }

    /// One call the transport received.
    public enum Call: Sendable {
        case send(HTTPRequest)
        case download(DownloadRequest)
        case upload(UploadRequest)

        /// The URL the call asked for.
        public var url: URL {
            switch self {
            case .send(let request): request.url
            case .download(let request): request.url
            case .upload(let request): request.url
            }
        }
    }

    /// An upload's body as the transport read it, piece by piece: its length and SHA-256.
    public struct ReceivedBody: Sendable, Hashable {
        public var bytes: Int64
        /// Lowercase hex.
        public var sha256: String

        public init(bytes: Int64, sha256: String) {
            self.bytes = bytes
            self.sha256 = sha256
        }
    }

    public typealias SendHandler = @Sendable (HTTPRequest) throws -> HTTPResponse
    public typealias DownloadHandler = @Sendable (DownloadRequest) throws -> File
    /// Answers an upload once its body was read whole.
    public typealias UploadHandler = @Sendable (UploadRequest, ReceivedBody) throws -> HTTPResponse

    public let maxConcurrentTransfers: Int
    /// How long a scripted stall may last before the download fails with ``TransportError/Code/timedOut``.
    public let idleTimeout: Duration
    /// Redirects followed at most.
    public let maxRedirects: Int
    private let sendHandler: SendHandler
    private let downloadHandler: DownloadHandler
    private let uploadHandler: UploadHandler
    /// What ``upload(_:progress:)`` does wrong for a request before or while reading its body.
    private let uploadFault: @Sendable (UploadRequest) -> MockFault?
    private let calls = Mutex<[Call]>([])

    /// - Parameters:
    ///   - send: answers `send`; the default answers 404 with an empty body.
    ///   - download: describes the resource a download gets; the default is a 404. A redirect (a file whose
    ///     ``File/fault`` is ``MockFault/redirect(status:location:)``) calls it again with the new URL.
    ///   - upload: answers an upload once its body was read (in pieces, never whole); the default answers as
    ///     ``MockUpload`` describes: 200 with the body's length and SHA-256.
    ///   - uploadFault: what goes wrong with an upload while its body is read: ``MockFault/reset(afterBytes:)``
    ///     throws a lost connection there, ``MockFault/stall(afterBytes:seconds:)`` waits (cancellation ends it,
    ///     and a stall past `idleTimeout` times out). Nothing by default.
    public init(
        maxConcurrentTransfers: Int = 4,
        idleTimeout: Duration = .seconds(30),
        maxRedirects: Int = 10,
        send: @escaping SendHandler = { HTTPResponse(status: 404, headers: [:], url: $0.url, body: Data()) },
        download: @escaping DownloadHandler = { _ in File(status: 404) },
        upload: @escaping UploadHandler = { request, body in ScriptedTransport.receivedAnswer(request, body) },
        uploadFault: @escaping @Sendable (UploadRequest) -> MockFault? = { _ in nil }
    ) {
        self.maxConcurrentTransfers = max(1, maxConcurrentTransfers)
        self.idleTimeout = idleTimeout
        self.maxRedirects = max(0, maxRedirects)
        sendHandler = send
        downloadHandler = download
        uploadHandler = upload
        self.uploadFault = uploadFault
    }

    /// The mock server's answer to an upload (``MockUpload``): 200 with the body's length and SHA-256.
    public static func receivedAnswer(_ request: UploadRequest, _ body: ReceivedBody) -> HTTPResponse {
        let answer = MockUpload.answer(bytes: body.bytes, sha256: body.sha256)
        var headers = HTTPHeaders()
        for (name, value) in answer.headers { headers.set(name, value) }
        return HTTPResponse(status: 200, headers: headers, url: request.url, body: Data(answer.body))
    }

    /// A transport that answers searches, lookups, previews and artwork from `catalog`, exactly as a
    /// ``MockCatalogServer`` at `baseURL` would (records point at `baseURL`; the host of a request is ignored).
    public convenience init(catalog: MockCatalog = .standard, baseURL: URL, maxConcurrentTransfers: Int = 4) {
        let api = MockITunesAPI(catalog: catalog, baseURL: baseURL)
        self.init(
            maxConcurrentTransfers: maxConcurrentTransfers,
            send: { request in
                let mock = MockRequest(method: request.method.rawValue, target: Self.target(of: request.url))
                return Self.response(to: request, route: MockServerCore.resolve(mock, api: api))
            },
            download: { request in
                let mock = MockRequest(method: "GET", target: Self.target(of: request.url))
                return Self.file(for: MockServerCore.resolve(mock, api: api), fault: nil)
            }
        )
    }

    /// A transport that answers for `server` without its sockets: from its catalog and added files, with its
    /// fault hook applied and every request written to its log (``MockCatalogServer/requests``), as if it had
    /// come over a connection.
    public convenience init(answeringFor server: MockCatalogServer, settings: TransportContract.Settings) {
        self.init(
            maxConcurrentTransfers: settings.concurrency, idleTimeout: settings.idleTimeout,
            maxRedirects: settings.maxRedirects,
            send: { request in
                let mock = MockRequest(
                    method: request.method.rawValue, target: Self.target(of: request.url), headers: request.headers)
                let fault = server.record(mock)
                if case .respond(let status, let headers, let body) = fault {
                    var fields = HTTPHeaders()
                    for (name, value) in headers { fields.set(name, value) }
                    return HTTPResponse(status: status, headers: fields, url: request.url, body: Data(body))
                }
                return Self.response(to: request, route: server.resolve(mock))
            },
            download: { request in
                var headers = HTTPHeaders()
                if request.resumeFrom > 0 {
                    headers.set("Range", "bytes=\(request.resumeFrom)-")
                    headers.set("If-Range", request.validator?.ifRangeValue)
                }
                let mock = MockRequest(method: "GET", target: Self.target(of: request.url), headers: headers)
                let fault = server.record(mock)
                return Self.file(for: server.resolve(mock), fault: fault)
            },
            upload: { request, body in
                var mock = Self.mockRequest(for: request)
                mock.uploadedBytes = body.bytes
                mock.uploadedSHA256 = body.sha256
                server.core.log(mock)
                if case .respond(let status, let headers, let answer) = server.core.fault(for: mock) {
                    var fields = HTTPHeaders()
                    for (name, value) in headers { fields.set(name, value) }
                    return HTTPResponse(status: status, headers: fields, url: request.url, body: Data(answer))
                }
                return Self.receivedAnswer(request, body)
            },
            uploadFault: { request in server.core.fault(for: Self.mockRequest(for: request)) }
        )
    }

    /// An upload as the mock server's log shows one, before its body.
    private static func mockRequest(for request: UploadRequest) -> MockRequest {
        var headers = request.headers
        headers.set("Content-Length", String(request.body.length))
        return MockRequest(method: request.method.rawValue, target: target(of: request.url), headers: headers)
    }

    /// Every call so far, in the order they arrived.
    public var requests: [Call] { calls.withLock { $0 } }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let error = TransportError.checkScheme(request.url) { throw error }
        calls.withLock { $0.append(.send(request)) }
        if Task.isCancelled { throw TransportError(.cancelled, url: request.url) }
        let response = try sendHandler(request)
        if response.body.count > request.maxBodyBytes {
            throw TransportError(.bodyTooLarge(limit: Int64(request.maxBodyBytes)), url: request.url)
        }
        return response
    }

    public func download(
        _ request: DownloadRequest,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) async throws -> DownloadResult {
        var current = request
        var redirects = 0
        while true {
            if let error = TransportError.checkScheme(current.url) { throw error }
            calls.withLock { $0.append(.download(current)) }
            if Task.isCancelled { throw TransportError(.cancelled, url: current.url) }
            let file = try downloadHandler(current)
            let plan = FaultPlan(file.fault)
            if case .redirect(_, let location) = plan.replacement {
                guard redirects < maxRedirects else {
                    throw TransportError(.tooManyRedirects(maxRedirects), url: request.url)
                }
                guard let next = URL(string: location, relativeTo: current.url)?.absoluteURL else {
                    throw TransportError(.invalidURL, url: current.url, detail: "redirect to \(location)")
                }
                redirects += 1
                current.url = next
                continue
            }
            if case .respond(let status, _, _) = plan.replacement, status != 200 {
                throw TransportError(.httpStatus(status), url: current.url)
            }
            return try await deliver(file, plan: plan, for: current, progress: progress)
        }
    }

    /// Reads the body in pieces (hashing it, as a server would receive it), applying the scripted fault, then
    /// answers with the upload handler.
    public func upload(
        _ request: UploadRequest,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> HTTPResponse {
        if let error = TransportError.checkScheme(request.url) { throw error }
        calls.withLock { $0.append(.upload(request)) }
        let plan = FaultPlan(uploadFault(request))
        var hasher = SHA256()
        var sent: Int64 = 0
        let length = request.body.length
        switch request.body {
        case .bytes(let data):
            data.withUnsafeBytes { hasher.update($0) }
            sent = length
        case .file(let file, let offset, _):
            let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw TransportError(.fileError, url: request.url, detail: String(cString: strerror(errno)))
            }
            defer { close(descriptor) }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
            defer { buffer.deallocate() }
            while sent < length {
                if Task.isCancelled { throw TransportError(.cancelled, url: request.url) }
                if let limit = plan.bodyLimit, sent >= limit { break }
                let wanted = Int(min(Int64(buffer.count), length - sent, (plan.bodyLimit ?? length) - sent))
                let count = pread(descriptor, buffer.baseAddress, wanted, off_t(offset + sent))
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else {
                    throw TransportError(.fileError, url: request.url, detail: "the upload's file ended early")
                }
                hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
                sent += Int64(count)
                progress(sent)
                await Task.yield()
            }
        }
        if let limit = plan.bodyLimit, limit < length {
            switch plan.ending {
            case .reset, .normal, .close:
                throw TransportError(.connectionFailed, url: request.url, detail: "connection reset by peer")
            case .stall(let seconds):
                try await Self.wait(min(.seconds(seconds), idleTimeout), url: request.url)
                throw TransportError(.timedOut, url: request.url, detail: "the server stopped reading")
            }
        }
        progress(sent)
        let response = try uploadHandler(request, ReceivedBody(bytes: sent, sha256: hasher.finalize()))
        if response.body.count > request.maxResponseBytes {
            throw TransportError(.bodyTooLarge(limit: Int64(request.maxResponseBytes)), url: request.url)
        }
        return response
    }

    /// Writes the answer to `request` from `file`, with its ranges and faults.
    private func deliver(
        _ file: File, plan: FaultPlan, for request: DownloadRequest,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) async throws -> DownloadResult {
        let size = file.content.count
        let etag = plan.withoutETag ? nil : (plan.changedETag ?? file.etag)
        let lastModified = plan.changedETag == nil ? file.lastModified : MockFile.changedLastModified
        // The server's side: a range from the kept bytes when the validator still matches, else the whole file.
        var status = file.status
        var start: Int64 = 0
        var headers = file.headers
        if status == 200, request.resumeFrom > 0 {
            let wanted = request.validator?.ifRangeValue
            let sameVersion = wanted == nil || wanted == etag || wanted == lastModified
            if sameVersion && !file.ignoresRange && !plan.ignoreRange {
                guard request.resumeFrom < size else {
                    throw TransportError(
                        .httpStatus(416), url: request.url, detail: "nothing after byte \(size)",
                        headers: ["Content-Range": "bytes */\(size)"])
                }
                status = 206
                start = request.resumeFrom
                headers.set("Content-Range", "bytes \(start)-\(size - 1)/\(size)")
            }
        }
        let bodySize = size - start
        headers.set("Content-Length", String(bodySize))
        headers.set("ETag", etag)
        headers.set("Last-Modified", lastModified)
        // The client's side: the same decision every transport makes from the answer.
        let decision = try ResumeDecision(
            status: status, headers: headers, contentLength: bodySize, request: request, url: request.url)
        let kept = decision.base
        let restarted = decision.restarts
        let limits = [file.truncateAfter.map(Int64.init), plan.bodyLimit].compactMap { $0 }
        let delivered = min(bodySize, limits.min() ?? bodySize)
        request.onResponse?(decision.response)
        // Kept in memory when the request allows it and the body will come whole (asked only then, so that a yes
        // is kept); a short one goes to the file, as the contract asks of one kept in memory too.
        if request.resumeFrom == 0, kept == 0, status == 200, delivered == bodySize,
            request.keepInMemory?(bodySize) == true
        {
            if Task.isCancelled { throw TransportError(.cancelled, url: request.url) }
            var body = Data(count: Int(bodySize))
            let filled = body.withUnsafeMutableBytes { file.content.fill($0, from: 0) }
            progress(DownloadProgress(received: Int64(filled), expected: size))
            return DownloadResult(
                status: status, headers: headers, url: request.url, bytesWritten: bodySize, fileSize: bodySize,
                validator: Validator(etag: etag, lastModified: lastModified), restarted: restarted, contents: body)
        }
        try await Self.write(file.content, from: kept, count: delivered, to: request, total: size, progress: progress)
        if delivered < bodySize {
            switch plan.ending {
            case .reset:
                throw TransportError(.connectionFailed, url: request.url, detail: "connection reset by peer")
            case .stall(let seconds) where Duration.seconds(seconds) >= idleTimeout:
                try await Self.wait(idleTimeout, url: request.url)
                throw TransportError(.timedOut, url: request.url, detail: "no bytes for \(idleTimeout)")
            case .stall(let seconds):
                try await Self.wait(.seconds(seconds), url: request.url)
                throw TransportError(.truncated(expected: bodySize, received: delivered), url: request.url)
            case .normal, .close:
                throw TransportError(.truncated(expected: bodySize, received: delivered), url: request.url)
            }
        }
        return DownloadResult(
            status: status,
            headers: headers,
            url: request.url,
            bytesWritten: delivered,
            fileSize: kept + delivered,
            validator: Validator(etag: etag, lastModified: lastModified),
            restarted: restarted
        )
    }

    /// A scripted wait that cancellation ends at once.
    private static func wait(_ duration: Duration, url: URL) async throws {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw TransportError(.cancelled, url: url)
        }
    }

    /// Keeps the first `kept` bytes of the destination (creating it if needed) and appends `count` bytes of
    /// `content` from `kept`, in pieces, reporting progress after each.
    private static func write(
        _ content: MockContent, from kept: Int64, count: Int64, to request: DownloadRequest, total: Int64,
        progress: @Sendable (DownloadProgress) -> Void
    ) async throws {
        let path = request.destinationPath
        try? FileManager.default.createDirectory(
            at: request.destination.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw TransportError(.fileError, url: request.url, detail: String(cString: strerror(errno)))
        }
        defer { close(descriptor) }
        guard ftruncate(descriptor, off_t(kept)) == 0, lseek(descriptor, off_t(kept), SEEK_SET) >= 0 else {
            throw TransportError(.fileError, url: request.url, detail: String(cString: strerror(errno)))
        }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 256 << 10, alignment: 16)
        defer { buffer.deallocate() }
        guard let base = buffer.baseAddress else { return }
        var written: Int64 = 0
        repeat {
            if Task.isCancelled { throw TransportError(.cancelled, url: request.url) }
            let length = Int(min(Int64(buffer.count), count - written))
            let filled = content.fill(UnsafeMutableRawBufferPointer(start: base, count: length), from: kept + written)
            var offset = 0
            while offset < filled {
                let result = Glibc.write(descriptor, base + offset, filled - offset)
                if result < 0 && errno == EINTR { continue }
                guard result > 0 else {
                    throw TransportError(.fileError, url: request.url, detail: String(cString: strerror(errno)))
                }
                offset += result
            }
            written += Int64(filled)
            progress(DownloadProgress(received: kept + written, expected: total))
            await Task.yield()
        } while written < count
    }

    /// A buffered answer for `send` from what a request resolved to.
    private static func response(to request: HTTPRequest, route: MockRoute) -> HTTPResponse {
        switch route {
        case .api(let status, let body):
            let headers: HTTPHeaders = ["Content-Type": MockITunesAPI.contentType]
            return HTTPResponse(status: status, headers: headers, url: request.url, body: Data(body))
        case .file(let file):
            let body = request.method == .head ? [] : file.content.bytes(in: 0..<file.content.count)
            let headers: HTTPHeaders = [
                "Content-Type": file.contentType, "Content-Length": String(file.content.count),
                "ETag": file.etag, "Last-Modified": file.lastModified,
            ]
            return HTTPResponse(status: 200, headers: headers, url: request.url, body: Data(body))
        case .notFound:
            return HTTPResponse(status: 404, headers: [:], url: request.url, body: Data())
        }
    }

    /// The file a download gets from what its request resolved to.
    private static func file(for route: MockRoute, fault: MockFault?) -> File {
        guard case .file(let file) = route else { return File(status: 404, fault: fault) }
        return File(
            status: 200, content: file.content, etag: file.etag, lastModified: file.lastModified,
            headers: ["Content-Type": file.contentType], fault: fault)
    }

    /// The path and query of `url`, still percent-encoded, as a request line carries them.
    private static func target(of url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath ?? url.path
        let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }
}
