import Foundation
import MediaFetchCore

/// Where and how the `s3` sink stores: the endpoint and bucket, the key layout under a prefix, the credentials,
/// and the upload settings. Read from the config by ``init(options:environment:)``.
public struct S3Configuration: Sendable {
    /// How a bucket is named in a request's URL.
    public enum Addressing: String, Sendable, CaseIterable {
        /// `https://endpoint/bucket/key`: what S3-compatible stores (SeaweedFS, MinIO) expect.
        case path
        /// `https://bucket.endpoint/key`: AWS's own.
        case virtualHost = "virtual-host"
    }

    /// The smallest part S3 accepts (every part but the last).
    public static let minimumPartSize: Int64 = 5 << 20
    /// The most parts one object may have.
    public static let maximumParts: Int64 = 10_000
    public static let defaultPartSize: Int64 = 64 << 20
    public static let defaultRegion = "us-east-1"

    /// Scheme, host and port (no path): `https://s3.us-east-1.amazonaws.com`, `http://127.0.0.1:8333`.
    public var endpoint: URL
    public var bucket: String
    public var region: String
    /// Keys start with it; empty, or ending in `/`.
    public var prefix: String
    public var layout: LayoutTemplate
    public var collection: CollectionOptions
    public var credentials: SigV4Signer.Credentials
    /// Where each credential came from, for messages that must not show it: `access-key-id`, `AWS_ACCESS_KEY_ID`.
    public var credentialOrigins: [String: String]
    public var addressing: Addressing
    /// Objects larger than this go up as a multipart upload of parts this size.
    public var partSize: Int64
    /// Parts of one object sent at once.
    public var partConcurrency: Int
    /// `x-amz-storage-class`; nil leaves it to the bucket.
    public var storageClass: String?
    /// Whether ``S3Sink/prepare()`` creates a missing bucket.
    public var createBucket: Bool

    public init(
        endpoint: URL? = nil,
        bucket: String,
        region: String = S3Configuration.defaultRegion,
        prefix: String = "",
        layout: LayoutTemplate,
        collection: CollectionOptions = S3Sink.collectionDefaults,
        credentials: SigV4Signer.Credentials,
        credentialOrigins: [String: String] = [:],
        addressing: Addressing? = nil,
        partSize: Int64 = S3Configuration.defaultPartSize,
        partConcurrency: Int = 4,
        storageClass: String? = nil,
        createBucket: Bool = false
    ) {
        self.endpoint = endpoint ?? Self.awsEndpoint(region: region)
        self.bucket = bucket
        self.region = region
        self.prefix = Self.normalized(prefix: prefix)
        self.layout = layout
        self.collection = collection
        self.credentials = credentials
        self.credentialOrigins = credentialOrigins
        self.addressing = addressing ?? (endpoint == nil ? .virtualHost : .path)
        self.partSize = partSize
        self.partConcurrency = max(1, partConcurrency)
        self.storageClass = storageClass
        self.createBucket = createBucket
    }

    /// `https://s3.<region>.amazonaws.com`.
    public static func awsEndpoint(region: String) -> URL {
        URL(string: "https://s3.\(region).amazonaws.com") ?? URL(fileURLWithPath: "/")
    }

    /// `a/b` and `/a/b/` as `a/b/`; empty stays empty.
    static func normalized(prefix: String) -> String {
        let parts = prefix.split(separator: "/").map { SafeName.component(String($0)) }
        return parts.isEmpty ? "" : parts.joined(separator: "/") + "/"
    }

    /// Reads the sink's validated options; credentials left out come from `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN` in `environment`.
    /// - Throws: ``ConfigError`` at the key that is wrong; for missing credentials at the section, naming both
    ///   ways to give them.
    public init(options: PluginOptions, environment: [String: String]) throws(ConfigError) {
        guard let bucket = options.string("bucket"), Self.isValidBucket(bucket) else {
            throw options.error(
                "bucket",
                "\"\(options.string("bucket") ?? "")\" is not a bucket name: 3 to 63 lower-case letters, digits, "
                    + "dots and hyphens, starting and ending with a letter or digit")
        }
        let layout: LayoutTemplate
        do {
            layout = try LayoutTemplate(options.string("layout") ?? LayoutTemplate.defaultLayout)
        } catch {
            throw options.error("layout", error.message)
        }
        let region = options.string("region") ?? Self.defaultRegion
        guard !region.isEmpty, region.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
            throw options.error("region", "\"\(region)\" is not a region name (us-east-1, eu-central-1, ...)")
        }
        let endpoint = options.url("endpoint")
        if let endpoint, !(endpoint.path.isEmpty || endpoint.path == "/") || endpoint.query != nil {
            throw options.error(
                "endpoint",
                "the endpoint is scheme, host and port only (http://127.0.0.1:8333); the bucket and "
                    + "prefix have keys of their own")
        }
        var origins: [String: String] = [:]
        func credential(_ key: String, _ variable: String) -> String? {
            if let value = options.string(key), !value.isEmpty {
                origins[key] = "the sink's \(key)"
                return value
            }
            if let value = environment[variable], !value.isEmpty {
                origins[key] = variable
                return value
            }
            return nil
        }
        guard let keyID = credential("access-key-id", "AWS_ACCESS_KEY_ID"),
            let secret = credential("secret-access-key", "AWS_SECRET_ACCESS_KEY")
        else {
            throw options.error(
                nil,
                "no credentials for bucket \(bucket): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the "
                    + "environment, or access-key-id and secret-access-key in the sink (${VAR} reads a variable)")
        }
        let token = credential("session-token", "AWS_SESSION_TOKEN")
        let partSize = Int64(options.integer("part-size") ?? Int(Self.defaultPartSize))
        guard partSize >= Self.minimumPartSize else {
            throw options.error("part-size", "S3 accepts parts of 5 MiB and more (every part but the last)")
        }
        let storageClass = options.string("storage-class")
        if let storageClass, storageClass.isEmpty || !storageClass.allSatisfy({ $0.isASCII && !$0.isWhitespace }) {
            throw options.error("storage-class", "\"\(storageClass)\" is not a storage class (STANDARD, ...)")
        }
        self.init(
            endpoint: endpoint,
            bucket: bucket,
            region: region,
            prefix: options.string("prefix") ?? "",
            layout: layout,
            collection: try CollectionOptions(options: options, defaults: S3Sink.collectionDefaults),
            credentials: SigV4Signer.Credentials(accessKeyID: keyID, secretAccessKey: secret, sessionToken: token),
            credentialOrigins: origins,
            addressing: options.string("addressing").flatMap(Addressing.init(rawValue:)),
            partSize: partSize,
            partConcurrency: options.integer("part-concurrency") ?? 4,
            storageClass: storageClass,
            createBucket: options.bool("create-bucket") ?? false
        )
    }

    /// S3's rules for a bucket name that works with both addressing styles.
    static func isValidBucket(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (3...63).contains(bytes.count) else { return false }
        let allowed = bytes.allSatisfy {
            ($0 >= UInt8(ascii: "a") && $0 <= UInt8(ascii: "z")) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        }
        let edge: (UInt8) -> Bool = { $0 != UInt8(ascii: "-") && $0 != UInt8(ascii: ".") }
        return allowed && bytes.first.map(edge) == true && bytes.last.map(edge) == true
    }
}
