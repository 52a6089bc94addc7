import ArchiveSink
import CurlTransport
import DirectorySink
import Foundation
import FoundationTransport
import ITunesSource
import MediaFetchCore
import MediaFetchTesting
import S3Sink
import Synchronization
import Testing

/// Each fault the mock can inject, through the whole pipeline, for every transport and every sink (the s3 sink
/// into a real SeaweedFS, one store for all of its rows).
/// The end state is asserted: stored with exactly the served bytes, or failed with the right reason,
/// and never a stored file that is not the served file.
///
/// Each case also prints one `MATRIX case | transport | sink | outcome` line; the closing note's table
/// is those lines.
struct FaultMatrixTests {
    enum Expected: Sendable {
        case stored
        case failed(containing: String)
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        /// The fault for the n-th request (1-based) of the preview, or of the API when `onAPI`.
        var fault: @Sendable (_ attempt: Int) -> MockFault?
        var onAPI = false
        var expected: Expected
        var policy = DownloadPolicy(retries: 3, retryMaxWait: .seconds(2), retryBase: .milliseconds(20))
        /// How many requests the preview may get at most (a fault that is not worth retrying gets one).
        var maxRequests: Int?

        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "reset mid-body", fault: { $0 == 1 ? .reset(afterBytes: 60_000) : nil }, expected: .stored),
        Case(name: "truncated body", fault: { $0 == 1 ? .truncate(afterBytes: 60_000) : nil }, expected: .stored),
        Case(name: "stall", fault: { $0 == 1 ? .stall(afterBytes: 60_000, seconds: 30) : nil }, expected: .stored),
        Case(name: "slow drip", fault: { _ in .drip(bytesPerSecond: 2_000_000) }, expected: .stored),
        Case(
            name: "5xx burst then success",
            fault: { $0 <= 2 ? .respond(status: [500, 502, 503, 504][$0], headers: [], body: []) : nil },
            expected: .stored),
        Case(
            name: "429 with Retry-After",
            fault: { $0 == 1 ? .respond(status: 429, headers: [("Retry-After", "1")], body: []) : nil },
            expected: .stored),
        Case(
            name: "403 throttling on the API",
            fault: { $0 <= 2 ? .respond(status: 403, headers: [], body: []) : nil }, onAPI: true, expected: .stored),
        Case(
            name: "redirect loop", fault: { _ in .redirect(status: 302, location: "/loop.m4a") },
            expected: .failed(containing: "redirects")),
        Case(
            name: "redirect to a non-http scheme",
            fault: { _ in .redirect(status: 302, location: "ftp://127.0.0.1/x") },
            expected: .failed(containing: "refused scheme")),
        Case(
            name: "ETag change between attempts",
            fault: { $0 == 1 ? .truncate(afterBytes: 60_000) : .changedETag("v2") }, expected: .stored),
        Case(
            name: "Range ignored on retry",
            fault: { $0 == 1 ? .truncate(afterBytes: 60_000) : .ignoreRange }, expected: .stored),
        Case(
            name: "wrong Content-Length every time", fault: { _ in .truncate(afterBytes: 60_000) },
            expected: .failed(containing: "body ended after")),
        Case(name: "keep-alive closed early by the server", fault: { _ in .closeAfterResponse }, expected: .stored),
        Case(
            name: "HTML error page served with 200",
            fault: { _ in
                .respond(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>oops</html>".utf8))
            }, expected: .failed(containing: "not a preview"), maxRequests: 1),
        Case(
            name: "404 is not retried", fault: { _ in .respond(status: 404, headers: [], body: []) },
            expected: .failed(containing: "HTTP 404"), maxRequests: 1),
        Case(
            name: "larger than max-size", fault: { _ in nil }, expected: .failed(containing: "max-size"),
            policy: DownloadPolicy(retries: 1, maxSize: 100_000)),
    ]

    enum TransportKind: String, CaseIterable, Sendable {
        case curl
        case foundation

        func make() throws -> any Transport {
            switch self {
            case .curl: try CurlTransport(.init(concurrency: 4, lowSpeedTime: .seconds(1), maxRedirects: 5))
            case .foundation: FoundationTransport(.init(concurrency: 4, idleTimeout: .seconds(1), maxRedirects: 5))
            }
        }
    }

    enum SinkKind: String, CaseIterable, Sendable {
        case directory
        case tar
        case s3

        /// The sinks the file-system rows use; the s3 rows have a test of their own, which starts the store.
        static let local: [SinkKind] = [.directory, .tar]

        func make(_ folder: URL, transport: any Transport, store: SeaweedFSServer?) throws -> any Sink {
            let layout = try LayoutTemplate("{title}.{ext}")
            switch self {
            case .s3:
                return S3Sink(
                    configuration: try Self.s3Configuration(folder, store: store), transport: transport,
                    policy: DownloadPolicy(retryBase: .milliseconds(20)))
            case .directory:
                return DirectorySink(root: folder.appendingPathComponent("out"), layout: layout)
            case .tar:
                return ArchiveSink(
                    configuration: .init(
                        path: folder.appendingPathComponent("out.tar"), layout: layout,
                        collection: CollectionOptions(writesManifest: false, writesPlaylist: false)))
            }
        }

        /// A bucket of the case's own on the store.
        static func s3Configuration(_ folder: URL, store: SeaweedFSServer?) throws -> S3Configuration {
            guard let store else { throw SinkError("the s3 rows need a store") }
            let name = "m-" + folder.lastPathComponent.lowercased().filter { $0.isLetter || $0.isNumber }.prefix(24)
            return S3Configuration(
                endpoint: store.endpoint, bucket: String(name), layout: try LayoutTemplate("{title}.{ext}"),
                collection: CollectionOptions(writesManifest: false, writesPlaylist: false),
                credentials: .init(accessKeyID: SeaweedFSServer.accessKey, secretAccessKey: SeaweedFSServer.secretKey),
                createBucket: true)
        }

        /// What the sink holds after the run, by name.
        func contents(_ folder: URL, store: SeaweedFSServer?) async throws -> [String: Data] {
            switch self {
            case .s3:
                let transport = try CurlTransport(.init(concurrency: 2))
                let client = S3Client(
                    configuration: try Self.s3Configuration(folder, store: store), transport: transport)
                var files: [String: Data] = [:]
                do {
                    for object in try await client.objects(prefix: "") {
                        files[object.key] = try await client.get(object.key)
                    }
                } catch let error as S3Error where error.storeCode == "NoSuchBucket" {
                    // Nothing was ever stored, so the bucket was never made.
                }
                await transport.shutdown()
                return files
            case .directory:
                return try Self.tree(folder.appendingPathComponent("out"))
            case .tar:
                let archive = folder.appendingPathComponent("out.tar")
                guard FileManager.default.fileExists(atPath: archive.path) else { return [:] }
                let extracted = folder.appendingPathComponent("extracted")
                try FileManager.default.createDirectory(at: extracted, withIntermediateDirectories: true)
                let tar = Process()
                tar.executableURL = try RequiredProgram.gnuTar.locate()
                tar.arguments = ["-xf", archive.path, "-C", extracted.path]
                try tar.run()
                tar.waitUntilExit()
                #expect(tar.terminationStatus == 0, "GNU tar could not read the archive: it is corrupt")
                return try Self.tree(extracted)
            }
        }

        static func tree(_ root: URL) throws -> [String: Data] {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? []
            var files: [String: Data] = [:]
            for name in names { files[name] = try Data(contentsOf: root.appendingPathComponent(name)) }
            return files
        }
    }

    @Test(arguments: cases, TransportKind.allCases)
    func faultEndsAsExpected(_ fault: Case, _ transportKind: TransportKind) async throws {
        for sinkKind in SinkKind.local {
            try await run(fault, transportKind, sinkKind)
        }
    }

    /// Every row with the s3 sink and each transport, uploading through the transport the downloads use, into
    /// one store.
    @Test func faultEndsAsExpectedWithTheS3Sink() async throws {
        try await SeaweedFSServer.with { store in
            for transportKind in TransportKind.allCases {
                for fault in Self.cases {
                    try await run(fault, transportKind, .s3, store: store)
                }
            }
        }
    }

    func run(
        _ fault: Case, _ transportKind: TransportKind, _ sinkKind: SinkKind, store: SeaweedFSServer? = nil
    ) async throws {
        let server = try MockCatalogServer()
        let song = server.catalog.songs[5]
        let attempts = Mutex(0)
        server.setFaultHook { request in
            let targeted = fault.onAPI ? request.path == "/lookup" : request.path == song.previewPath
            guard targeted || (!fault.onAPI && request.path == "/loop.m4a") else { return nil }
            let attempt = attempts.withLock { count -> Int in
                count += 1
                return count
            }
            return fault.fault(attempt)
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("matrix-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }

        let failures = Mutex<[String]>([])
        let source = ITunesSource(
            .init(
                endpoint: server.baseURL, query: .lookup(key: "id", ids: [String(song.trackId)]), pageSize: 5,
                maxItems: 5, requestsPerMinute: 0, throttleRetries: 3, throttleBackoff: .milliseconds(20)))
        let transport = try transportKind.make()
        let summary = await Pipeline(
            source: source, transport: transport, sink: try sinkKind.make(folder, transport: transport, store: store),
            options: .init(
                concurrency: 2, stagingDirectory: folder.appendingPathComponent("staging"),
                sourceName: "itunes", ledger: try Ledger(directory: folder), policy: fault.policy),
            events: { event in
                if case .failed(_, _, let reason) = event { failures.withLock { $0.append(reason) } }
            }
        ).run()

        let stored = try await sinkKind.contents(folder, store: store)
        let served = Data(server.catalog.previewBytes(for: song))
        let outcome: String
        switch fault.expected {
        case .stored:
            #expect(summary.stored == 1, "\(fault.name) \(transportKind) \(sinkKind): \(failures.withLock { $0 })")
            #expect(stored == ["\(song.trackName).m4a": served], "\(fault.name) \(transportKind) \(sinkKind)")
            outcome =
                "stored, bytes equal" + (attempts.withLock { $0 } > 1 ? " (\(attempts.withLock { $0 }) requests)" : "")
        case .failed(let text):
            let reasons = failures.withLock { $0 }
            #expect(summary.failed == 1, "\(fault.name) \(transportKind) \(sinkKind)")
            #expect(reasons.contains { $0.contains(text) }, "\(fault.name) \(transportKind) \(sinkKind): \(reasons)")
            #expect(stored.isEmpty, "\(fault.name) \(transportKind) \(sinkKind): something was stored")
            let url = server.previewURL(for: song).absoluteString
            let reason = reasons.first.map { $0.replacingOccurrences(of: url + ": ", with: "") } ?? "?"
            outcome = "failed: " + reason.prefix(90)
        }
        if let limit = fault.maxRequests {
            #expect(attempts.withLock { $0 } <= limit, "\(fault.name) \(transportKind) \(sinkKind): retried")
        }
        print("MATRIX \(fault.name) | \(transportKind) | \(sinkKind) | \(outcome)")
    }
}
