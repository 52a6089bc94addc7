import Foundation
import MediaFetchCore
import Synchronization
import Testing

/// The runner with in-memory plugins: bounds, ordering, failures, cancellation.
@Suite(.removesScratch)
struct PipelineTests {
    struct ListSource: Source {
        var outputs: [SourceOutput]
        var failAfter: Int?

        func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
            for (index, output) in outputs.enumerated() {
                if index == failAfter { throw SourceError("the catalog went away") }
                try await emit(output)
            }
        }
    }

    /// Writes `size(id)` bytes of the id's digit; can hold transfers until cancelled, fail some, or lie.
    final class FakeTransport: Transport {
        let maxConcurrentTransfers: Int
        let failing: Set<String>
        let holdUntilCancelled: Bool
        let misreportSize: Bool
        /// The status the failing items answer: 404 is final, 503 is tried again.
        let failStatus: Int
        let running = Mutex((now: 0, peak: 0, requests: 0))
        let started: AsyncStream<Void>.Continuation
        let startedStream: AsyncStream<Void>

        init(
            concurrency: Int, failing: Set<String> = [], failStatus: Int = 404, hold: Bool = false,
            misreportSize: Bool = false
        ) {
            maxConcurrentTransfers = concurrency
            self.failing = failing
            self.failStatus = failStatus
            holdUntilCancelled = hold
            self.misreportSize = misreportSize
            (startedStream, started) = AsyncStream.makeStream()
        }

        func send(_ request: HTTPRequest) async throws -> HTTPResponse {
            throw TransportError(.other, url: request.url)
        }

        func download(
            _ request: DownloadRequest, progress: @escaping @Sendable (DownloadProgress) -> Void
        )
            async throws -> DownloadResult
        {
            running.withLock {
                $0.now += 1
                $0.peak = max($0.peak, $0.now)
                $0.requests += 1
            }
            defer { running.withLock { $0.now -= 1 } }
            started.yield()
            let id = request.url.lastPathComponent
            if holdUntilCancelled {
                while !Task.isCancelled { await Task.yield() }
                throw CancellationError()
            }
            // Later items finish first, so completion order differs from source order.
            for _ in 0..<(100 - (Int(id) ?? 0) % 100) { await Task.yield() }
            if failing.contains(id) { throw TransportError(.httpStatus(failStatus), url: request.url) }
            let bytes = Data(repeating: UInt8(ascii: "0") + UInt8((Int(id) ?? 0) % 10), count: 1000 + (Int(id) ?? 0))
            try bytes.write(to: request.destination)
            progress(DownloadProgress(received: Int64(bytes.count), expected: Int64(bytes.count)))
            let size = Int64(bytes.count) + (misreportSize ? 1 : 0)
            return DownloadResult(
                status: 200, headers: [:], url: request.url, bytesWritten: size, fileSize: size,
                validator: nil, restarted: false)
        }
    }

    final class MemorySink: Sink {
        let planned = Mutex<[String]>([])
        let stored = Mutex<[String: Data]>([:])
        /// What ``Pipeline/storesAtOnce`` said to each store.
        let storesAtOnce = Mutex<Set<Int?>>([])
        /// Whether each staged file must come with its SHA-256 (the run asked for digests) or without.
        let expectsDigests: Bool

        init(expectsDigests: Bool = true) {
            self.expectsDigests = expectsDigests
        }

        func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
            planned.withLock { $0.append(item.id) }
            return StoragePlan(item: item.ref, asset: asset, relativePath: "\(item.id).bin")
        }

        func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
            let data = try Data(contentsOf: file.url)
            #expect(file.sha256 == (expectsDigests ? SHA256.hex(of: data) : nil))
            try FileManager.default.removeItem(at: file.url)
            stored.withLock { $0[plan.relativePath] = data }
            storesAtOnce.withLock { _ = $0.insert(Pipeline.storesAtOnce) }
            return plan.relativePath
        }
    }

    static func items(_ count: Int) -> [SourceOutput] {
        (1...count).map { index in
            .item(
                MediaItem(
                    id: String(index), title: "Song \(index)", previewURL: URL(string: "http://127.0.0.1/\(index)")))
        }
    }

    static func staging() -> URL {
        scratchPath("mediafetch-pipeline")
    }

    static func run(
        _ source: any Source, _ transport: FakeTransport, _ sink: MemorySink, staging: URL = staging()
    )
        async -> RunSummary
    {
        await Pipeline(
            source: source, transport: transport, sink: sink,
            // Digests on: the stored files' SHA-256 is checked against the bytes.
            options: .init(
                concurrency: transport.maxConcurrentTransfers, stagingDirectory: staging,
                policy: DownloadPolicy(computesDigests: true))
        ).run()
    }

    @Test func theDefaultPolicyChecksSizesAndTakesNoDigests() async throws {
        let transport = FakeTransport(concurrency: 4)
        let sink = MemorySink(expectsDigests: false)
        let summary = await Pipeline(
            source: ListSource(outputs: Self.items(20)), transport: transport, sink: sink,
            options: .init(concurrency: 4, stagingDirectory: Self.staging())
        ).run()
        #expect(summary.stored == 20)
        #expect(sink.stored.withLock { $0["7.bin"] } == Data(repeating: UInt8(ascii: "7"), count: 1007))
    }

    /// A store learns how many stores of its run can wait at once: the workers beyond the transfer slots.
    @Test func eachStoreSeesHowManyStoresCanWait() async throws {
        let sink = MemorySink()
        let summary = await Self.run(ListSource(outputs: Self.items(20)), FakeTransport(concurrency: 4), sink)
        #expect(summary.stored == 20)
        // 31 a slot (124), unless a third of the process's open files is fewer.
        var limit = rlimit()
        #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        let openFiles = limit.rlim_cur == rlim_t.max ? Int.max : Int(limit.rlim_cur)
        #expect(sink.storesAtOnce.withLock { $0 } == [min(124, openFiles / 3)])
        #expect(Pipeline.storesAtOnce == nil)
    }

    @Test(arguments: [1, 3, 16])
    func concurrencyIsBoundedAndNamesFollowSourceOrder(concurrency: Int) async throws {
        let transport = FakeTransport(concurrency: concurrency)
        let sink = MemorySink()
        let summary = await Self.run(ListSource(outputs: Self.items(40)), transport, sink)
        #expect(summary.stored == 40)
        #expect(summary.exitCode == 0)
        #expect(transport.running.withLock { $0.peak } <= concurrency)
        #expect(sink.planned.withLock { $0 } == (1...40).map(String.init))
        let stored = sink.stored.withLock { $0 }
        #expect(stored["7.bin"] == Data(repeating: UInt8(ascii: "7"), count: 1007))
        #expect(summary.bytes == Int64((1...40).reduce(0) { $0 + 1000 + $1 }))
    }

    @Test func aFailedDownloadIsReportedAndTheRestAreStored() async throws {
        let staging = Self.staging()
        let transport = FakeTransport(concurrency: 4, failing: ["3", "5"])
        let sink = MemorySink()
        let failures = Mutex<[String]>([])
        let summary = await Pipeline(
            source: ListSource(outputs: Self.items(10)), transport: transport, sink: sink,
            options: .init(concurrency: 4, stagingDirectory: staging, policy: DownloadPolicy(computesDigests: true)),
            events: { event in
                if case .failed(let ref, let url, let reason) = event {
                    failures.withLock { $0.append("\(ref.id) \(url?.absoluteString ?? "") \(reason)") }
                }
            }
        ).run()
        #expect(summary.stored == 8)
        #expect(summary.failed == 2)
        #expect(summary.exitCode == 1)
        #expect(failures.withLock { $0.sorted() }.first?.contains("http://127.0.0.1/3: HTTP 404") == true)
        #expect(Pipeline.partialFiles(in: staging).isEmpty)
    }

    @Test func aSizeTheFileDoesNotHaveIsNeverStored() async throws {
        let sink = MemorySink()
        let summary = await Self.run(
            ListSource(outputs: Self.items(3)), FakeTransport(concurrency: 2, misreportSize: true), sink)
        #expect(summary.stored == 0)
        #expect(summary.failed == 3)
        #expect(sink.stored.withLock { $0.isEmpty })
    }

    @Test func aSourceFailureKeepsWhatWasFoundAndExitsThree() async throws {
        let sink = MemorySink()
        let summary = await Self.run(
            ListSource(outputs: Self.items(6), failAfter: 4), FakeTransport(concurrency: 2), sink)
        #expect(summary.stored == 4)
        #expect(summary.sourceError == "the catalog went away")
        #expect(summary.exitCode == 3)
    }

    @Test func skippedAndFailedEntriesFromTheSourceAreCounted() async throws {
        let outputs: [SourceOutput] =
            Self.items(2) + [
                .skipped(ItemRef(id: "p", title: "Podcast"), reason: "no preview URL"),
                .failed(ItemRef(id: "x", title: "line 3"), url: nil, reason: "not a URL"),
                .item(MediaItem(id: "np", title: "No preview")),
            ]
        let summary = await Self.run(ListSource(outputs: outputs), FakeTransport(concurrency: 2), MemorySink())
        #expect(summary.stored == 2)
        #expect(summary.skipped == 2)
        #expect(summary.failed == 1)
        #expect(summary.exitCode == 1)
    }

    @Test func cancellationStopsTransfersAndStoresNothingHalfDone() async throws {
        let staging = Self.staging()
        let transport = FakeTransport(concurrency: 4, hold: true)
        let sink = MemorySink()
        let run = Task { await Self.run(ListSource(outputs: Self.items(20)), transport, sink, staging: staging) }
        // Wait until the bound is reached: every slot holds a transfer that only cancellation ends.
        var started = 0
        for await _ in transport.startedStream {
            started += 1
            if started == 4 { break }
        }
        run.cancel()
        let summary = await run.value
        #expect(summary.interrupted)
        #expect(summary.exitCode == 130)
        #expect(summary.stored == 0)
        #expect(summary.failed == 0)
        #expect(sink.stored.withLock { $0.isEmpty })
        #expect(Pipeline.partialFiles(in: staging).isEmpty)
    }

    @Test func theFailureBudgetStopsARunGoingWrong() async throws {
        let everything = Set((1...40).map(String.init))
        let transport = FakeTransport(concurrency: 2, failing: everything)
        let summary = await Pipeline(
            source: ListSource(outputs: Self.items(40)), transport: transport, sink: MemorySink(),
            options: .init(concurrency: 2, stagingDirectory: Self.staging(), policy: DownloadPolicy(maxFailures: 3))
        ).run()
        #expect(summary.stopReason?.contains("max-failures") == true)
        #expect(!summary.interrupted)
        #expect(summary.sourceError == nil)
        #expect(summary.exitCode == 1)
        // The budget is checked before each new item, so at most the items holding a slot when it is reached
        // fail past it (a slot is given back before its failure is counted).
        #expect((3...5).contains(summary.failed))
    }

    /// With answers worth retrying (503), items wait out delays without a slot, and others start meanwhile.
    /// Once the budget is reached, those waiting are paused instead of tried again, and a retry goes before
    /// items that have not started: the failures stay near the budget, and so do the requests.
    @Test func theFailureBudgetAlsoStopsRetries() async throws {
        let everything = Set((1...40).map(String.init))
        let transport = FakeTransport(concurrency: 2, failing: everything, failStatus: 503)
        let policy = DownloadPolicy(
            retries: 3, retryMaxWait: .milliseconds(5), retryBase: .milliseconds(1), maxFailures: 3)
        let summary = await Pipeline(
            source: ListSource(outputs: Self.items(40)), transport: transport, sink: MemorySink(),
            options: .init(concurrency: 2, stagingDirectory: Self.staging(), policy: policy)
        ).run()
        #expect(summary.stopReason?.contains("max-failures") == true)
        // Twice concurrency items are under way at most (RunState.underWay); when the budget is reached, the
        // others under way fail only if their attempt in flight was their last, and are paused otherwise.
        #expect((3...(3 + 2 * 2 - 1)).contains(summary.failed), "\(summary)")
        // Every item that started ended failed or paused; each made four requests at most. (With every task
        // free to start while others waited out retry delays, a review measured 18 failures and 72 requests.)
        let requests = transport.running.withLock { $0.requests }
        #expect(summary.failed + summary.paused <= 3 + 2 * 2, "\(summary)")
        #expect(requests <= 4 * (summary.failed + summary.paused), "\(requests) requests, \(summary)")
    }

    /// The ledger's attempts are the count the failure text gives, in the first run and in a later one.
    @Test func theLedgersAttemptsAgreeWithTheFailureText() async throws {
        let state = Self.staging()
        defer { try? FileManager.default.removeItem(at: state) }
        let ledger = try Ledger(directory: state)
        let key = LedgerKey(source: "source", itemID: "2", asset: .preview)
        for retries in [2, 4] {
            let transport = FakeTransport(concurrency: 1, failing: ["2"], failStatus: 503)
            let summary = await Pipeline(
                source: ListSource(outputs: Self.items(2)), transport: transport,
                sink: MemorySink(expectsDigests: false),
                options: .init(
                    concurrency: 1, stagingDirectory: state.appendingPathComponent("staging"), ledger: ledger,
                    policy: DownloadPolicy(
                        retries: retries, retryMaxWait: .milliseconds(2), retryBase: .milliseconds(1)))
            ).run()
            #expect(summary.failed == 1)
            let entry = try #require(try ledger.entry(key))
            #expect(entry.status == .failed)
            #expect(entry.attempts == retries + 1)
            #expect(entry.reason?.hasSuffix("(after \(retries + 1) attempts)") == true, "\(entry.reason ?? "")")
        }
    }

    /// An item with nothing the sink wants is counted skipped with what it lacks, whatever the sink wants.
    @Test func anItemWithNoFileTheSinkWantsIsSkippedWithWhatItLacks() async throws {
        struct ArtworkSink: Sink {
            var assets: [AssetKind]
            func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
                StoragePlan(item: item.ref, asset: asset, relativePath: "\(item.id).\(asset.rawValue)")
            }
            func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String { plan.relativePath }
        }
        let artist = SourceOutput.item(MediaItem(id: "909253", kind: "artist", title: "Jack Johnson"))
        for (assets, reason) in [
            ([AssetKind.artwork], "no artwork URL"), ([.preview], "no preview URL"),
            ([.preview, .artwork], "no preview or artwork URL"),
        ] {
            let skips = Mutex<[String]>([])
            let summary = await Pipeline(
                source: ListSource(outputs: [artist]), transport: FakeTransport(concurrency: 1),
                sink: ArtworkSink(assets: assets), options: .init(concurrency: 1, stagingDirectory: Self.staging()),
                events: { event in if case .skipped(_, let why) = event { skips.withLock { $0.append(why) } } }
            ).run()
            #expect(summary.skipped == 1 && summary.stored == 0, "\(assets)")
            #expect(skips.withLock { $0 } == [reason])
        }
    }
}
