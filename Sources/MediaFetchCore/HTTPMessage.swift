import Foundation

/// A small, buffered HTTP exchange: API calls such as an iTunes search.
public struct HTTPRequest: Sendable {
    /// The methods a request may use.
    ///
    /// An ``OpenEnumeration``: more methods may come in a later version, so a `switch` over them needs a `default`.
    public struct Method: OpenEnumeration {
        /// The method as sent: `GET`.
        public let rawValue: String

        private init(_ rawValue: String) { self.rawValue = rawValue }

        public static let get = Self("GET")
        public static let head = Self("HEAD")
        /// For an object store's clean-up (aborting an unfinished upload); sent without a body.
        public static let delete = Self("DELETE")

        public static let allCases: [Self] = [.get, .head, .delete]
    }

    public var method: Method
    public var url: URL
    public var headers: HTTPHeaders
    /// Overrides the transport's total timeout for this request.
    public var timeout: Duration?
    /// Whether a compressed response encoding may be asked for (yes for JSON, no for media).
    public var acceptsCompression: Bool
    /// A response body larger than this is an error rather than a memory hazard.
    public var maxBodyBytes: Int

    public init(
        method: Method = .get,
        url: URL,
        headers: HTTPHeaders = [:],
        timeout: Duration? = nil,
        acceptsCompression: Bool = true,
        maxBodyBytes: Int = 32 << 20
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.timeout = timeout
        self.acceptsCompression = acceptsCompression
        self.maxBodyBytes = maxBodyBytes
    }
}

/// The answer to an ``HTTPRequest``, whatever its status.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    /// Where the body came from after redirects.
    public var url: URL
    public var body: Data

    public init(status: Int, headers: HTTPHeaders, url: URL, body: Data) {
        self.status = status
        self.headers = headers
        self.url = url
        self.body = body
    }
}

/// What identifies one version of a resource, so that a resumed download does not splice two versions.
public struct Validator: Sendable, Hashable, Codable, CustomStringConvertible {
    public var etag: String?
    public var lastModified: String?

    public init(etag: String? = nil, lastModified: String? = nil) {
        self.etag = etag
        self.lastModified = lastModified
    }

    /// Reads the validator a response carries; nil when it has none.
    public init?(headers: HTTPHeaders) {
        self.init(etag: headers["ETag"], lastModified: headers["Last-Modified"])
        if etag == nil && lastModified == nil { return nil }
    }

    /// The value for `If-Range`: a strong ETag when there is one (RFC 9110 forbids weak ones there),
    /// otherwise the Last-Modified date.
    public var ifRangeValue: String? {
        if let etag, !etag.hasPrefix("W/") { return etag }
        return lastModified
    }

    public var description: String { etag ?? lastModified ?? "none" }

    /// Whether `answer` (a 206's validator) names another version than this one (the one sent in
    /// `If-Range`): strong ETags that differ, or, without ETags, Last-Modified dates that differ.
    public func isContradicted(by answer: Validator?) -> Bool {
        guard let answer else { return false }
        if let sent = etag, let got = answer.etag, !sent.hasPrefix("W/"), !got.hasPrefix("W/") { return sent != got }
        if etag == nil, let sent = lastModified, let got = answer.lastModified { return sent != got }
        return false
    }
}

/// A file given by its path, with the URL it was given as when there was one: a URL is made from the path only when
/// asked for. A run hands its staging files to transports and sinks this way, since a file URL made and then decoded
/// again by each `URL.path` was 4% of a many-small-files run's instructions.
struct FileLocation: Sendable {
    let path: String
    private let given: URL?

    init(path: String) {
        self.path = path
        given = nil
    }

    init(url: URL) {
        path = url.path
        given = url
    }

    var url: URL { given ?? URL(fileURLWithPath: path, isDirectory: false) }
}

/// A streaming GET of one file into a staging file on disk.
public struct DownloadRequest: Sendable {
    public var url: URL
    public var headers: HTTPHeaders
    /// The file the body goes into. The transport creates it if needed.
    ///
    /// A request made with ``init(url:destinationPath:headers:resumeFrom:validator:maxBytes:onResponse:)`` makes
    /// this URL from ``destinationPath`` each time it is read.
    public var destination: URL {
        get { file.url }
        set { file = FileLocation(url: newValue) }
    }
    /// The path of ``destination``, which a transport that opens the file itself should use: a request made from a
    /// path makes its URL only when asked, since a file URL made and decoded again for each file was 4% of a
    /// many-small-files run's instructions.
    public var destinationPath: String {
        get { file.path }
        set { file = FileLocation(path: newValue) }
    }
    private var file: FileLocation
    /// Bytes already in `destination` to keep: when above zero the transport asks for
    /// `Range: bytes=N-` with `If-Range` from `validator`, appends on 206 and starts over on 200.
    public var resumeFrom: Int64
    public var validator: Validator?
    /// Called once when a 200 or 206 answer arrives, before its first body byte is written, so that
    /// what a later resume needs is known even if this transfer never ends.
    public var onResponse: (@Sendable (DownloadResponse) -> Void)?
    /// The largest the whole file may be: a bigger one (by its announced length, or as bytes arrive)
    /// ends the transfer with ``TransportError/Code/bodyTooLarge(limit:)``.
    public var maxBytes: Int64?
    /// Asked at most once, when a 200 answer for a download from byte zero announces its length (the argument):
    /// `true` lets the transport keep the body in memory and return it as ``DownloadResult/contents``, writing
    /// nothing to ``destination``. For small files that are copied elsewhere anyway (an object store's uploads):
    /// they then never touch the disk. A caller that answers `true` has room for that many bytes.
    ///
    /// A transport may never ask (the foundation transport does not) and write the file as always; a caller looks
    /// at ``DownloadResult/contents`` to learn which happened. A transport asks only when it can then keep the
    /// body, so a yes means in memory, unless the transfer fails: then the bytes that arrived are in
    /// ``destination``, as a streamed one's are, so that it resumes alike. It is called on the transport's own
    /// thread, before any of the body: answer at once.
    public var keepInMemory: (@Sendable (_ announcedBytes: Int64) -> Bool)?

    public init(
        url: URL,
        destination: URL,
        headers: HTTPHeaders = [:],
        resumeFrom: Int64 = 0,
        validator: Validator? = nil,
        maxBytes: Int64? = nil,
        onResponse: (@Sendable (DownloadResponse) -> Void)? = nil
    ) {
        self.init(
            url: url, file: FileLocation(url: destination), headers: headers, resumeFrom: resumeFrom,
            validator: validator, maxBytes: maxBytes, onResponse: onResponse)
    }

    /// A request whose file is given by its path (see ``destinationPath``).
    public init(
        url: URL,
        destinationPath: String,
        headers: HTTPHeaders = [:],
        resumeFrom: Int64 = 0,
        validator: Validator? = nil,
        maxBytes: Int64? = nil,
        onResponse: (@Sendable (DownloadResponse) -> Void)? = nil
    ) {
        self.init(
            url: url, file: FileLocation(path: destinationPath), headers: headers, resumeFrom: resumeFrom,
            validator: validator, maxBytes: maxBytes, onResponse: onResponse)
    }

    private init(
        url: URL, file: FileLocation, headers: HTTPHeaders, resumeFrom: Int64, validator: Validator?, maxBytes: Int64?,
        onResponse: (@Sendable (DownloadResponse) -> Void)?
    ) {
        self.url = url
        self.headers = headers
        self.file = file
        self.resumeFrom = resumeFrom
        self.validator = validator
        self.maxBytes = maxBytes
        self.onResponse = onResponse
    }
}

/// The head of a download's answer: enough to resume it later.
public struct DownloadResponse: Sendable, Hashable {
    public var status: Int
    public var validator: Validator?
    /// The size of the whole file when the server said (Content-Length of a 200, the total of a
    /// 206's Content-Range).
    public var expectedSize: Int64?
    /// True when the body starts over from byte zero although a resume was asked for.
    public var restarts: Bool

    public init(status: Int, validator: Validator?, expectedSize: Int64?, restarts: Bool) {
        self.status = status
        self.validator = validator
        self.expectedSize = expectedSize
        self.restarts = restarts
    }
}

/// How a download ended when it ended well (status 200 or 206, every promised byte written).
public struct DownloadResult: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    /// Where the body came from after redirects.
    public var url: URL
    /// Bytes this transfer wrote (or kept in ``contents``).
    public var bytesWritten: Int64
    /// The size of `destination` now: kept bytes plus written ones (the size of ``contents`` when the body was
    /// kept in memory).
    public var fileSize: Int64
    /// The validator of what was downloaded, for a later resume.
    public var validator: Validator?
    /// True when a resume was asked for but the server sent the whole file, so the kept bytes were dropped.
    public var restarted: Bool
    /// The whole body, when the transport kept it in memory (the request's ``DownloadRequest/keepInMemory``
    /// said yes); `destination` was then not written. `nil` when the body is in the file.
    public var contents: Data?

    public init(
        status: Int,
        headers: HTTPHeaders,
        url: URL,
        bytesWritten: Int64,
        fileSize: Int64,
        validator: Validator?,
        restarted: Bool,
        contents: Data? = nil
    ) {
        self.contents = contents
        self.status = status
        self.headers = headers
        self.url = url
        self.bytesWritten = bytesWritten
        self.fileSize = fileSize
        self.validator = validator
        self.restarted = restarted
    }
}

/// A download's progress: bytes in the file so far, out of the expected total when the server said it.
public struct DownloadProgress: Sendable, Hashable {
    public var received: Int64
    public var expected: Int64?

    public init(received: Int64, expected: Int64?) {
        self.received = received
        self.expected = expected
    }
}
