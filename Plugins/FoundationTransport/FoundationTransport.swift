import Foundation
import MediaFetchCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// HTTP through one `URLSession` for every call of a run, with a delegate that streams each
/// download into its file as the bytes arrive.
///
/// Linux's URLSession has no resume data and no `bytes(for:)`, so resume is done here with
/// `Range` + `If-Range`, the same way as every other transport.
public final class FoundationTransport: Transport {
    public struct Configuration: Sendable {
        public var concurrency: Int
        /// The most one transfer may take in all.
        public var timeout: Duration
        /// The most a transfer may wait for its next bytes.
        public var idleTimeout: Duration
        public var headers: HTTPHeaders
        public var userAgent: String
        public var maxRedirects: Int

        public init(
            concurrency: Int = 8,
            timeout: Duration = .seconds(300),
            idleTimeout: Duration = .seconds(30),
            headers: HTTPHeaders = [:],
            userAgent: String = FoundationTransport.defaultUserAgent,
            maxRedirects: Int = 10
        ) {
            self.concurrency = concurrency
            self.timeout = timeout
            self.idleTimeout = idleTimeout
            self.headers = headers
            self.userAgent = userAgent
            self.maxRedirects = maxRedirects
        }
    }

    public static let defaultUserAgent = "mediafetch/0.1 (+foundation)"

    public let configuration: Configuration
    private let session: URLSession
    private let delegate: SessionDelegate
    /// A slot a byte of ``uploadMemoryBudget``: an upload takes its body's bytes before it reads its file.
    private let budget = Slots(limit: Int(FoundationTransport.uploadMemoryBudget))

    public var maxConcurrentTransfers: Int { configuration.concurrency }

    public init(_ configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.httpMaximumConnectionsPerHost = configuration.concurrency
        sessionConfiguration.timeoutIntervalForRequest = configuration.idleTimeout.seconds
        sessionConfiguration.timeoutIntervalForResource = configuration.timeout.seconds
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        sessionConfiguration.urlCache = nil
        sessionConfiguration.httpCookieStorage = nil
        delegate = SessionDelegate(maxRedirects: configuration.maxRedirects)
        // A serial delegate queue: callbacks of one task arrive in order, and file writes never race.
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "mediafetch.foundation-transport"
        session = URLSession(configuration: sessionConfiguration, delegate: delegate, delegateQueue: queue)
    }

    deinit {
        session.invalidateAndCancel()
    }

    public func shutdown() async {
        session.finishTasksAndInvalidate()
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let error = TransportError.checkScheme(request.url) { throw error }
        var urlRequest = makeRequest(url: request.url, headers: request.headers)
        urlRequest.httpMethod = request.method.rawValue
        if let timeout = request.timeout { urlRequest.timeoutInterval = timeout.seconds }
        if !request.acceptsCompression { urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding") }
        let outcome = try await perform(urlRequest, state: .buffered(BufferedTransfer(limit: request.maxBodyBytes)))
        guard case .buffered(let response) = outcome else { throw TransportError(.other, url: request.url) }
        return response
    }

    public func download(
        _ request: DownloadRequest,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) async throws -> DownloadResult {
        if let error = TransportError.checkScheme(request.url) { throw error }
        var urlRequest = makeRequest(url: request.url, headers: request.headers)
        // Media is already compressed, and a byte range must count bytes of the file itself.
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if request.resumeFrom > 0 {
            urlRequest.setValue("bytes=\(request.resumeFrom)-", forHTTPHeaderField: "Range")
            if let ifRange = request.validator?.ifRangeValue {
                urlRequest.setValue(ifRange, forHTTPHeaderField: "If-Range")
            }
        }
        let transfer = FileTransfer(request: request, progress: progress)
        let outcome = try await perform(urlRequest, state: .file(transfer))
        guard case .file(let result) = outcome else { throw TransportError(.other, url: request.url) }
        return result
    }

    /// Sends the buffer, or the file's bytes read into memory, with their `Content-Length`; the answer is buffered
    /// like `send`'s. A file body above ``maxUploadBodyBytes`` is refused (`.unsupported`) before anything is sent;
    /// file bodies in memory at once, across every upload of the transport, stay within ``uploadMemoryBudget``
    /// (an upload waits for room before it reads its file). A buffer is sent as it is, whatever its size.
    ///
    /// Why in memory: FoundationNetworking on Linux streams a file body by reading ahead with DispatchIO, pausing
    /// libcurl's send while a read is out; a transfer that ends meanwhile (cancelled, the connection reset, a
    /// timeout) leaves the read to un-pause a handle already taken off libcurl's multi handle, and its `try!`
    /// (`EasyHandle.swift`, `_PauseState.setState`: `CURLE_BAD_FUNCTION_ARGUMENT`) ends the whole process. A body
    /// stream has no such reads but goes out chunked, without the `Content-Length` object stores require. A body
    /// of bytes has neither problem, so bodies are kept small: the s3 sink makes its parts no larger.
    public func upload(
        _ request: UploadRequest,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> HTTPResponse {
        if let error = TransportError.checkScheme(request.url) { throw error }
        if case .file(_, _, let length) = request.body, length > Self.fileBodyLimit {
            throw TransportError(
                .unsupported, url: request.url,
                detail: "the foundation transport sends file bodies of at most \(Self.fileBodyLimit >> 20) MiB, "
                    + "this one has \(length) bytes: send it in parts, or use the curl transport")
        }
        var urlRequest = makeRequest(url: request.url, headers: request.headers)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        urlRequest.setValue(String(request.body.length), forHTTPHeaderField: "Content-Length")
        if let timeout = request.timeout { urlRequest.timeoutInterval = timeout.seconds }
        switch request.body {
        case .bytes(let data):
            urlRequest.httpBody = data
        case .file(let file, let offset, let length):
            try await budget.acquire(Int(length))
            do {
                urlRequest.httpBody = try Self.read(file, offset: offset, length: length, for: request.url)
            } catch {
                budget.release(Int(length))
                throw error
            }
        }
        // FoundationNetworking copies the body once more; both copies go when the task has ended.
        defer { if case .file(_, _, let length) = request.body { budget.release(Int(length)) } }
        var transfer = BufferedTransfer(limit: request.maxResponseBytes)
        transfer.uploadProgress = progress
        let outcome = try await perform(urlRequest, state: .buffered(transfer))
        guard case .buffered(let response) = outcome else { throw TransportError(.other, url: request.url) }
        return response
    }

    /// The largest file body: 8 MiB, above S3's smallest multipart part (5 MiB).
    static let fileBodyLimit: Int64 = 8 << 20

    /// 8 MiB: the largest file body ``upload(_:progress:)`` sends. It is read into memory whole (and copied once
    /// more by FoundationNetworking); the s3 sink cuts its parts to it.
    public var maxUploadBodyBytes: Int64? { Self.fileBodyLimit }

    /// 16 MiB: the most file-body bytes this transport reads into memory for its uploads at once, two bodies of
    /// the largest size; in memory with FoundationNetworking's copy of each, about twice that.
    ///
    /// It was 64 MiB. Measured with `TRANSPORT=foundation Benchmarks/s3.sh` (1 Dec 2026), the run's peak memory
    /// went from 153-282 MiB to 107-177 MiB for one 512 MiB file (8.2-8.4 s before, 8.8-10.1 s after) and from
    /// 189 to 100-105 MiB for 2,000 preview-sized files (20.2 s, then 21.5-22.1 s): memory over a little speed,
    /// for the transport people choose for what it does without libcurl, not for its speed.
    public static let uploadMemoryBudget: Int64 = 16 << 20

    /// `length` bytes of `file` from `offset`.
    private static func read(_ file: URL, offset: Int64, length: Int64, for url: URL) throws -> Data {
        func failure(_ reason: String) -> TransportError {
            TransportError(.fileError, url: url, detail: "cannot read the upload's body from \(file.path): \(reason)")
        }
        guard offset >= 0, length >= 0 else { throw failure("\(offset)+\(length) is not a range of bytes") }
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure(String(cString: strerror(errno))) }
        defer { close(descriptor) }
        var data = Data(count: Int(length))
        var done = 0
        while done < data.count {
            let count = data.withUnsafeMutableBytes { bytes in
                pread(descriptor, bytes.baseAddress.map { $0 + done }, bytes.count - done, off_t(offset) + off_t(done))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw failure(count < 0 ? String(cString: strerror(errno)) : "the file ended early") }
            done += count
        }
        return data
    }

    private func makeRequest(url: URL, headers: HTTPHeaders) -> URLRequest {
        var urlRequest = URLRequest(url: url)
        urlRequest.setValue(configuration.userAgent, forHTTPHeaderField: "User-Agent")
        for (name, value) in configuration.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        for (name, value) in headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        return urlRequest
    }

    /// Runs one task to its end; cancelling the calling Swift task cancels the URLSession task.
    private func perform(
        _ urlRequest: URLRequest, state: TransferState
    ) async throws -> TransferOutcome {
        let task = session.dataTask(with: urlRequest)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                delegate.register(task, state: state, continuation: continuation)
                // Cancelled before the task was registered: onCancel found nothing to stop yet.
                if Task.isCancelled { delegate.cancel(task) }
                task.resume()
            }
        } onCancel: {
            delegate.cancel(task)
        }
    }
}
