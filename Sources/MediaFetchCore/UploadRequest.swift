import Foundation

/// A PUT or POST whose body comes from a range of a file or from a small buffer: an object store's upload. The
/// answer is small (status, headers, a short XML or JSON body) and is buffered.
public struct UploadRequest: Sendable {
    /// The methods an upload may use.
    ///
    /// An ``OpenEnumeration``: more methods may come in a later version, so a `switch` over them needs a `default`.
    public struct Method: OpenEnumeration {
        /// The method as sent: `PUT`.
        public let rawValue: String

        private init(_ rawValue: String) { self.rawValue = rawValue }

        public static let put = Self("PUT")
        public static let post = Self("POST")

        public static let allCases: [Self] = [.put, .post]
    }

    /// Where the body comes from.
    public enum Body: Sendable, Hashable {
        /// `length` bytes of the file at `url` from byte `offset`, read as they are sent (a transport with a
        /// ``Transport/maxUploadBodyBytes`` may read that much into memory first).
        case file(URL, offset: Int64, length: Int64)
        /// Bytes already in memory; for small bodies (a multipart upload's completion list).
        case bytes(Data)

        /// How many bytes the body holds: the `Content-Length` a transport sends.
        public var length: Int64 {
            switch self {
            case .file(_, _, let length): length
            case .bytes(let data): Int64(data.count)
            }
        }
    }

    public var method: Method
    public var url: URL
    /// Sent as given (an object store's signature covers them); a transport adds `Content-Length` itself.
    public var headers: HTTPHeaders
    public var body: Body
    /// Overrides the transport's total timeout for this request.
    public var timeout: Duration?
    /// An answer body larger than this is an error rather than a memory hazard.
    public var maxResponseBytes: Int

    public init(
        method: Method = .put,
        url: URL,
        headers: HTTPHeaders = [:],
        body: Body,
        timeout: Duration? = nil,
        maxResponseBytes: Int = 1 << 20
    ) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
        self.maxResponseBytes = maxResponseBytes
    }
}
