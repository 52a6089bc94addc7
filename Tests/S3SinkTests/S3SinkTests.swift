import CurlTransport
import FoundationTransport
import Foundation
import MediaFetchCore
import MediaFetchTesting
import S3Sink
import Synchronization
import Testing

extension SeaweedFSTests {
    /// The s3 sink against a real SeaweedFS: large multipart objects, keys never overwritten, metadata, and errors a
    /// person can act on.
    struct S3SinkTests {
        static let song = MediaItem(
            id: "42", kind: "song", title: "Ünïcode Sóng", artist: "The Band", album: "Album", trackNumber: 3,
            previewURL: URL(string: "https://audio.example/42.m4a"))

        /// `size` bytes of a repeated random block, written to a file in `folder`.
        static func file(_ size: Int64, seed: UInt64, in folder: URL) throws -> (URL, String) {
            var generator = SplitMix64(seed: seed)
            var block = Data(count: 1 << 20)
            block.withUnsafeMutableBytes { buffer in
                for index in stride(from: 0, to: buffer.count - 7, by: 8) {
                    buffer.storeBytes(of: generator.next(), toByteOffset: index, as: UInt64.self)
                }
            }
            let url = folder.appendingPathComponent("staged-\(seed)")
            _ = FileManager.default.createFile(atPath: url.path, contents: nil)
            let handle = try FileHandle(forWritingTo: url)
            var hasher = SHA256()
            var written: Int64 = 0
            while written < size {
                let piece = block.prefix(Int(min(Int64(block.count), size - written)))
                try handle.write(contentsOf: piece)
                piece.withUnsafeBytes { hasher.update($0) }
                written += Int64(piece.count)
            }
            try handle.close()
            return (url, hasher.finalize())
        }

        static func staged(_ url: URL, _ size: Int64, _ sha256: String) -> StagedFile {
            StagedFile(url: url, size: size, sha256: sha256, sourceURL: song.previewURL ?? url)
        }

        static func scratch() throws -> URL {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            return folder
        }

        /// A 512 MiB file goes up as 8 parts of 64 MiB and reads back byte for byte, while the process's memory
        /// grows by far less than the file; no multipart upload stays open.
        @Test func aLargeFileIsOneMultipartObjectWithFlatMemory() async throws {
            let folder = try Self.scratch()
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withSeaweedFS { store in
                let size: Int64 = 512 << 20
                let (url, sha256) = try await onItsOwnThread { try Self.file(size, seed: 7, in: folder) }
                let (sink, transport) = try store.sink(try store.configuration(bucket: SeaweedFS.bucketName()))
                defer { Task { await transport.shutdown() } }
                try await sink.prepare()
                let plan = try await sink.plan(Self.song, asset: .preview)
                let before = ResidentMemory.now()
                let peak = PeakMemory(before)
                let location = try await withThrowingTaskGroup(of: String?.self) { group in
                    group.addTask { try await sink.store(Self.staged(url, size, sha256), as: plan) }
                    group.addTask {
                        while !Task.isCancelled {
                            peak.sample()
                            try? await Task.sleep(for: .milliseconds(20))
                        }
                        return nil
                    }
                    let stored = try await group.next() ?? nil
                    group.cancelAll()
                    return stored
                }
                let key = sink.key(for: plan.relativePath)
                #expect(location == "s3://\(sink.configuration.bucket)/\(key)")
                let grown = peak.value - before
                // The whole test run shares this process's memory, so the bound catches a file held whole; the
                // tool's own peak is measured on a child process (S3RunTests).
                #expect(grown < size / 2, "resident memory grew by \(grown >> 20) MiB while 512 MiB went up")
                let info = try #require(try await sink.client.head(key))
                #expect(info.size == size && info.sha256 == sha256)
                let back = folder.appendingPathComponent("back")
                #expect(try await sink.client.download(key, to: back) == size)
                let backSHA = try await onItsOwnThread { try SHA256File.hex(back) }
                #expect(backSHA == sha256, "the object's bytes are not the file's")
                #expect(try await sink.client.openUploads(prefix: "").isEmpty, "a multipart upload stayed open")
                #expect(!FileManager.default.fileExists(atPath: url.path), "the staged file was left behind")
            }
        }

        /// The foundation transport stores a multipart object too, its parts kept within the transport's largest
        /// body (8 MiB) whatever `part-size` says: the object reads back byte for byte, no upload stays open, the
        /// staging folder holds nothing more.
        @Test func theFoundationTransportStoresAMultipartObject() async throws {
            let folder = try Self.scratch()
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withSeaweedFS { store in
                let size: Int64 = 20 << 20
                let (url, sha256) = try await onItsOwnThread { try Self.file(size, seed: 11, in: folder) }
                let configuration = try store.configuration(bucket: SeaweedFS.bucketName(), partSize: 64 << 20)
                let transport = WatchedTransport(FoundationTransport(.init(concurrency: 4)))
                defer { Task { await transport.shutdown() } }
                let sink = S3Sink(
                    configuration: configuration, transport: transport,
                    policy: DownloadPolicy(retryBase: .milliseconds(50)))
                try await sink.prepare()
                let plan = try await sink.plan(Self.song, asset: .preview)
                _ = try await sink.store(Self.staged(url, size, sha256), as: plan)
                let info = try #require(try await sink.client.head(sink.key(for: plan.relativePath)))
                #expect(info.size == size && info.sha256 == sha256)
                let back = try #require(try await sink.client.get(sink.key(for: plan.relativePath)))
                #expect(SHA256.hex(of: back) == sha256, "the object's bytes are not the file's")
                #expect(try await sink.client.openUploads(prefix: "").isEmpty, "a multipart upload stayed open")
                #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
                let limit = try #require(transport.maxUploadBodyBytes)
                #expect(transport.fileBodies.sorted() == [size - 2 * limit, limit, limit])

                // A transport that sends less than S3's smallest part cannot carry a multipart upload: the sink
                // says so before it opens one.
                let small = WatchedTransport(FoundationTransport(), limit: 4 << 20)
                defer { Task { await small.shutdown() } }
                let smallSink = S3Sink(configuration: configuration, transport: small)
                let (six, sixSHA) = try await onItsOwnThread { try Self.file(6 << 20, seed: 12, in: folder) }
                let refused = try await smallSink.plan(Self.song, asset: .artwork)
                let error = await #expect(throws: SinkError.self) {
                    _ = try await smallSink.store(Self.staged(six, 6 << 20, sixSHA), as: refused)
                }
                #expect(error?.description.contains("use the curl transport") == true, "\(String(describing: error))")
                #expect(small.fileBodies.isEmpty)
                #expect(try await sink.client.openUploads(prefix: "").isEmpty, "a multipart upload was opened")
            }
        }

        /// A killed run's journal names its own upload by id: recovery aborts that one and leaves another state
        /// folder's upload at the same key (in progress) open.
        @Test func recoveryAbortsTheJournalsUploadsAndNoOtherAtTheSameKey() async throws {
            let folder = try Self.scratch()
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withSeaweedFS { store in
                let configuration = try store.configuration(bucket: SeaweedFS.bucketName(), prefix: "p/")
                let (first, transport) = try store.sink(configuration)
                defer { Task { await transport.shutdown() } }
                try await first.prepare()
                let key = "p/Artist/Song.m4a"
                let journal = UploadJournal(path: folder.appendingPathComponent("s3-uploads.jsonl").path)
                // What a run killed after its upload began leaves: the start and the id, no end.
                try journal.starting(key)
                let killed = try await first.client.createMultipartUpload(key, headers: [:])
                journal.created(key, uploadID: killed)
                let others = try await first.client.createMultipartUpload(key, headers: [:])
                let sink = S3Sink(configuration: configuration, transport: transport, journal: journal)
                let lines = try await sink.discardUnfinished()
                #expect(lines == ["aborted the unfinished multipart upload of \(sink.client.location(key))"])
                #expect(try await sink.client.openUploads(prefix: "").map(\.uploadID) == [others])
                #expect(journal.unfinished().isEmpty)
                try await sink.client.abortMultipartUpload(key, uploadID: others)
            }
        }

        /// A key is never overwritten: storing the same bytes again (a run that lost its ledger) is a success that
        /// writes nothing, other bytes under the same key fail naming the object, and the object stays as it was;
        /// every object carries its type and metadata.
        @Test func aKeyIsNeverOverwritten() async throws {
            let folder = try Self.scratch()
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withSeaweedFS { store in
                let bucket = SeaweedFS.bucketName()
                for partSize: Int64 in [64 << 20, 5 << 20] {
                    let configuration = try store.configuration(
                        bucket: bucket, prefix: "p\(partSize)", partSize: partSize)
                    let (first, transport) = try store.sink(configuration)
                    defer { Task { await transport.shutdown() } }
                    let (url, sha256) = try Self.file(12 << 20, seed: 1, in: folder)
                    let plan = try await first.plan(Self.song, asset: .preview)
                    _ = try await first.store(Self.staged(url, 12 << 20, sha256), as: plan)

                    let (next, _) = try store.sink(configuration)
                    let again = try await next.plan(Self.song, asset: .preview)
                    #expect(again == plan)
                    let (same, _) = try Self.file(12 << 20, seed: 1, in: folder)
                    _ = try await next.store(Self.staged(same, 12 << 20, sha256), as: again)
                    let (other, otherSHA) = try Self.file(12 << 20, seed: 2, in: folder)
                    let error = await #expect(throws: SinkError.self) {
                        _ = try await next.store(Self.staged(other, 12 << 20, otherSHA), as: again)
                    }
                    #expect(error?.description.contains("already holds another object") == true)
                    let key = next.key(for: plan.relativePath)
                    let info = try #require(try await next.client.head(key))
                    #expect(info.sha256 == sha256, "the object was replaced")
                    #expect(info.contentType == "audio/mp4")
                    #expect(info.metadata["artist"] == "The Band" && info.metadata["album"] == "Album")
                    #expect(info.metadata["source-url"] == "https://audio.example/42.m4a")
                    #expect(info.metadata["title"]?.hasPrefix("=?UTF-8?B?") == true, "a non-ASCII title is RFC 2047")
                    #expect(try await next.client.openUploads(prefix: "").isEmpty)
                    #expect(
                        try await next.keep(
                            again,
                            stored: StoredRecord(
                                location: next.client.location(key), size: 12 << 20, sha256: sha256)))
                    #expect(
                        try await !next.keep(
                            again,
                            stored: StoredRecord(
                                location: next.client.location(key), size: 12 << 20, sha256: otherSHA)))
                }
            }
        }

        /// Each way the store refuses says what happened and what to do, and never shows the secret.
        @Test func refusalsSayWhatToDo() async throws {
            try await withSeaweedFS { store in
                let bucket = SeaweedFS.bucketName()
                let (good, transport) = try store.sink(try store.configuration(bucket: bucket))
                defer { Task { await transport.shutdown() } }
                try await good.prepare()
                let silent = try SilentListener()
                let web = try MockCatalogServer()
                let wrongSecret = "wrong-secret-that-must-not-show"
                let cases: [(String, S3Configuration, @Sendable () -> Date, [String])] = [
                    (
                        "wrong secret", try store.configuration(bucket: bucket, secret: wrongSecret), { Date() },
                        ["SignatureDoesNotMatch", "secret access key", "the test's secret"]
                    ),
                    (
                        "unknown key", try store.configuration(bucket: bucket, keyID: "AKNOBODY"), { Date() },
                        ["InvalidAccessKeyId", "does not know the access key id"]
                    ),
                    (
                        "missing bucket", try store.configuration(bucket: "no-such-bucket-here", createBucket: false),
                        { Date() }, ["does not exist", "create-bucket: true"]
                    ),
                    (
                        "skewed clock", try store.configuration(bucket: bucket),
                        { Date().addingTimeInterval(3 * 3600) },
                        ["clock", "RequestTimeTooSkewed"]
                    ),
                    (
                        "unreachable",
                        try store.configuration(bucket: bucket, endpoint: URL(string: "http://127.0.0.1:9")),
                        { Date() }, ["cannot reach the object store at http://127.0.0.1:9"]
                    ),
                    (
                        // Fails at start-up's timeout, not after every retry's (it took two minutes).
                        "silent", try store.configuration(bucket: bucket, endpoint: silent.baseURL), { Date() },
                        ["did not answer in time", "timed out after", "S3 address and port"]
                    ),
                    (
                        "not an S3 API", try store.configuration(bucket: bucket, endpoint: web.baseURL), { Date() },
                        ["HTTP 404 and a page that is no S3 error", "S3 address and port"]
                    ),
                ]
                for (name, configuration, clock, words) in cases {
                    let policy = DownloadPolicy(retries: 1, retryBase: .milliseconds(10))
                    let (sink, other) = try store.sink(configuration, policy: policy, clock: clock)
                    let started = ContinuousClock.now
                    let error = await #expect(throws: (any Error).self, "\(name)") { try await sink.prepare() }
                    // One start-up timeout and no retry of it (the transport ends an idle try after 30 s).
                    #expect(ContinuousClock.now - started < .seconds(20), "\(name)")
                    let text = error.map { String(describing: $0) } ?? ""
                    for word in words { #expect(text.contains(word), "\(name): \(text)") }
                    #expect(
                        !text.contains(wrongSecret) && !text.contains(SeaweedFS.secretKey), "\(name) shows a secret")
                    await other.shutdown()
                }
                let reader = try store.configuration(bucket: bucket, keyID: SeaweedFS.readerKey)
                let (readOnly, other) = try store.sink(reader)
                let plan = try await readOnly.plan(Self.song, asset: .preview)
                let folder = try Self.scratch()
                defer { try? FileManager.default.removeItem(at: folder) }
                let (url, sha256) = try Self.file(1000, seed: 3, in: folder)
                let denied = await #expect(throws: SinkError.self) {
                    _ = try await readOnly.store(Self.staged(url, 1000, sha256), as: plan)
                }
                #expect(denied?.description.contains("access denied") == true, "\(String(describing: denied))")
                await other.shutdown()
            }
        }
    }
}

/// The process's resident memory, from `/proc/self/statm`.
enum ResidentMemory {
    static func now() -> Int64 {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int64(fields[1]) else { return 0 }
        return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
    }
}

/// The highest resident memory seen.
final class PeakMemory: Sendable {
    private let highest: Atomic<Int64>

    init(_ start: Int64) { highest = Atomic(start) }

    func sample() { highest.max(ResidentMemory.now(), ordering: .relaxed) }

    var value: Int64 { highest.load(ordering: .relaxed) }
}

enum SHA256File {
    static func hex(_ url: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        while let piece = try handle.read(upToCount: 1 << 20), !piece.isEmpty {
            piece.withUnsafeBytes { hasher.update($0) }
        }
        return hasher.finalize()
    }
}

extension SeaweedFSTests {
    /// Uploads cut off by the network, and a store that says SlowDown: retried with the download section's backoff,
    /// and the objects end whole, once.
    struct S3UploadFaultTests {
        /// A connection reset in the middle of a single PUT and in the middle of a multipart upload's part.
        @Test func aConnectionResetDuringAnUploadIsRetried() async throws {
            let folder = try SeaweedFSTests.S3SinkTests.scratch()
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withSeaweedFS { store in
                let proxy = try ResettingProxy(
                    upstreamPort: UInt16(store.endpoint.port ?? 0), resetAfter: 3 << 20)
                defer { proxy.stop() }
                let endpoint = try #require(URL(string: "http://127.0.0.1:\(proxy.port)"))
                for (size, partSize) in [(Int64(20 << 20), Int64(64 << 20)), (Int64(24 << 20), Int64(5 << 20))] {
                    proxy.arm()
                    let resetsBefore = proxy.resets
                    let configuration = try store.configuration(
                        bucket: SeaweedFS.bucketName(), partSize: partSize, endpoint: endpoint)
                    let (sink, transport) = try store.sink(configuration)
                    let (url, sha256) = try await onItsOwnThread {
                        try SeaweedFSTests.S3SinkTests.file(size, seed: UInt64(size), in: folder)
                    }
                    let plan = try await sink.plan(SeaweedFSTests.S3SinkTests.song, asset: .preview)
                    _ = try await sink.store(SeaweedFSTests.S3SinkTests.staged(url, size, sha256), as: plan)
                    #expect(proxy.resets == resetsBefore + 1, "no connection was reset during the upload")
                    let key = sink.key(for: plan.relativePath)
                    let info = try #require(try await sink.client.head(key))
                    #expect(info.size == size && info.sha256 == sha256)
                    let back = folder.appendingPathComponent("back-\(size)")
                    _ = try await sink.client.download(key, to: back)
                    let backSHA = try await onItsOwnThread { try SHA256File.hex(back) }
                    #expect(backSHA == sha256, "the object is not the file after a reset")
                    #expect(try await sink.client.openUploads(prefix: "").isEmpty)
                    await transport.shutdown()
                }
            }
        }

        /// The store answers the first two uploads with 503 SlowDown (through a transport that stands in front of the
        /// real one, as a test's scripted transport sees every request): the sink waits and tries again, and stores.
        @Test func slowDownIsRetriedWithBackoff() async throws {
            let folder = try SeaweedFSTests.S3SinkTests.scratch()
            defer { try? FileManager.default.removeItem(at: folder) }
            try await withSeaweedFS { store in
                let real = try CurlTransport(.init(concurrency: 4))
                let busy = WatchedTransport(real, slowDowns: 2)
                let sink = S3Sink(
                    configuration: try store.configuration(bucket: SeaweedFS.bucketName()), transport: busy,
                    policy: DownloadPolicy(retries: 3, retryBase: .milliseconds(20)))
                let (url, sha256) = try SeaweedFSTests.S3SinkTests.file(100_000, seed: 9, in: folder)
                let plan = try await sink.plan(SeaweedFSTests.S3SinkTests.song, asset: .preview)
                _ = try await sink.store(SeaweedFSTests.S3SinkTests.staged(url, 100_000, sha256), as: plan)
                #expect(busy.refused == 2 && busy.uploads == 3, "\(busy.refused) refused of \(busy.uploads)")
                #expect(try await sink.client.head(sink.key(for: plan.relativePath))?.sha256 == sha256)

                let always = WatchedTransport(real, slowDowns: 100)
                let stubborn = S3Sink(
                    configuration: try store.configuration(bucket: SeaweedFS.bucketName()), transport: always,
                    policy: DownloadPolicy(retries: 2, retryBase: .milliseconds(10)))
                try await stubborn.prepare()
                let (other, otherSHA) = try SeaweedFSTests.S3SinkTests.file(1000, seed: 10, in: folder)
                let error = await #expect(throws: SinkError.self) {
                    _ = try await stubborn.store(SeaweedFSTests.S3SinkTests.staged(other, 1000, otherSHA), as: plan)
                }
                #expect(error?.description.contains("SlowDown") == true, "\(String(describing: error))")
                #expect(always.uploads == 3, "retries 2 means 3 attempts, not \(always.uploads)")
                await real.shutdown()
            }
        }
    }
}

/// A transport in front of another: it notes the length of each upload body sent from a file, can report another
/// ``Transport/maxUploadBodyBytes`` than the inner one's, and can answer its first `slowDowns` uploads of objects
/// (the requests carrying the sink's SHA-256 metadata) itself, with S3's 503 SlowDown.
final class WatchedTransport: Transport {
    private let inner: any Transport
    private let slowDowns: Int
    private let limit: Int64?
    private let counts = Mutex((uploads: 0, refused: 0))
    private let lengths = Mutex<[Int64]>([])

    init(_ inner: any Transport, slowDowns: Int = 0, limit: Int64? = nil) {
        self.inner = inner
        self.slowDowns = slowDowns
        self.limit = limit
    }

    /// Uploads of objects so far, and those answered with SlowDown.
    var uploads: Int { counts.withLock { $0.uploads } }
    var refused: Int { counts.withLock { $0.refused } }
    /// The lengths of the file bodies sent, in the order they were asked for.
    var fileBodies: [Int64] { lengths.withLock { $0 } }
    var maxConcurrentTransfers: Int { inner.maxConcurrentTransfers }
    var maxUploadBodyBytes: Int64? { limit ?? inner.maxUploadBodyBytes }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse { try await inner.send(request) }

    func download(
        _ request: DownloadRequest, progress: @escaping @Sendable (DownloadProgress) -> Void
    ) async throws -> DownloadResult {
        try await inner.download(request, progress: progress)
    }

    func upload(_ request: UploadRequest, progress: @escaping @Sendable (Int64) -> Void) async throws -> HTTPResponse {
        if case .file(_, _, let length) = request.body { lengths.withLock { $0.append(length) } }
        guard request.headers["x-amz-meta-sha256"] != nil else {
            return try await inner.upload(request, progress: progress)
        }
        let refuse = counts.withLock { counts -> Bool in
            counts.uploads += 1
            guard counts.refused < slowDowns else { return false }
            counts.refused += 1
            return true
        }
        guard refuse else { return try await inner.upload(request, progress: progress) }
        let body =
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code>"
            + "<Message>Please reduce your request rate.</Message></Error>"
        return HTTPResponse(
            status: 503, headers: ["Content-Type": "application/xml"], url: request.url, body: Data(body.utf8))
    }

    func shutdown() async { await inner.shutdown() }
}

/// What the sink decides without a store: a key S3 would refuse is said at plan time, before anything is fetched.
@Suite struct S3PlanTests {
    @Test func aKeyLongerThanS3TakesFailsTheItemBeforeItIsFetched() async throws {
        let configuration = S3Configuration(
            bucket: "plan-test",
            prefix: String(repeating: String(repeating: "p", count: 200) + "/", count: 5),
            layout: try LayoutTemplate("{title}.{ext}"),
            collection: CollectionOptions(writesManifest: false, writesPlaylist: false),
            credentials: .init(accessKeyID: "key", secretAccessKey: "secret"), credentialOrigins: [:])
        let sink = S3Sink(configuration: configuration, transport: ScriptedTransport())
        let short = MediaItem(id: "1", title: "Short", previewURL: URL(string: "https://audio.example/1.m4a"))
        #expect(try await sink.plan(short, asset: .preview).relativePath == "Short.m4a")
        let long = MediaItem(
            id: "2", title: String(repeating: "t", count: 200), previewURL: URL(string: "https://audio.example/2.m4a"))
        let error = await #expect(throws: SinkError.self) { try await sink.plan(long, asset: .preview) }
        #expect(error?.description.contains("S3 takes at most 1024") == true)
        #expect(error?.description.contains("shorten the sink's prefix or layout") == true)
    }
}

/// The upload journal's reading, without a store.
@Suite struct UploadJournalTests {
    @Test func whatAKilledRunLeftIsKnownByIdOrByItsStartsTime() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("journal-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let journal = UploadJournal(path: folder.appendingPathComponent("s3-uploads.jsonl").path)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        try journal.starting("a", at: start)
        journal.created("a", uploadID: "id-a")
        try journal.starting("b", at: start)
        try journal.starting("c", at: start)
        journal.created("c", uploadID: "id-c")
        journal.ended("c", uploadID: "id-c")
        try journal.starting("d", at: start)
        journal.ended("d", uploadID: nil)
        // A line a kill cut short is skipped.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: journal.path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"created":"b","i"#.utf8))
        try handle.close()
        #expect(
            journal.unfinished() == [
                .init(key: "a", uploadIDs: ["id-a"], startsWithoutID: []),
                .init(key: "b", uploadIDs: [], startsWithoutID: [start]),
            ])
        let unfinished = journal.unfinished()
        let upload = { (key: String, id: String, initiated: Date?) in
            S3Client.OpenUpload(key: key, uploadID: id, initiated: initiated)
        }
        #expect(unfinished[0].owns(upload("a", "id-a", nil)))
        #expect(!unfinished[0].owns(upload("a", "someone-else", start)))
        #expect(unfinished[1].owns(upload("b", "x", start.addingTimeInterval(2))))
        #expect(!unfinished[1].owns(upload("b", "x", start.addingTimeInterval(-3600))))
        #expect(!unfinished[1].owns(upload("b", "x", nil)))
        try journal.clear()
        #expect(journal.unfinished().isEmpty)
    }
}
