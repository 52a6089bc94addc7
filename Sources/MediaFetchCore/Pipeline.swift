import Foundation
import Synchronization

/// Runs one pipeline: the source's items are planned by the sink in source order, downloaded by a
/// bounded number of workers into staging files, checked, and stored.
public struct Pipeline: Sendable {
    public struct Options: Sendable {
        /// How many downloads run at once.
        public var concurrency: Int
        /// Where partial downloads live until the sink takes them.
        public var stagingDirectory: URL
        /// The least time between two progress events of one download.
        public var progressInterval: Duration

        public init(
            concurrency: Int,
            stagingDirectory: URL,
            progressInterval: Duration = .milliseconds(250)
        ) {
            self.concurrency = max(1, concurrency)
            self.stagingDirectory = stagingDirectory
            self.progressInterval = progressInterval
        }
    }

    public var source: any Source
    public var transport: any Transport
    public var sink: any Sink
    public var options: Options
    public var events: @Sendable (PipelineEvent) -> Void

    public init(
        source: any Source,
        transport: any Transport,
        sink: any Sink,
        options: Options,
        events: @escaping @Sendable (PipelineEvent) -> Void = { _ in }
    ) {
        self.source = source
        self.transport = transport
        self.sink = sink
        self.options = options
        self.events = events
    }

    /// Runs to the end, or until the calling task is cancelled (then in-flight downloads are
    /// cancelled, nothing half-done is stored, and the summary says `interrupted`).
    public func run() async -> RunSummary {
        let clock = ContinuousClock()
        let start = clock.now
        let tally = Mutex(RunSummary())
        let report: @Sendable (PipelineEvent) -> Void = { [events] event in
            tally.withLock { $0.count(event) }
            events(event)
        }

        do {
            try FileManager.default.createDirectory(at: options.stagingDirectory, withIntermediateDirectories: true)
            try await feedWorkers(report: report)
        } catch is CancellationError {
            tally.withLock { $0.interrupted = true }
        } catch let error as SourceError {
            tally.withLock { $0.sourceError = error.message }
        } catch {
            tally.withLock { $0.sourceError = String(describing: error) }
        }
        if Task.isCancelled { tally.withLock { $0.interrupted = true } }

        do {
            try await sink.finish()
        } catch {
            tally.withLock { $0.sinkError = String(describing: error) }
        }
        await transport.shutdown()

        var summary = tally.withLock { $0 }
        summary.wallSeconds = (clock.now - start).seconds
        events(.finished(summary))
        return summary
    }

    /// Reads the source in a child task and starts a worker per asset, at most `concurrency` at once.
    /// A source failure stops new work but lets started downloads finish.
    private func feedWorkers(report: @escaping @Sendable (PipelineEvent) -> Void) async throws {
        let (outputs, continuation) = AsyncThrowingStream.makeStream(of: SourceOutput.self)
        let context = SourceContext(transport: transport, notice: { report(.notice($0)) })

        try await withThrowingTaskGroup(of: Bool.self) { group in
            // The producer's task answers false and the workers true, so the bound counts only workers.
            group.addTask { [source] in
                do {
                    try await source.run(context) { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
                return false
            }

            var running = 0
            var sourceFailure: (any Error)?
            do {
                for try await output in outputs {
                    try Task.checkCancellation()
                    switch output {
                    case .skipped(let ref, let reason):
                        report(.skipped(ref, reason: reason))
                    case .failed(let ref, let url, let reason):
                        report(.failed(ref, url: url, reason: reason))
                    case .item(let item):
                        for job in await plan(item, report: report) {
                            while running >= options.concurrency {
                                if try await group.next() == true { running -= 1 }
                            }
                            running += 1
                            group.addTask { await self.download(job, report: report); return true }
                        }
                    }
                }
            } catch {
                sourceFailure = error
            }
            // Started downloads finish (or see the cancellation) before the run reports.
            while try await group.next() != nil {}
            if let sourceFailure { throw sourceFailure }
            try Task.checkCancellation()
        }
    }

    private struct Job: Sendable {
        var item: MediaItem
        var asset: AssetKind
        var url: URL
        var plan: StoragePlan
    }

    /// Asks the sink where each asset goes, in source order; an asset the item lacks is skipped.
    private func plan(_ item: MediaItem, report: @Sendable (PipelineEvent) -> Void) async -> [Job] {
        var jobs: [Job] = []
        for asset in sink.assets {
            guard let url = sink.url(for: asset, of: item) else {
                report(.skipped(item.ref, reason: "no \(asset.rawValue) URL"))
                continue
            }
            do {
                jobs.append(Job(item: item, asset: asset, url: url, plan: try await sink.plan(item, asset: asset)))
            } catch {
                report(.failed(item.ref, url: url, reason: String(describing: error)))
            }
        }
        return jobs
    }

    private func download(_ job: Job, report: @escaping @Sendable (PipelineEvent) -> Void) async {
        let ref = job.item.ref
        let staging = options.stagingDirectory.appendingPathComponent(Self.stagingName(itemID: job.item.id, asset: job.asset))
        report(.itemStarted(ref, asset: job.asset, url: job.url))
        let throttle = ProgressThrottle(interval: options.progressInterval)
        do {
            let result = try await transport.download(DownloadRequest(url: job.url, destination: staging)) { progress in
                if throttle.shouldReport() { report(.progress(ref, asset: job.asset, progress)) }
            }
            let onDisk = try Self.fileSize(staging)
            guard onDisk == result.fileSize else {
                throw TransportError(.truncated(expected: result.fileSize, received: onDisk), url: job.url,
                                     detail: "the staging file does not hold what the transport reported")
            }
            let staged = StagedFile(url: staging, size: onDisk, sha256: try SHA256.hex(ofFile: staging),
                                    sourceURL: result.url)
            let location = try await sink.store(staged, as: job.plan)
            report(.stored(ref, asset: job.asset, location: location, bytes: onDisk))
        } catch {
            try? FileManager.default.removeItem(at: staging)
            if Task.isCancelled || error is CancellationError { return }
            if let error = error as? TransportError, error.code == .cancelled { return }
            report(.failed(ref, url: job.url, reason: String(describing: error)))
        }
    }

    /// A file name for an item's staging file: readable, unique per item and asset, safe anywhere.
    static func stagingName(itemID: String, asset: AssetKind) -> String {
        let readable = String(itemID.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(40))
        return "\(readable)-\(stableHash(itemID)).\(asset.rawValue).part"
    }

    /// FNV-1a: stable across runs and platforms, unlike `hashValue`.
    static func stableHash(_ text: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }

    static func fileSize(_ url: URL) throws -> Int64 {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.size] as? NSNumber)?.int64Value ?? 0
    }
}

/// Lets through one progress report per interval.
private final class ProgressThrottle: Sendable {
    private let interval: Duration
    private let last = Mutex<ContinuousClock.Instant?>(nil)

    init(interval: Duration) {
        self.interval = interval
    }

    func shouldReport() -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            if let previous = last, now - previous < interval { return false }
            last = now
            return true
        }
    }
}

extension RunSummary {
    mutating func count(_ event: PipelineEvent) {
        switch event {
        case .stored(_, _, _, let bytes):
            stored += 1
            self.bytes += bytes
        case .failed: failed += 1
        case .skipped: skipped += 1
        case .itemStarted, .progress, .notice, .finished: break
        }
    }
}
