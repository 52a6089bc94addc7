import Foundation

/// Does HTTP for everything in a run: the source's API calls and the workers' downloads.
///
/// Implementation requirements:
/// * Only `http` and `https` URLs are fetched, redirects included; anything else is
///   ``TransportError/Code/unsupportedScheme(_:)`` before a byte is sent.
/// * ``download(_:progress:)`` streams the body into the destination file and never holds a whole
///   file in memory. With `resumeFrom > 0` it sends `Range: bytes=N-` and `If-Range` (when the
///   request has a validator); on 206 it appends after the kept bytes, on 200 it truncates the file
///   and writes the whole body, setting `restarted`.
/// * A body shorter than its `Content-Length` is ``TransportError/Code/truncated(expected:received:)``, never a
///   success; the bytes that did arrive stay in the file.
/// * A status other than 200 or 206 from `download`, after redirects, is
///   ``TransportError/Code/httpStatus(_:)`` with the response's headers, and leaves the
///   destination's kept bytes unchanged.
/// * `request.onResponse`, when set, is called once a 200 or 206 arrives, before its body is written.
/// * Task cancellation reaches the transfer: a cancelled `send` or `download` stops promptly,
///   frees its connection and throws ``TransportError/Code/cancelled`` (or `CancellationError`).
/// * The same instance serves many concurrent calls, and reuses connections between them.
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

    /// Releases connections and threads. Called once, when the run is over.
    func shutdown() async
}

extension Transport {
    public func shutdown() async {}
}

/// Why a transfer did not succeed.
public struct TransportError: Error, Sendable, CustomStringConvertible {
    public enum Code: Sendable, Hashable {
        case invalidURL
        case unsupportedScheme(String)
        case tooManyRedirects(Int)
        case timedOut
        case connectionFailed
        case httpStatus(Int)
        case truncated(expected: Int64, received: Int64)
        /// A resume was answered with a range of another version of the file (the server ignored
        /// `If-Range`): the kept bytes must go.
        case changedDuringResume
        case bodyTooLarge(limit: Int64)
        case fileError
        case cancelled
        case other
    }

    public var code: Code
    public var url: URL?
    /// The underlying library's own words, when it had some.
    public var detail: String?
    /// The response's headers, for an ``Code/httpStatus(_:)`` (a 416's `Content-Range`, a 429's `Retry-After`).
    public var headers: HTTPHeaders?

    public init(_ code: Code, url: URL?, detail: String? = nil, headers: HTTPHeaders? = nil) {
        self.code = code
        self.url = url
        self.detail = detail
        self.headers = headers
    }

    /// The HTTP status, when the error is one.
    public var status: Int? {
        if case .httpStatus(let status) = code { status } else { nil }
    }

    public var description: String {
        let what: String
        switch code {
        case .invalidURL: what = "not a valid URL"
        case .unsupportedScheme(let scheme):
            what = "refused scheme \"\(scheme)\": only http and https are fetched, redirects included"
        case .tooManyRedirects(let limit):
            what = "more than \(limit) redirects (raise max-redirects if this is expected)"
        case .timedOut: what = "timed out (the transport's timeout options allow more if the server is slow)"
        case .connectionFailed: what = "could not connect"
        case .httpStatus(let status): what = "HTTP \(status)"
        case .truncated(let expected, let received):
            what = "body ended after \(received) of \(expected) bytes"
        case .changedDuringResume:
            what = "the file changed on the server while resuming (a range of another version came back)"
        case .bodyTooLarge(let limit):
            // A download's limit is the download section's max-size, and a user who hits it needs its name.
            what =
                "larger than the limit of \(limit) bytes (\(Self.megabytes(limit)), download.max-size: raise it, "
                + "or set it to none for no limit)"
        case .fileError: what = "could not write the download to disk"
        case .cancelled: what = "cancelled"
        case .other: what = "transfer failed"
        }
        var text = url.map { "\($0.absoluteString): \(what)" } ?? what
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
