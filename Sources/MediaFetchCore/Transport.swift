import Foundation

/// Does HTTP for everything in a run: the source's API calls and the workers' downloads.
///
/// Implementation requirements:
/// * Only `http` and `https` URLs are fetched, redirects included; anything else is
///   ``TransportError/Code/unsupportedScheme(_:)`` before a byte is sent.
/// * ``download(_:progress:)`` streams the body into the destination file and never holds a whole
///   file in memory, unless the request's ``DownloadRequest/keepInMemory`` agreed to that file's announced
///   size (a transport may also never ask it). With `resumeFrom > 0` it sends `Range: bytes=N-` and `If-Range`
///   (when the request has a validator); on 206 it appends after the kept bytes, on 200 it truncates the file
///   and writes the whole body, setting `restarted`.
/// * A body shorter than its `Content-Length` is ``TransportError/Code/truncated(expected:received:)``, never a
///   success; the bytes that did arrive stay in the file.
/// * A status other than 200 or 206 from `download`, after redirects, is
///   ``TransportError/Code/httpStatus(_:)`` with the response's headers, and leaves the
///   destination's kept bytes unchanged.
/// * `request.onResponse`, when set, is called once a 200 or 206 arrives, before its body is written.
/// * Task cancellation reaches the transfer: a cancelled `send` or `download` stops promptly,
///   frees its connection and throws ``TransportError/Code/cancelled`` (or `CancellationError`).
/// * ``upload(_:progress:)`` sends its body from the file range (or the buffer) with a `Content-Length`, and
///   holds no more of a file in memory than ``maxUploadBodyBytes`` (none at all, streaming, when that is `nil`);
///   it answers whatever the status, like ``send(_:)``, and a cancelled upload stops promptly. A transport that cannot upload keeps the default, which throws
///   ``TransportError/Code/unsupported``.
/// * The same instance serves many concurrent calls, and reuses connections between them, also after a download
///   that failed on a small answer (a 404 page, with a length or `chunked`: read it to its end rather than close the
///   connection).
public protocol Transport: Sendable {
    /// How many downloads the pipeline should run at once with this transport.
    var maxConcurrentTransfers: Int { get }

    /// Sends a small request and buffers the answer, whatever its status.
    /// - Throws: ``TransportError`` when no answer came (connection, timeout, redirect limit,
    ///   a body larger than `request.maxBodyBytes`).
    func send(_ request: HTTPRequest) async throws -> HTTPResponse

    /// Streams a GET into `request.destination`.
    /// - Parameters:
    ///   - request: what to fetch, into which file, from which byte, under which validator.
    ///   - progress: called as bytes arrive, at a bounded rate, from any thread.
    /// - Returns: how the transfer ended; only statuses 200 and 206 return.
    /// - Throws: ``TransportError``.
    func download(
        _ request: DownloadRequest,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) async throws -> DownloadResult

    /// Streams a PUT or POST body from a file range or a small buffer, and buffers the small answer.
    /// - Parameters:
    ///   - request: where to send what, with which headers.
    ///   - progress: called with the body bytes sent so far, at a bounded rate, from any thread.
    /// - Returns: the answer, whatever its status.
    /// - Throws: ``TransportError`` when no answer came (connection, timeout, cancellation, a body file that
    ///   cannot be read, an answer larger than `request.maxResponseBytes`); ``TransportError/Code/unsupported``
    ///   from a transport that cannot upload, or for a body above ``maxUploadBodyBytes``.
    func upload(
        _ request: UploadRequest,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> HTTPResponse

    /// The largest body from a file (``UploadRequest/Body/file(_:offset:length:)``) that ``upload(_:progress:)``
    /// sends, or `nil` when any size goes; a larger one is refused with ``TransportError/Code/unsupported`` before
    /// anything is sent. A sink keeps what it uploads within it: the s3 sink makes its multipart parts no larger
    /// (a limit under S3's smallest part, 5 MiB, leaves it single PUTs up to the limit). The value must not change
    /// over the transport's life. `nil` by default; declare it as `Int64?`, since a property of another type does
    /// not take the default's place.
    var maxUploadBodyBytes: Int64? { get }

    /// Releases connections and threads. Called once, when the run is over.
    func shutdown() async
}

extension Transport {
    public func shutdown() async {}

    /// `nil`: a transport streams file bodies of any size unless it says otherwise.
    public var maxUploadBodyBytes: Int64? { nil }

    /// Throws ``TransportError/Code/unsupported``: a transport written before uploads existed keeps compiling,
    /// and a sink that needs uploads says which transport it needs.
    public func upload(
        _ request: UploadRequest,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> HTTPResponse {
        throw TransportError(
            .unsupported, url: request.url,
            detail: "\(type(of: self)) cannot upload; the curl and foundation "
                + "transports can")
    }
}

/// Why a transfer did not succeed.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value that can gain kinds without breaking anyone's code: compare it with `==`
    /// (`error.code == .timedOut`), or ask it (``statusCode``, ``refusedScheme``), rather than switching over it.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The kinds; internal, so that a new one is no breaking change outside the core.
        enum Kind: Sendable, Hashable {
            case invalidURL
            case unsupportedScheme(String)
            case tooManyRedirects(Int)
            case timedOut
            case connectionFailed
            case httpStatus(Int)
            case truncated(expected: Int64, received: Int64)
            case changedDuringResume
            case bodyTooLarge(limit: Int64)
            case fileError
            case cancelled
            case unsupported
            case other
        }

        let kind: Kind

        init(_ kind: Kind) {
            self.kind = kind
        }

        /// The URL cannot be parsed, or has no host.
        public static let invalidURL = Code(.invalidURL)
        /// A URL (or a redirect) to something other than http or https.
        public static func unsupportedScheme(_ scheme: String) -> Code { Code(.unsupportedScheme(scheme)) }
        /// More redirects than the transport's limit.
        public static func tooManyRedirects(_ limit: Int) -> Code { Code(.tooManyRedirects(limit)) }
        public static let timedOut = Code(.timedOut)
        public static let connectionFailed = Code(.connectionFailed)
        /// A status other than 200 or 206 for a download, after redirects.
        public static func httpStatus(_ status: Int) -> Code { Code(.httpStatus(status)) }
        /// The body ended before its `Content-Length`.
        public static func truncated(expected: Int64, received: Int64) -> Code {
            Code(.truncated(expected: expected, received: received))
        }
        /// A resume was answered with a range of another version of the file (the server ignored `If-Range`):
        /// the kept bytes must go.
        public static let changedDuringResume = Code(.changedDuringResume)
        /// The file is larger than the request's `maxBytes` (the download section's max-size).
        public static func bodyTooLarge(limit: Int64) -> Code { Code(.bodyTooLarge(limit: limit)) }
        /// The download could not be written to disk.
        public static let fileError = Code(.fileError)
        public static let cancelled = Code(.cancelled)
        /// The transport cannot do what was asked (an upload, from a transport written before uploads).
        public static let unsupported = Code(.unsupported)
        /// Anything else the transport's library reported.
        public static let other = Code(.other)

        /// The HTTP status of an ``httpStatus(_:)``.
        public var statusCode: Int? {
            if case .httpStatus(let status) = kind { status } else { nil }
        }

        /// The scheme of an ``unsupportedScheme(_:)``.
        public var refusedScheme: String? {
            if case .unsupportedScheme(let scheme) = kind { scheme } else { nil }
        }

        /// The limit of a ``tooManyRedirects(_:)``.
        public var redirectLimit: Int? {
            if case .tooManyRedirects(let limit) = kind { limit } else { nil }
        }

        /// What was announced and what arrived, for a ``truncated(expected:received:)``.
        public var truncation: (expected: Int64, received: Int64)? {
            if case .truncated(let expected, let received) = kind { (expected, received) } else { nil }
        }

        /// The limit of a ``bodyTooLarge(limit:)``.
        public var sizeLimit: Int64? {
            if case .bodyTooLarge(let limit) = kind { limit } else { nil }
        }

        /// What happened, for a person.
        public var description: String {
            switch kind {
            case .invalidURL: "not a valid URL"
            case .unsupportedScheme(let scheme):
                "refused scheme \"\(scheme)\": only http and https are fetched, redirects included"
            case .tooManyRedirects(let limit): "more than \(limit) redirects (raise max-redirects if this is expected)"
            case .timedOut: "timed out (the transport's timeout options allow more if the server is slow)"
            case .connectionFailed: "could not connect"
            case .httpStatus(let status): "HTTP \(status)"
            case .truncated(let expected, let received): "body ended after \(received) of \(expected) bytes"
            case .changedDuringResume:
                "the file changed on the server while resuming (a range of another version came back)"
            case .bodyTooLarge(let limit):
                // A download's limit is the download section's max-size, and a user who hits it needs its name.
                "larger than the limit of \(limit) bytes (\(TransportError.megabytes(limit)), download.max-size: "
                    + "raise it, or set it to none for no limit)"
            case .fileError: "could not write the download to disk"
            case .cancelled: "cancelled"
            case .unsupported: "not supported by this transport"
            case .other: "transfer failed"
            }
        }
    }

    public var code: Code
    public var url: URL?
    /// The underlying library's own words, when it had some.
    public var detail: String?
    /// The response's headers, for an ``Code/httpStatus(_:)`` (a 416's `Content-Range`, a 429's `Retry-After`).
    public var headers: HTTPHeaders?
    /// The error underneath, when there was one (a file system error, the library's own).
    public var cause: (any Error & Sendable)?

    public init(
        _ code: Code, url: URL?, detail: String? = nil, headers: HTTPHeaders? = nil,
        cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.url = url
        self.detail = detail
        self.headers = headers
        self.cause = cause
    }

    /// The HTTP status, when the error is one.
    public var status: Int? { code.statusCode }

    public var description: String {
        var text = url.map { "\($0.absoluteString): \(code)" } ?? code.description
        if let detail, !detail.isEmpty { text += " (\(detail))" }
        return text
    }

    /// `50000000` as "50 MB", `1500000` as "1.5 MB": powers of 1000, as a config writes sizes.
    static func megabytes(_ bytes: Int64) -> String {
        let tenths = (Double(bytes) / 100_000).rounded()
        let whole = tenths.truncatingRemainder(dividingBy: 10) == 0
        return whole ? "\(Int64(tenths / 10)) MB" : "\(tenths / 10) MB"
    }
}

extension URL {
    /// Whether a transport may fetch this URL: only http and https with a host.
    public var isFetchable: Bool {
        guard let scheme = scheme?.lowercased() else { return false }
        return (scheme == "http" || scheme == "https") && !(host ?? "").isEmpty
    }
}

extension TransportError {
    /// The error for a URL that is not http or https, or nil when it may be fetched.
    public static func checkScheme(_ url: URL) -> TransportError? {
        if url.isFetchable { return nil }
        guard let scheme = url.scheme, !scheme.isEmpty else { return TransportError(.invalidURL, url: url) }
        if ["http", "https"].contains(scheme.lowercased()) {
            return TransportError(.invalidURL, url: url, detail: "no host")
        }
        return TransportError(.unsupportedScheme(scheme), url: url)
    }
}
