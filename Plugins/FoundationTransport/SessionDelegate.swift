import Foundation
import MediaFetchCore
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a running task is doing with its body.
enum TransferState: Sendable {
    case buffered(BufferedTransfer)
    case file(FileTransfer)
}

/// How a task ended well.
enum TransferOutcome: Sendable {
    case buffered(HTTPResponse)
    case file(DownloadResult)
}

/// A small response collected in memory.
struct BufferedTransfer: Sendable {
    var limit: Int
    var body = Data()
    var response: HTTPURLResponse?
    /// An upload's progress: body bytes sent so far.
    var uploadProgress: (@Sendable (Int64) -> Void)?

    init(limit: Int) {
        self.limit = limit
    }
}

/// A download streamed into its destination file.
struct FileTransfer: @unchecked Sendable {
    // @unchecked: the FileHandle is only touched on the session's serial delegate queue.
    var request: DownloadRequest
    var progress: @Sendable (DownloadProgress) -> Void
    var handle: FileHandle?
    var response: HTTPURLResponse?
    /// Where the body starts in the file: the kept bytes on 206, zero on 200.
    var base: Int64 = 0
    var written: Int64 = 0
    var expected: Int64?
    var restarted = false
    var lastProgress: ContinuousClock.Instant?

    init(request: DownloadRequest, progress: @escaping @Sendable (DownloadProgress) -> Void) {
        self.request = request
        self.progress = progress
    }
}

/// The session's delegate: routes each task's callbacks to its state, and ends its continuation.
final class SessionDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private struct Entry {
        var state: TransferState
        var continuation: CheckedContinuation<TransferOutcome, any Error>
        var redirects = 0
        /// The first problem seen; it wins over whatever error the cancelled task reports after.
        var failure: TransportError?
    }

    private let maxRedirects: Int
    private let entries = Mutex<[Int: Entry]>([:])
    private static let progressInterval = Duration.milliseconds(100)

    init(maxRedirects: Int) {
        self.maxRedirects = maxRedirects
    }

    func register(
        _ task: URLSessionTask, state: TransferState, continuation: CheckedContinuation<TransferOutcome, any Error>
    ) {
        entries.withLock { $0[task.taskIdentifier] = Entry(state: state, continuation: continuation) }
    }

    /// How long a cancelled task may take to report its end before it is ended here.
    static let cancelGrace = DispatchTimeInterval.seconds(3)

    /// Cancels a task on behalf of a cancelled Swift task. FoundationNetworking has been seen (a
    /// SIGINT while transfers were being set up) never to report a cancelled task's end, which
    /// would leave the caller waiting forever; so if no end is reported within ``cancelGrace``, the
    /// transfer is ended here.
    func cancel(_ task: URLSessionTask) {
        task.cancel()
        let identifier = task.taskIdentifier
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.cancelGrace) { [weak self] in
            guard let entry = self?.entries.withLock({ $0.removeValue(forKey: identifier) }) else { return }
            if case .file(var transfer) = entry.state { _ = transfer.close() }
            entry.continuation.resume(throwing: TransportError(.cancelled, url: task.originalRequest?.url))
        }
    }

    /// Records why a task must stop; the first reason wins.
    private func record(_ task: URLSessionTask, _ error: TransportError) {
        entries.withLock { entries in
            if entries[task.taskIdentifier]?.failure == nil { entries[task.taskIdentifier]?.failure = error }
        }
    }

    /// Records why a task must stop, and stops it.
    private func fail(_ task: URLSessionTask, _ error: TransportError) {
        record(task, error)
        task.cancel()
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        let progress = entries.withLock { entries -> (@Sendable (Int64) -> Void)? in
            guard case .buffered(let transfer) = entries[task.taskIdentifier]?.state else { return nil }
            return transfer.uploadProgress
        }
        progress?(totalBytesSent)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let redirects = entries.withLock { entries -> Int in
            entries[task.taskIdentifier]?.redirects += 1
            return entries[task.taskIdentifier]?.redirects ?? 0
        }
        // Refusing a redirect hands the 3xx on as the final response, where didReceive(response:) stops
        // the task; cancelling here instead makes FoundationNetworking trap on the pending completion.
        // FoundationNetworking turns `Location: file:///x` into a URL on the same http host, so the
        // header itself is checked: a redirect to another scheme is refused, not reinterpreted.
        let location = response.value(forHTTPHeaderField: "Location")
            .flatMap { URL(string: $0, relativeTo: response.url)?.absoluteURL }
        let target = location ?? request.url
        if let target, let error = TransportError.checkScheme(target) {
            let from = response.url?.absoluteString ?? "?"
            record(task, TransportError(error.code, url: target, detail: "redirected from \(from)"))
            completionHandler(nil)
        } else if redirects > maxRedirects {
            record(task, TransportError(.tooManyRedirects(maxRedirects), url: task.originalRequest?.url))
            completionHandler(nil)
        } else {
            completionHandler(request)
        }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse else {
            fail(dataTask, TransportError(.other, url: response.url, detail: "not an HTTP response"))
            completionHandler(.cancel)
            return
        }
        let problem: TransportError? = entries.withLock { entries in
            guard var entry = entries[dataTask.taskIdentifier] else { return nil }
            if let failure = entry.failure { return failure }
            defer { entries[dataTask.taskIdentifier] = entry }
            switch entry.state {
            case .buffered(var transfer):
                transfer.response = http
                if http.expectedContentLength > Int64(transfer.limit) {
                    return TransportError(.bodyTooLarge(limit: Int64(transfer.limit)), url: http.url)
                }
                entry.state = .buffered(transfer)
                return nil
            case .file(var transfer):
                if let problem = Self.fileStep(transfer.request.destination, { try transfer.open(http) }) {
                    return problem
                }
                entry.state = .file(transfer)
                return nil
            }
        }
        if let problem {
            fail(dataTask, problem)
            completionHandler(.cancel)
        } else {
            completionHandler(.allow)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let problem: TransportError? = entries.withLock { entries in
            guard var entry = entries[dataTask.taskIdentifier], entry.failure == nil else { return nil }
            defer { entries[dataTask.taskIdentifier] = entry }
            switch entry.state {
            case .buffered(var transfer):
                guard transfer.body.count + data.count <= transfer.limit else {
                    return TransportError(
                        .bodyTooLarge(limit: Int64(transfer.limit)), url: dataTask.currentRequest?.url)
                }
                transfer.body.append(data)
                entry.state = .buffered(transfer)
            case .file(var transfer):
                if let problem = Self.fileStep(transfer.request.destination, { try transfer.write(data) }) {
                    return problem
                }
                entry.state = .file(transfer)
            }
            return nil
        }
        if let problem { fail(dataTask, problem) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let entry = entries.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        switch entry.state {
        case .buffered(let transfer):
            if let failure = entry.failure ?? error.map({ Self.transportError($0, url: task.originalRequest?.url) }) {
                entry.continuation.resume(throwing: failure)
            } else if let response = transfer.response, let url = response.url ?? task.originalRequest?.url {
                entry.continuation.resume(
                    returning: .buffered(
                        HTTPResponse(
                            status: response.statusCode, headers: Self.headers(response), url: url,
                            body: transfer.body)))
            } else {
                entry.continuation.resume(
                    throwing: TransportError(
                        .other, url: task.originalRequest?.url,
                        detail: "no response"))
            }
        case .file(var transfer):
            let closeError = transfer.close()
            var failure = entry.failure ?? error.map({ Self.transportError($0, url: transfer.request.url) })
            // libcurl underneath reports a short body as a lost connection; what it is, is a truncated file.
            if let known = failure, known.code == .other, entry.failure == nil, let expected = transfer.expected,
                transfer.written < expected
            {
                failure = TransportError(
                    .truncated(expected: transfer.base + expected, received: transfer.base + transfer.written),
                    url: known.url, detail: known.detail)
            }
            if let failure = failure ?? closeError {
                entry.continuation.resume(throwing: failure)
            } else {
                entry.continuation.resume(with: transfer.result().map(TransferOutcome.file))
            }
        }
    }

    /// Runs one step on a download's file; a failure becomes the transport error to end the task with.
    static func fileStep(_ file: URL, _ step: () throws -> Void) -> TransportError? {
        do {
            try step()
            return nil
        } catch let error as TransportError {
            return error
        } catch {
            return TransportError(.fileError, url: file, detail: "\(error)")
        }
    }

    static func headers(_ response: HTTPURLResponse) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for (name, value) in response.allHeaderFields {
            headers.add(name: String(describing: name), value: String(describing: value))
        }
        return headers
    }

    static func transportError(_ error: any Error, url: URL?) -> TransportError {
        guard let urlError = error as? URLError else {
            return TransportError(.other, url: url, detail: String(describing: error))
        }
        let detail = urlError.localizedDescription
        switch urlError.code {
        case .cancelled: return TransportError(.cancelled, url: url)
        case .timedOut: return TransportError(.timedOut, url: url)
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet:
            return TransportError(.connectionFailed, url: url, detail: detail)
        case .httpTooManyRedirects: return TransportError(.tooManyRedirects(0), url: url, detail: detail)
        case .unsupportedURL: return TransportError(.invalidURL, url: url, detail: detail)
        default: return TransportError(.other, url: url, detail: detail)
        }
    }
}

extension FileTransfer {
    /// Decides from the status where the body goes, and opens the file; nothing is touched for
    /// a status that carries no file.
    mutating func open(_ response: HTTPURLResponse) throws {
        self.response = response
        let url = response.url ?? request.url
        let length = response.expectedContentLength >= 0 ? response.expectedContentLength : nil
        let headers = SessionDelegate.headers(response)
        let decision = try ResumeDecision(
            status: response.statusCode, headers: headers, contentLength: length, request: request, url: url)
        base = decision.base
        restarted = decision.restarts
        expected = length
        let path = request.destinationPath
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil) else {
                throw TransportError(.fileError, url: request.destination, detail: "cannot create the file")
            }
        }
        let handle = try FileHandle(forWritingTo: request.destination)
        // Cut only a file of the wrong size: ext4 flushes a file truncated to zero when it is closed
        // (auto_da_alloc), which would make every fresh download wait on the disk.
        if try handle.seekToEnd() != UInt64(base) { try handle.truncate(atOffset: UInt64(base)) }
        try handle.seek(toOffset: UInt64(base))
        self.handle = handle
        // Only now, with the file cut to what this answer continues, may the caller record its validator.
        request.onResponse?(decision.response)
    }

    mutating func write(_ data: Data) throws {
        guard let handle else { return }
        if let limit = request.maxBytes, base + written + Int64(data.count) > limit {
            throw TransportError(.bodyTooLarge(limit: limit), url: request.url)
        }
        try handle.write(contentsOf: data)
        written += Int64(data.count)
        let now = ContinuousClock.now
        if lastProgress.map({ now - $0 >= .milliseconds(100) }) ?? true {
            lastProgress = now
            progress(DownloadProgress(received: base + written, expected: expected.map { base + $0 }))
        }
    }

    /// Flushes and closes the file; answers the error if that failed.
    mutating func close() -> TransportError? {
        defer { handle = nil }
        do {
            try handle?.synchronize()
            try handle?.close()
            return nil
        } catch {
            return TransportError(.fileError, url: request.destination, detail: "\(error)")
        }
    }

    func result() -> Result<DownloadResult, any Error> {
        guard let response else { return .failure(TransportError(.other, url: request.url, detail: "no response")) }
        let url = response.url ?? request.url
        if let expected, written != expected {
            return .failure(TransportError(.truncated(expected: base + expected, received: base + written), url: url))
        }
        progress(DownloadProgress(received: base + written, expected: expected.map { base + $0 }))
        let headers = SessionDelegate.headers(response)
        return .success(
            DownloadResult(
                status: response.statusCode, headers: headers, url: url, bytesWritten: written,
                fileSize: base + written, validator: Validator(headers: headers), restarted: restarted))
    }
}
