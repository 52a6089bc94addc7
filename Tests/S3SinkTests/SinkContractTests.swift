import CurlTransport
import Foundation
import MediaFetchCore
import MediaFetchTesting
import S3Sink
import Synchronization
import Testing

extension SeaweedFSTests {
    /// The s3 sink keeps the public ``SinkContract`` against a real SeaweedFS: each clause's root folder gets a
    /// bucket of its own, and the inspector reads every object back through the S3 API (ListObjectsV2 and GET).
    struct S3SinkContractTests {
        @Test func theS3SinkKeepsTheSinkContract() async throws {
            try await withSeaweedFS { store in
                let transports = TransportPool()
                let reading = try CurlTransport(.init(concurrency: 4))
                transports.add(reading)
                let made = Mutex<Set<String>>([])
                let inspector = SinkContract.Inspector(reading: { root in
                    let configuration = try Self.configuration(for: root, store: store)
                    let client = S3Client(configuration: configuration, transport: reading)
                    // A clause may inspect before any sink prepared the bucket.
                    if made.withLock({ $0.insert(configuration.bucket).inserted }) { try? await client.createBucket() }
                    var contents: [String: Data] = [:]
                    for object in try await client.objects(prefix: "") {
                        contents[client.location(object.key)] = try await client.get(object.key)
                    }
                    return contents
                })
                do {
                    try await SinkContract.run(inspector: inspector) { root in
                        let (sink, transport) = try store.sink(try Self.configuration(for: root, store: store))
                        transports.add(transport)
                        return sink
                    }
                } catch {
                    await transports.shutdownAll()
                    throw error
                }
                await transports.shutdownAll()
            }
        }

        /// A bucket named after the clause's folder, so that a clause's sinks and its inspector share it.
        static func configuration(for root: URL, store: SeaweedFS) throws -> S3Configuration {
            let folder = root.deletingLastPathComponent().lastPathComponent.lowercased()
            let name = "c-" + String(folder.filter { $0.isLetter || $0.isNumber }.suffix(30))
            return try store.configuration(bucket: name, layout: LayoutTemplate.defaultLayout)
        }
    }
}

/// The transports a test made, shut down at its end.
final class TransportPool: Sendable {
    private let transports = Mutex<[CurlTransport]>([])

    func add(_ transport: CurlTransport) { transports.withLock { $0.append(transport) } }

    func shutdownAll() async {
        for transport in transports.withLock({ $0 }) { await transport.shutdown() }
    }
}
