import Foundation
import MediaFetchCore

/// The S3 calls the sink makes, each signed with ``SigV4Signer`` and sent through the run's ``Transport``, so a
/// test that swaps the transport sees every one. Keys are whole keys, the prefix included.
///
/// Every call is retried as the download section says (``DownloadPolicy``: attempts, full-jitter backoff,
/// `Retry-After`, the retry budget) when the store answers `SlowDown`, 500, 502, 503, 504 or 429, or the
/// connection fails or times out; other answers are the caller's to read.
public final class S3Client: Sendable {
    /// What a HEAD of an object tells.
    public struct ObjectInfo: Sendable, Hashable {
        public var size: Int64
        /// The `x-amz-meta-sha256` the sink stores with every object; nil for an object stored otherwise.
        public var sha256: String?
        public var contentType: String?
        /// Every `x-amz-meta-*` header, by the name after the prefix, as the store sent it.
        public var metadata: [String: String]
    }

    /// An object a listing shows.
    public struct ListedObject: Sendable, Hashable {
        public var key: String
        public var size: Int64
    }

    /// A multipart upload that was started and neither completed nor aborted.
    public struct OpenUpload: Sendable, Hashable {
        public var key: String
        public var uploadID: String
        /// When the store says it was started (its clock), when it says.
        public var initiated: Date?

        public init(key: String, uploadID: String, initiated: Date? = nil) {
            self.key = key
            self.uploadID = uploadID
            self.initiated = initiated
        }
    }

    /// How a write that must not overwrite ended.
    public enum WriteOutcome: Sendable, Hashable {
        case created
        /// The key held an object already (`If-None-Match: *` answered 412); nothing was written.
        case keyTaken
    }

    public let configuration: S3Configuration
    private let transport: any Transport
    private let policy: DownloadPolicy
    private let signer: SigV4Signer
    /// The signing time; tests move it to see the store refuse a skewed clock.
    private let clock: @Sendable () -> Date

    public init(
        configuration: S3Configuration, transport: any Transport, policy: DownloadPolicy = DownloadPolicy(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.configuration = configuration
        self.transport = transport
        self.policy = policy
        self.clock = clock
        signer = SigV4Signer(credentials: configuration.credentials, region: configuration.region)
    }

    /// The largest body the transport uploads (``Transport/maxUploadBodyBytes``), or `nil`.
    var maxUploadBodyBytes: Int64? { transport.maxUploadBodyBytes }

    /// `s3://bucket/key`, for messages and the ledger.
    public func location(_ key: String) -> String { "s3://\(configuration.bucket)/\(key)" }

    // MARK: Bucket

    /// Lists at most one key under the prefix: the cheapest call that proves the endpoint answers, the
    /// credentials are accepted and the bucket exists.
    /// - Throws: ``S3Error`` saying which of those failed.
    public func checkBucket() async throws {
        let query = "list-type=2&max-keys=1&prefix=" + SigV4Signer.encode(Array(configuration.prefix.utf8))
        // At start-up: a store that does not answer in this time fails the run now, not after every retry's timeout.
        let response = try await send(
            .get, key: nil, query: query, operation: "listing the bucket", timeout: Self.startupTimeout)
        guard response.status == 200 else { throw error(response, "listing the bucket") }
    }

    /// Creates the bucket (in the configured region); an existing bucket of the same owner is no error.
    public func createBucket() async throws {
        var body = Data()
        if configuration.region != S3Configuration.defaultRegion {
            body = Data(
                ("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>"
                    + configuration.region.xmlEscaped + "</LocationConstraint></CreateBucketConfiguration>").utf8)
        }
        let response = try await write(
            .put, key: nil, query: nil, headers: [:], body: .bytes(body), payloadHash: SHA256.hex(of: body),
            operation: "creating the bucket")
        let code = S3XML.parse(response.body)?.text("Code")
        guard response.status == 200 || code == "BucketAlreadyOwnedByYou" else {
            throw error(response, "creating the bucket")
        }
    }

    // MARK: Objects

    /// The object's size and metadata, or nil when the key holds none.
    public func head(_ key: String) async throws -> ObjectInfo? {
        let response = try await send(.head, key: key, query: nil, operation: "checking \(location(key))")
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw error(response, "checking \(location(key))") }
        var metadata: [String: String] = [:]
        for (name, value) in response.headers where name.lowercased().hasPrefix("x-amz-meta-") {
            metadata[String(name.lowercased().dropFirst("x-amz-meta-".count))] = value
        }
        return ObjectInfo(
            size: response.headers["Content-Length"].flatMap { Int64($0) } ?? -1, sha256: metadata["sha256"],
            contentType: response.headers["Content-Type"], metadata: metadata)
    }

    /// The object's bytes, buffered: for small objects (tests, a manifest).
    public func get(_ key: String) async throws -> Data? {
        let response = try await send(.get, key: key, query: nil, operation: "reading \(location(key))")
        if response.status == 404 { return nil }
        guard response.status == 200 else { throw error(response, "reading \(location(key))") }
        return response.body
    }

    /// Streams the object into `file` through the transport's download (never held in memory).
    /// - Returns: the object's size, or nil when the key holds none.
    public func download(_ key: String, to file: URL) async throws -> Int64? {
        let (url, host, path) = address(key: key, query: nil)
        let signed = signer.sign(
            method: "GET", host: host, path: path, query: nil,
            headers: ["x-amz-content-sha256": SigV4Signer.emptyPayloadHash], payloadHash: SigV4Signer.emptyPayloadHash,
            date: clock())
        do {
            return try await transport.download(
                DownloadRequest(url: url, destination: file, headers: signed.headers)
            ) { _ in }.fileSize
        } catch let error as TransportError where error.status == 404 {
            return nil
        }
    }

    /// A single PUT of `body`; with `exclusive`, sent with `If-None-Match: *` so that an existing object stays.
    public func put(
        _ key: String, body: UploadRequest.Body, payloadHash: String, headers: HTTPHeaders, exclusive: Bool
    ) async throws -> WriteOutcome {
        var sent = headers
        if exclusive { sent.set("If-None-Match", "*") }
        let operation = "storing \(location(key))"
        let response = try await write(
            .put, key: key, query: nil, headers: sent, body: body, payloadHash: payloadHash, operation: operation)
        if exclusive && response.status == 412 { return .keyTaken }
        guard response.status == 200 else { throw error(response, operation) }
        return .created
    }

    /// Starts a multipart upload; the headers (type, metadata, storage class) become the object's.
    public func createMultipartUpload(_ key: String, headers: HTTPHeaders) async throws -> String {
        let operation = "starting a multipart upload of \(location(key))"
        let response = try await write(
            .post, key: key, query: "uploads", headers: headers, body: .bytes(Data()),
            payloadHash: SigV4Signer.emptyPayloadHash, operation: operation)
        guard response.status == 200, let id = S3XML.parse(response.body)?.text("UploadId"), !id.isEmpty else {
            throw error(response, operation)
        }
        return id
    }

    /// Sends one part from a range of `file`; answers its ETag.
    public func uploadPart(
        _ key: String, uploadID: String, number: Int, file: URL, offset: Int64, length: Int64, payloadHash: String
    ) async throws -> String {
        let operation = "sending part \(number) of \(location(key))"
        let response = try await write(
            .put, key: key, query: "partNumber=\(number)&uploadId=" + SigV4Signer.encode(Array(uploadID.utf8)),
            headers: [:], body: .file(file, offset: offset, length: length), payloadHash: payloadHash,
            operation: operation)
        guard response.status == 200, let etag = response.headers["ETag"] else { throw error(response, operation) }
        return etag
    }

    /// Completes a multipart upload from its parts' ETags, in order; the object appears whole now, or not at all.
    /// With `exclusive`, `If-None-Match: *` asks the store not to replace an existing object.
    public func completeMultipartUpload(
        _ key: String, uploadID: String, etags: [String], exclusive: Bool
    ) async throws -> WriteOutcome {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for (index, etag) in etags.enumerated() {
            xml += "<Part><PartNumber>\(index + 1)</PartNumber><ETag>\(etag.xmlEscaped)</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let body = Data(xml.utf8)
        let operation = "completing the multipart upload of \(location(key))"
        let response = try await write(
            .post, key: key, query: "uploadId=" + SigV4Signer.encode(Array(uploadID.utf8)),
            headers: exclusive ? ["If-None-Match": "*"] : [:], body: .bytes(body), payloadHash: SHA256.hex(of: body),
            operation: operation)
        if exclusive && response.status == 412 { return .keyTaken }
        // S3 may answer 200 and put the error in the body, once the completion failed after the headers went out.
        guard response.status == 200, S3XML.parse(response.body)?.name != "Error" else {
            throw error(response, operation)
        }
        return .created
    }

    /// Aborts a multipart upload: its parts are deleted; one that is already gone is no error.
    public func abortMultipartUpload(_ key: String, uploadID: String) async throws {
        let operation = "aborting the multipart upload of \(location(key))"
        let response = try await send(
            .delete, key: key, query: "uploadId=" + SigV4Signer.encode(Array(uploadID.utf8)), operation: operation)
        guard [200, 204, 404].contains(response.status) else { throw error(response, operation) }
    }

    /// Every multipart upload under `prefix` that is still open, page by page.
    public func openUploads(prefix: String) async throws -> [OpenUpload] {
        var uploads: [OpenUpload] = []
        var markers: (key: String, id: String)?
        while true {
            var query = "prefix=" + SigV4Signer.encode(Array(prefix.utf8)) + "&uploads"
            if let markers {
                query +=
                    "&key-marker=" + SigV4Signer.encode(Array(markers.key.utf8)) + "&upload-id-marker="
                    + SigV4Signer.encode(Array(markers.id.utf8))
            }
            let response = try await send(.get, key: nil, query: query, operation: "listing open multipart uploads")
            guard response.status == 200, let xml = S3XML.parse(response.body) else {
                throw error(response, "listing open multipart uploads")
            }
            for upload in xml.all("Upload") {
                if let key = upload.text("Key"), let id = upload.text("UploadId") {
                    let initiated = upload.text("Initiated").flatMap(S3Error.isoDate)
                    uploads.append(OpenUpload(key: key, uploadID: id, initiated: initiated))
                }
            }
            guard xml.text("IsTruncated") == "true", let key = xml.text("NextKeyMarker"),
                let id = xml.text("NextUploadIdMarker"), markers.map({ $0 != (key, id) }) ?? true
            else { return uploads }
            markers = (key, id)
        }
    }

    /// Every object under `prefix`, page by page (ListObjectsV2).
    public func objects(prefix: String) async throws -> [ListedObject] {
        var objects: [ListedObject] = []
        var token: String?
        while true {
            var query = "list-type=2&prefix=" + SigV4Signer.encode(Array(prefix.utf8))
            if let token { query += "&continuation-token=" + SigV4Signer.encode(Array(token.utf8)) }
            let response = try await send(.get, key: nil, query: query, operation: "listing the bucket")
            guard response.status == 200, let xml = S3XML.parse(response.body) else {
                throw error(response, "listing the bucket")
            }
            for entry in xml.all("Contents") {
                if let key = entry.text("Key") {
                    objects.append(ListedObject(key: key, size: entry.text("Size").flatMap { Int64($0) } ?? -1))
                }
            }
            guard xml.text("IsTruncated") == "true", let next = xml.text("NextContinuationToken"), next != token
            else { return objects }
            token = next
        }
    }

    /// Deletes an object (tests; the sink itself never deletes).
    public func delete(_ key: String) async throws {
        let response = try await send(.delete, key: key, query: nil, operation: "deleting \(location(key))")
        guard [200, 204, 404].contains(response.status) else { throw error(response, "deleting \(location(key))") }
    }

    // MARK: Requests

    /// The URL and `Host` of a request for `key` (the bucket itself when nil).
    func address(key: String?, query: String?) -> (url: URL, host: String, path: String) {
        let endpoint = configuration.endpoint
        var host = endpoint.host ?? ""
        if let port = endpoint.port { host += ":\(port)" }
        let encodedKey =
            key.map {
                "/"
                    + $0.split(separator: "/", omittingEmptySubsequences: false)
                    .map { SigV4Signer.encode(Array($0.utf8)) }.joined(separator: "/")
            } ?? "/"
        var path: String
        switch configuration.addressing {
        case .path:
            path = "/" + configuration.bucket + (key == nil ? "" : encodedKey)
        case .virtualHost:
            host = configuration.bucket + "." + host
            path = encodedKey
        }
        if path.isEmpty { path = "/" }
        let text = (endpoint.scheme ?? "https") + "://" + host + path + (query.map { "?" + $0 } ?? "")
        return (URL(string: text) ?? endpoint, host, path)
    }

    /// How long the first request of a run (``checkBucket()``) waits for an answer: a store that accepts the
    /// connection and says nothing (a wrong port, a firewall that drops) fails the run in this time, exit 2.
    static let startupTimeout: Duration = .seconds(10)

    private func send(
        _ method: HTTPRequest.Method, key: String?, query: String?, operation: String, timeout: Duration? = nil
    ) async throws -> HTTPResponse {
        try await retrying(operation, retriesTimeouts: timeout == nil) {
            let (url, host, path) = self.address(key: key, query: query)
            let signed = self.signer.sign(
                method: method.rawValue, host: host, path: path, query: query,
                headers: ["x-amz-content-sha256": SigV4Signer.emptyPayloadHash],
                payloadHash: SigV4Signer.emptyPayloadHash, date: self.clock())
            return try await self.transport.send(
                HTTPRequest(
                    method: method, url: url, headers: signed.headers, timeout: timeout, acceptsCompression: false))
        }
    }

    private func write(
        _ method: UploadRequest.Method, key: String?, query: String?, headers: HTTPHeaders, body: UploadRequest.Body,
        payloadHash: String, operation: String
    ) async throws -> HTTPResponse {
        try await retrying(operation) {
            let (url, host, path) = self.address(key: key, query: query)
            var sent = headers
            sent.set("x-amz-content-sha256", payloadHash)
            let signed = self.signer.sign(
                method: method.rawValue, host: host, path: path, query: query, headers: sent,
                payloadHash: payloadHash, date: self.clock())
            return try await self.transport.upload(
                UploadRequest(method: method, url: url, headers: signed.headers, body: body)
            ) { _ in }
        }
    }

    /// Runs `attempt` until it gets an answer that is not worth another try, within the download policy.
    private func retrying(
        _ operation: String, retriesTimeouts: Bool = true, _ attempt: @Sendable () async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        let started = ContinuousClock.now
        var failures = 0
        while true {
            let wait: Duration
            do {
                let response = try await attempt()
                guard Self.isWorthRetrying(response) else { return response }
                failures += 1
                wait = policy.delay(attempt: failures, retryAfter: response.headers["Retry-After"])
                guard failures <= policy.retries, ContinuousClock.now - started + wait <= policy.retryBudget else {
                    return response
                }
            } catch let error as TransportError {
                if error.code == .cancelled || Task.isCancelled { throw CancellationError() }
                failures += 1
                wait = policy.delay(attempt: failures, retryAfter: nil)
                guard DownloadPolicy.isRetryable(error), retriesTimeouts || error.code != .timedOut,
                    failures <= policy.retries,
                    ContinuousClock.now - started + wait <= policy.retryBudget
                else {
                    if error.code == .connectionFailed || error.code == .timedOut {
                        throw S3Error.unreachable(configuration.endpoint, error)
                    }
                    throw error
                }
            }
            try await Task.sleep(for: wait)
        }
    }

    /// `SlowDown` (503), the other 5xx a store answers when busy or restarting, and 429.
    static func isWorthRetrying(_ response: HTTPResponse) -> Bool {
        if [429, 500, 502, 503, 504].contains(response.status) { return true }
        guard response.status >= 400 else { return false }
        let code = S3XML.parse(response.body)?.text("Code")
        return code == "SlowDown" || code == "InternalError" || code == "RequestTimeout"
    }

    private func error(_ response: HTTPResponse, _ operation: String) -> S3Error {
        S3Error.answer(response, doing: operation, configuration: configuration, now: clock())
    }
}
