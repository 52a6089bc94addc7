import CurlTransport
import Foundation
import MediaFetchCore
import MediaFetchTesting
import S3Sink
import Testing

typealias SeaweedFS = SeaweedFSServer

/// Every test of this target that starts a SeaweedFS, one at a time: each store takes about 200 MB and a core
/// while it starts, and a dozen at once on two cores slowed the rest of the suite past its own time limits.
@Suite(.serialized) enum SeaweedFSTests {}

/// Runs `body` with a store of its own (``SeaweedFSServer/with(_:)``).
func withSeaweedFS<T: Sendable>(_ body: (SeaweedFSServer) async throws -> T) async throws -> T {
    try await SeaweedFSServer.with(body)
}

extension SeaweedFSServer {
    /// A configuration for `bucket` on this store, with its credentials.
    func configuration(
        bucket: String, prefix: String = "", layout: String = "{title}.{ext}", partSize: Int64 = 64 << 20,
        collection: CollectionOptions = CollectionOptions(writesManifest: false, writesPlaylist: false),
        keyID: String = SeaweedFSServer.accessKey, secret: String = SeaweedFSServer.secretKey,
        createBucket: Bool = true, endpoint: URL? = nil
    ) throws -> S3Configuration {
        S3Configuration(
            endpoint: endpoint ?? self.endpoint, bucket: bucket, prefix: prefix, layout: try LayoutTemplate(layout),
            collection: collection,
            credentials: .init(accessKeyID: keyID, secretAccessKey: secret),
            credentialOrigins: ["access-key-id": "the test's key id", "secret-access-key": "the test's secret"],
            partSize: partSize, createBucket: createBucket)
    }

    /// A sink with a curl transport of its own; the caller shuts the transport down.
    func sink(
        _ configuration: S3Configuration, policy: DownloadPolicy = DownloadPolicy(retryBase: .milliseconds(50)),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) throws -> (S3Sink, CurlTransport) {
        let transport = try CurlTransport(.init(concurrency: 16))
        return (S3Sink(configuration: configuration, transport: transport, policy: policy, clock: clock), transport)
    }

    /// A new bucket's name, unique in this store.
    static func bucketName() -> String { "b-" + UUID().uuidString.lowercased().prefix(18) }
}

struct SeaweedError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs blocking work (writing or hashing a large file) on a thread of its own, so that the task pool, which every
/// test of the run shares, is never held up by it.
func onItsOwnThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}
