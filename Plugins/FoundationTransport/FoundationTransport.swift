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

    /// Sends a whole file with an upload task (FoundationNetworking reads it in pieces) or the buffer, with its
    /// `Content-Length`; the answer is buffered like `send`'s. A range of a file (an s3 sink's multipart part) is
    /// first copied by the kernel into an unnamed file beside it, which goes as a whole file: FoundationNetworking
    /// sends a body stream chunked, without the length object stores require. The copy costs one part's bytes on
    /// disk while it is sent (the curl transport reads the range in place).
    public func upload(
        _ request: UploadRequest,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> HTTPResponse {
        if let error = TransportError.checkScheme(request.url) { throw error }
        var urlRequest = makeRequest(url: request.url, headers: request.headers)
        urlRequest.httpMethod = request.method.rawValue
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        urlRequest.setValue(String(request.body.length), forHTTPHeaderField: "Content-Length")
        if let timeout = request.timeout { urlRequest.timeoutInterval = timeout.seconds }
        var transfer = BufferedTransfer(limit: request.maxResponseBytes)
        transfer.uploadProgress = progress
        switch request.body {
        case .bytes(let data):
            urlRequest.httpBody = data
        case .file(let file, 0, let length) where Self.fileSize(file) == length:
            let outcome = try await perform(urlRequest, state: .buffered(transfer), fromFile: file)
            guard case .buffered(let response) = outcome else { throw TransportError(.other, url: request.url) }
            return response
        case .file(let file, let offset, let length):
            // A body stream would go out chunked, without the Content-Length object stores require:
            // FoundationNetworking on Linux gives a stream no length, whatever the request's headers say.
            let copy = try RangeCopy(of: file, offset: offset, length: length, for: request.url)
            let outcome = try await perform(urlRequest, state: .buffered(transfer), fromFile: copy.url)
            _ = consume copy
            guard case .buffered(let response) = outcome else { throw TransportError(.other, url: request.url) }
            return response
        }
        let outcome = try await perform(urlRequest, state: .buffered(transfer))
        guard case .buffered(let response) = outcome else { throw TransportError(.other, url: request.url) }
        return response
    }

    private func makeRequest(url: URL, headers: HTTPHeaders) -> URLRequest {
        var urlRequest = URLRequest(url: url)
        urlRequest.setValue(configuration.userAgent, forHTTPHeaderField: "User-Agent")
        for (name, value) in configuration.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        for (name, value) in headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        return urlRequest
    }

    private static func fileSize(_ url: URL) -> Int64? {
        var info = stat()
        return stat(url.path, &info) == 0 ? Int64(info.st_size) : nil
    }

    /// Runs one task to its end; cancelling the calling Swift task cancels the URLSession task.
    private func perform(
        _ urlRequest: URLRequest, state: TransferState, fromFile: URL? = nil
    ) async throws -> TransferOutcome {
        let task =
            fromFile.map { session.uploadTask(with: urlRequest, fromFile: $0) } ?? session.dataTask(with: urlRequest)
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
