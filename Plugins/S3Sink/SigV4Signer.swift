import Foundation
import MediaFetchCore

/// AWS Signature Version 4, as S3 and every S3-compatible store check it: the canonical request, the string to
/// sign and the `Authorization` header, computed here with libcrypto's HMAC-SHA256. Tested against AWS's
/// published test suite and against a live store.
///
/// S3's flavour: the path is signed as sent (already percent-encoded once, never normalised or encoded twice),
/// and the payload's SHA-256 travels in `x-amz-content-sha256`, which the caller adds (the suite's generic
/// service has no such header).
public struct SigV4Signer: Sendable {
    /// An access key, its secret, and the session token of temporary credentials.
    public struct Credentials: Sendable, Hashable {
        public var accessKeyID: String
        public var secretAccessKey: String
        public var sessionToken: String?

        public init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }
    }

    /// Every step of one signature, so that a test can compare each with the suite's.
    public struct Signature: Sendable, Hashable {
        public var canonicalRequest: String
        public var stringToSign: String
        public var authorization: String
        /// The headers to send: the request's own, plus `x-amz-date`, `x-amz-security-token` when there is a
        /// session token, and `Authorization`.
        public var headers: HTTPHeaders
    }

    /// The SHA-256 of an empty payload, hex.
    public static let emptyPayloadHash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

    public var credentials: Credentials
    public var region: String
    public var service: String

    public init(credentials: Credentials, region: String, service: String = "s3") {
        self.credentials = credentials
        self.region = region
        self.service = service
    }

    /// Signs a request.
    /// - Parameters:
    ///   - method: `GET`, `PUT`, ...
    ///   - host: the `Host` header's value as the transport sends it (`127.0.0.1:8333`, `bucket.s3.amazonaws.com`).
    ///   - path: the path as sent, percent-encoded (`/bucket/My%20Song.m4a`).
    ///   - query: the query as sent, without `?`; nil for none.
    ///   - headers: the headers to sign besides `host` and `x-amz-date` (all of them are signed).
    ///   - payloadHash: the body's SHA-256, hex.
    ///   - date: the signing time.
    public func sign(
        method: String, host: String, path: String, query: String?, headers: HTTPHeaders, payloadHash: String,
        date: Date
    ) -> Signature {
        let stamp = Self.timestamp(date)
        let day = String(stamp.prefix(8))
        var sent = headers
        sent.set("X-Amz-Date", stamp)
        if let token = credentials.sessionToken { sent.set("X-Amz-Security-Token", token) }
        var canonical: [String: [String]] = ["host": [Self.canonicalValue(host)]]
        for (name, value) in sent { canonical[name.lowercased(), default: []].append(Self.canonicalValue(value)) }
        let names = canonical.keys.sorted()
        let signedHeaders = names.joined(separator: ";")
        let headerLines = names.map { "\($0):" + (canonical[$0] ?? []).joined(separator: ",") + "\n" }.joined()
        let canonicalRequest = [
            method, Self.canonicalPath(path), Self.canonicalQuery(query), headerLines, signedHeaders, payloadHash,
        ].joined(separator: "\n")
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = [
            "AWS4-HMAC-SHA256", stamp, scope, SHA256.hex(of: Data(canonicalRequest.utf8)),
        ].joined(separator: "\n")
        var key = HMACSHA256.authenticate(day, key: Array(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [region, service, "aws4_request"] { key = HMACSHA256.authenticate(part, key: key) }
        let signature = HMACSHA256.hex(HMACSHA256.authenticate(stringToSign, key: key))
        let authorization =
            "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders), "
            + "Signature=\(signature)"
        sent.set("Authorization", authorization)
        return Signature(
            canonicalRequest: canonicalRequest, stringToSign: stringToSign, authorization: authorization,
            headers: sent)
    }

    /// `20150830T123600Z`, in UTC.
    public static func timestamp(_ date: Date) -> String {
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return String(format: "%04d", parts.year ?? 0) + two(parts.month) + two(parts.day) + "T" + two(parts.hour)
            + two(parts.minute) + two(parts.second) + "Z"
    }

    private static let calendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }()

    /// A header value with its ends trimmed and runs of spaces made one.
    static func canonicalValue(_ value: String) -> String {
        value.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }

    /// The path with every byte outside the unreserved set encoded once; bytes already encoded stay as they are.
    static func canonicalPath(_ path: String) -> String {
        guard !path.isEmpty else { return "/" }
        return path.split(separator: "/", omittingEmptySubsequences: false)
            .map { encode(decode(String($0))) }.joined(separator: "/")
    }

    /// The query's pairs decoded, encoded strictly, and sorted by name, then value; `uploads` is `uploads=`.
    static func canonicalQuery(_ query: String?) -> String {
        guard let query, !query.isEmpty else { return "" }
        let pairs = query.split(separator: "&").map { pair -> (String, String) in
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = encode(decode(String(parts[0])))
            let value = parts.count > 1 ? encode(decode(String(parts[1]))) : ""
            return (name, value)
        }
        return pairs.sorted { $0.0 == $1.0 ? $0.1 < $1.1 : $0.0 < $1.0 }.map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
    }

    /// Percent-encodes every byte but `A-Z a-z 0-9 - . _ ~`, in upper-case hex: SigV4's rule.
    public static func encode(_ bytes: [UInt8]) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` with `%XX` turned into its byte; a `%` without two hex digits stays.
    static func decode(_ text: String) -> [UInt8] {
        let input = Array(text.utf8)
        var output: [UInt8] = []
        var index = 0
        while index < input.count {
            if input[index] == UInt8(ascii: "%"), index + 2 < input.count,
                let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(input[index])
                index += 1
            }
        }
        return output
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
