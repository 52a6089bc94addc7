import Foundation
import MediaFetchCore

/// What went wrong talking to the object store, with what to do about it. Credentials are never part of it:
/// messages name where a credential came from (`AWS_SECRET_ACCESS_KEY`, the sink's `secret-access-key`), never
/// its value.
public struct S3Error: Error, Sendable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case signatureMismatch
        case unknownAccessKey
        case noSuchBucket
        case accessDenied
        case clockSkew
        case exists
        case unreachable
        case answer(status: Int, code: String?)
    }

    private let code: Code
    /// What happened and what to do, for a person.
    public let message: String
    /// The error underneath (a transport's), when there was one.
    public let cause: (any Error & Sendable)?

    private init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { message }

    /// The HTTP status of an answer the store refused with, when there was one.
    public var status: Int? {
        if case .answer(let status, _) = code { return status }
        return nil
    }

    /// The store's error code (`SlowDown`, `NoSuchKey`), when it sent one.
    public var storeCode: String? {
        switch code {
        case .answer(_, let storeCode): storeCode
        case .signatureMismatch: "SignatureDoesNotMatch"
        case .unknownAccessKey: "InvalidAccessKeyId"
        case .noSuchBucket: "NoSuchBucket"
        case .accessDenied: "AccessDenied"
        case .clockSkew: "RequestTimeTooSkewed"
        case .exists, .unreachable: nil
        }
    }

    /// The endpoint could not be reached (a refused connection, a name that does not resolve, a timeout).
    public var isUnreachable: Bool { code == .unreachable }
    /// The key holds another object, which is never overwritten.
    public var isExistingObject: Bool { code == .exists }

    static func unreachable(_ endpoint: URL, _ error: TransportError) -> S3Error {
        // A timeout's own text suggests longer timeouts; a store that says nothing at all needs another address.
        let what = error.code == .timedOut
            ? "the object store at \(endpoint.absoluteString) did not answer in time ("
                + (error.detail ?? "timed out")
            : "cannot reach the object store at \(endpoint.absoluteString) (\(error.code)"
                + (error.detail.map { ": \($0)" } ?? "")
        return S3Error(
            .unreachable, what + "): check the sink's endpoint (the store's S3 address and port), and that the store runs",
            cause: error)
    }

    static func exists(_ location: String) -> S3Error {
        S3Error(
            .exists,
            "\(location) already holds another object (another size or SHA-256); it is never overwritten: delete "
                + "it, or store under another prefix")
    }

    /// The error an answer carries, read from its status and its XML `Error` (HEAD answers have no body).
    static func answer(
        _ response: HTTPResponse, doing operation: String, configuration: S3Configuration, now: Date = Date()
    ) -> S3Error {
        let xml = S3XML.parse(response.body)
        let storeCode = xml?.text("Code")
        let storeMessage = xml?.text("Message").map { " (\($0))" } ?? ""
        let origins = configuration.credentialOrigins
        let bucket = configuration.bucket
        let endpoint = configuration.endpoint.absoluteString
        switch storeCode {
        case "SignatureDoesNotMatch":
            return S3Error(
                .signatureMismatch,
                "the store at \(endpoint) refused the signature of \(operation) (SignatureDoesNotMatch): the secret "
                    + "access key from \(origins["secret-access-key"] ?? "the sink") does not belong to the access key "
                    + "id from \(origins["access-key-id"] ?? "the sink"); check that pair (the secret is never shown)")
        case "InvalidAccessKeyId":
            // A session token the store does not expect (one left in AWS_SESSION_TOKEN) is refused this way too.
            let token = configuration.credentials.sessionToken == nil
                ? "" : ", and the session token from \(origins["session-token"] ?? "the sink") (unset it if the store "
                    + "needs none)"
            return S3Error(
                .unknownAccessKey,
                "the store at \(endpoint) does not know the access key id from \(origins["access-key-id"] ?? "the sink") "
                    + "(InvalidAccessKeyId): check it\(token), and that the endpoint is the store it belongs to")
        case "NoSuchBucket":
            return S3Error(
                .noSuchBucket,
                "bucket \(bucket) does not exist at \(endpoint) (NoSuchBucket): create it, or set create-bucket: "
                    + "true in the sink")
        case "AccessDenied":
            return S3Error(
                .accessDenied,
                "access denied to \(operation) in bucket \(bucket) (AccessDenied\(storeMessage)): the credentials "
                    + "from \(origins["access-key-id"] ?? "the sink") need to list, read, write and abort uploads "
                    + "under the prefix")
        case "RequestTimeTooSkewed":
            let server =
                xml?.text("ServerTime").flatMap(Self.isoDate) ?? response.headers["Date"].flatMap(Self.httpDate)
            let skew = server.map { " by about \(Int(abs(now.timeIntervalSince($0)).rounded())) s" } ?? ""
            return S3Error(
                .clockSkew,
                "this machine's clock differs from the store's\(skew) (RequestTimeTooSkewed; S3 allows 15 minutes): "
                    + "set the clock (timedatectl set-ntp true, or your system's NTP) and run again")
        default:
            if storeCode == nil, response.status == 403 {
                return S3Error(
                    .accessDenied,
                    "the store at \(endpoint) refused \(operation) (HTTP 403): check the credentials from "
                        + "\(origins["access-key-id"] ?? "the sink") and that they may use bucket \(bucket)")
            }
            if storeCode == nil, response.status == 404, operation.hasPrefix("listing") {
                // A store answers a missing bucket with NoSuchBucket; a bare 404 (an empty one may be a HEAD's, a
                // page is a web server's) may also be an endpoint that is no S3 API at all.
                guard response.body.isEmpty else {
                    // Not NoSuchBucket: creating a bucket at an address that is not a store would not help.
                    return S3Error(
                        .answer(status: 404, code: nil),
                        "\(endpoint) answered \(operation) with HTTP 404 and a page that is no S3 error: check that the "
                            + "sink's endpoint is the store's S3 address and port (bucket \(bucket))")
                }
                return S3Error(
                    .noSuchBucket,
                    "bucket \(bucket) does not exist at \(endpoint) (HTTP 404): create it, or set create-bucket: true "
                        + "in the sink")
            }
            return S3Error(
                .answer(status: response.status, code: storeCode),
                "the store at \(endpoint) answered \(operation) with HTTP \(response.status)"
                    + (storeCode.map { " \($0)" } ?? "") + storeMessage)
        }
    }

    static func isoDate(_ text: String) -> Date? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text)
    }

    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
