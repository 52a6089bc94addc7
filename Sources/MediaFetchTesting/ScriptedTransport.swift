import Foundation
import MediaFetchCore
import Synchronization

/// A ``Transport`` that answers from closures instead of the network, for tests that swap the transport.
///
/// `send` returns whatever the send closure builds. `download` asks the download closure for the whole
/// resource (``File``) and then behaves as the `Transport` contract says a real transport does against a
/// server with ranges: with `resumeFrom > 0` and a matching (or no) validator it appends the rest after the
/// kept bytes (206); with a stale validator it rewrites the whole file and sets `restarted` (200); a status
/// other than 200 throws ``TransportError/Code/httpStatus(_:)`` and leaves the destination alone.
///
/// ```swift
/// let transport = ScriptedTransport(
///     send: { request in HTTPResponse(status: 200, headers: [:], url: request.url, body: Data("{}".utf8)) },
///     download: { _ in ScriptedTransport.File(bytes: Array(repeating: 7, count: 1000), etag: "\"v1\"") }
/// )
/// ```
///
/// ``init(catalog:baseURL:maxConcurrentTransfers:)`` answers like ``MockCatalogServer`` without sockets.
public final class ScriptedTransport: Transport {
    /// The resource a download closure describes: what a server would have for the URL.
    public struct File: Sendable {
        /// 200 serves the file; anything else is the status the download fails with.
        public var status: Int
        public var bytes: [UInt8]
        /// The strong ETag, quoted, or nil.
        public var etag: String?
        public var lastModified: String?
        /// Extra response headers.
        public var headers: HTTPHeaders
        /// When set, only this many body bytes arrive and the download throws `truncated` (the bytes stay).
        public var truncateAfter: Int?
        /// When true, a resume always gets the whole file again, as from a server without range support.
        public var ignoresRange: Bool

        public init(
            status: Int = 200,
            bytes: [UInt8] = [],
            etag: String? = nil,
            lastModified: String? = nil,
            headers: HTTPHeaders = [:],
            truncateAfter: Int? = nil,
            ignoresRange: Bool = false
        ) {
            self.status = status
            self.bytes = bytes
            self.etag = etag
            self.lastModified = lastModified
            self.headers = headers
            self.truncateAfter = truncateAfter
            self.ignoresRange = ignoresRange
        }
    }

    /// One call the transport received.
    public enum Call: Sendable {
        case send(HTTPRequest)
        case download(DownloadRequest)

        /// The URL the call asked for.
        public var url: URL {
            switch self {
            case .send(let request): request.url
            case .download(let request): request.url
            }
        }
    }

    public typealias SendHandler = @Sendable (HTTPRequest) throws -> HTTPResponse
    public typealias DownloadHandler = @Sendable (DownloadRequest) throws -> File

    public let maxConcurrentTransfers: Int
    private let sendHandler: SendHandler
    private let downloadHandler: DownloadHandler
    private let calls = Mutex<[Call]>([])

    /// - Parameters:
    ///   - send: answers `send`; the default answers 404 with an empty body.
    ///   - download: describes the resource a download gets; the default is a 404.
    public init(
        maxConcurrentTransfers: Int = 4,
        send: @escaping SendHandler = { HTTPResponse(status: 404, headers: [:], url: $0.url, body: Data()) },
        download: @escaping DownloadHandler = { _ in File(status: 404) }
    ) {
        self.maxConcurrentTransfers = max(1, maxConcurrentTransfers)
        sendHandler = send
        downloadHandler = download
    }

    /// A transport that answers searches, lookups, previews and artwork from `catalog`, exactly as a
    /// ``MockCatalogServer`` at `baseURL` would (records point at `baseURL`; the host of a request is ignored).
    public convenience init(catalog: MockCatalog = .standard, baseURL: URL, maxConcurrentTransfers: Int = 4) {
        let api = MockITunesAPI(catalog: catalog, baseURL: baseURL)
        self.init(
            maxConcurrentTransfers: maxConcurrentTransfers,
            send: { request in
                let mock = MockRequest(method: request.method.rawValue, target: Self.target(of: request.url))
                switch MockServerCore.resolve(mock, api: api) {
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
            },
            download: { request in
                let mock = MockRequest(method: "GET", target: Self.target(of: request.url))
                guard case .file(let file) = MockServerCore.resolve(mock, api: api) else { return File(status: 404) }
                return File(
                    bytes: file.content.bytes(in: 0..<file.content.count), etag: file.etag,
                    lastModified: file.lastModified, headers: ["Content-Type": file.contentType]
                )
            }
        )
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
        if let error = TransportError.checkScheme(request.url) { throw error }
        calls.withLock { $0.append(.download(request)) }
        if Task.isCancelled { throw TransportError(.cancelled, url: request.url) }
        let file = try downloadHandler(request)
        guard file.status == 200 else { throw TransportError(.httpStatus(file.status), url: request.url) }
        let size = Int64(file.bytes.count)
        var status = 200
        var kept: Int64 = 0
        var restarted = false
        var headers = file.headers
        if request.resumeFrom > 0 {
            let wanted = request.validator?.ifRangeValue
            let sameVersion = wanted == nil || wanted == file.etag || wanted == file.lastModified
            if sameVersion && !file.ignoresRange {
                guard request.resumeFrom < size else {
                    throw TransportError(.httpStatus(416), url: request.url, detail: "nothing after byte \(size)")
                }
                status = 206
                kept = request.resumeFrom
                headers.set("Content-Range", "bytes \(kept)-\(size - 1)/\(size)")
            } else {
                restarted = true
            }
        }
        let body = file.bytes[Int(kept)...]
        headers.set("Content-Length", String(body.count))
        headers.set("ETag", file.etag)
        headers.set("Last-Modified", file.lastModified)
        let delivered = body.prefix(file.truncateAfter ?? body.count)
        do {
            try Self.write(delivered, to: request.destination, keeping: kept)
        } catch {
            throw TransportError(.fileError, url: request.url, detail: String(describing: error))
        }
        progress(DownloadProgress(received: kept + Int64(delivered.count), expected: size))
        guard delivered.count == body.count else {
            throw TransportError(
                .truncated(expected: Int64(body.count), received: Int64(delivered.count)), url: request.url
            )
        }
        return DownloadResult(
            status: status,
            headers: headers,
            url: request.url,
            bytesWritten: Int64(delivered.count),
            fileSize: kept + Int64(delivered.count),
            validator: Validator(etag: file.etag, lastModified: file.lastModified),
            restarted: restarted
        )
    }

    /// Keeps the first `kept` bytes of `destination` (creating it if needed) and appends `bytes`.
    private static func write(_ bytes: ArraySlice<UInt8>, to destination: URL, keeping kept: Int64) throws {
        let manager = FileManager.default
        if !manager.fileExists(atPath: destination.path) {
            try manager.createDirectory(at: destination.deletingLastPathComponent(), withIntermediateDirectories: true)
            guard manager.createFile(atPath: destination.path, contents: nil) else {
                throw CocoaError(.fileWriteUnknown)
            }
        }
        let handle = try FileHandle(forWritingTo: destination)
        defer { try? handle.close() }
        try handle.truncate(atOffset: UInt64(kept))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(bytes))
    }

    /// The path and query of `url`, still percent-encoded, as a request line carries them.
    private static func target(of url: URL) -> String {
        let components = URLComponents(url: url, resolvingAgainstBaseURL: false)
        let path = components?.percentEncodedPath ?? url.path
        let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
        return (path.isEmpty ? "/" : path) + query
    }
}
