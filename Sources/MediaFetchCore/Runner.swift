import Foundation

/// Runs a validated config: the one call a program, a test or the command line makes to get a pipeline's work
/// done.
///
/// It takes the state directory's lock (two runs never share one), makes the plugins the spec names with the
/// registry's factories, opens the ledger, runs the ``Pipeline`` with its staging area under the state
/// directory, and releases everything when the run is over, however it ends.
///
/// ```swift
/// let spec = try ConfigLoader.load(path: "previews.yaml", registry: BundledPlugins.registry)
/// let summary = try await Runner(spec: spec, registry: BundledPlugins.registry).run { event in
///     if case .stored(let item, _, let location, _) = event { print("\(item) -> \(location)") }
/// }
/// ```
///
/// Cancel the calling task to interrupt the run: downloads in flight stop and keep their bytes for the next
/// run, nothing half-done is stored, and the summary says `interrupted`.
public struct Runner: Sendable {
    /// What a run may do differently from the config.
    public struct Options: Sendable {
        /// Ignore what the ledger says is stored or partial, and fetch everything again.
        public var refetch: Bool
        /// The least time between two progress events of one download.
        public var progressInterval: Duration
        /// This worker's id when the config's ledger is shared (`--worker`); nil for host:pid.
        public var worker: String?
        /// How a worker of a shared run waits for its ledger and for work.
        public var shared: Pipeline.SharedOptions

        public init(
            refetch: Bool = false, progressInterval: Duration = .milliseconds(250), worker: String? = nil,
            shared: Pipeline.SharedOptions = Pipeline.SharedOptions()
        ) {
            self.refetch = refetch
            self.progressInterval = progressInterval
            self.worker = worker
            self.shared = shared
        }
    }

    public var spec: PipelineSpec
    public var registry: PluginRegistry
    public var options: Options

    public init(spec: PipelineSpec, registry: PluginRegistry, options: Options = Options()) {
        self.spec = spec
        self.registry = registry
        self.options = options
    }

    /// Runs to the end, or until the calling task is cancelled, handing every event to `events` as it happens
    /// (from any thread, so the closure must be quick and thread-safe); the last is ``PipelineEvent/finished(_:)``.
    /// - Returns: the run's summary; its ``RunSummary/exitCode`` is what the command line exits with.
    /// - Throws: before anything is fetched: ``LedgerError`` when the state directory is taken by another run or
    ///   the ledger cannot be opened, ``ConfigError`` when a factory refuses its options, ``StartupError`` when the
    ///   sink's ``Sink/prepare()`` finds it cannot store anything. Whatever goes wrong
    ///   once the run is under way is in the summary instead.
    public func run(events: @escaping @Sendable (PipelineEvent) -> Void = { _ in }) async throws -> RunSummary {
        // A run's own ledger (SQLite, in the state folder) is opened under the folder's lock: it takes itself for
        // the file's only writer, and a run refused the folder must not even migrate the file under the run that
        // holds it. A worker of a shared run learns its folder from the ledger (its worker id), so it locks after.
        let ownLock = spec.ledger == nil ? try StateLock(directory: spec.stateDirectory) : nil
        let ledger = try spec.openLedger(registry: registry, worker: options.worker)
        let sharedLedger = ledger as? any SharedRunLedger
        // Each worker of a shared run has a state folder of its own (its partial files, its lock), so that several
        // workers may run on one machine; the same worker id coming back finds its partial files again.
        let state = sharedLedger.map { spec.stateDirectory.appendingPathComponent("worker-" + Self.folderName($0.worker)) }
            ?? spec.stateDirectory
        let lock = try ownLock ?? StateLock(directory: state)
        defer { withExtendedLifetime(lock) {} }
        let parts = try PipelineParts(spec: spec, registry: registry)
        if sharedLedger != nil, !parts.sink.commitsEachStore {
            await parts.transport.shutdown()
            throw StartupError(
                "the sink \(spec.sink.name) commits only at the end of a run, so workers cannot share it; use a sink "
                    + "every worker can reach that stores each file on its own (directory, s3), or leave ledger: out",
                cause: nil)
        }
        do {
            try await parts.sink.prepare()
        } catch {
            await parts.transport.shutdown()
            throw StartupError("the sink cannot store anything, so nothing was fetched: \(error)", cause: error)
        }
        let pipeline = Pipeline(
            source: parts.source,
            transport: parts.transport,
            sink: parts.sink,
            options: .init(
                concurrency: parts.transport.maxConcurrentTransfers,
                stagingDirectory: Pipeline.stagingDirectory(state: state),
                progressInterval: options.progressInterval,
                sourceName: parts.sourceName,
                ledger: ledger,
                refetch: options.refetch,
                policy: spec.downloadPolicy
            ),
            events: events
        )
        if let sharedLedger { return await pipeline.runShared(sharedLedger, shared: options.shared) }
        return await pipeline.run()
    }

    /// `worker` as one safe folder name: letters, digits, `.`, `-` and `_` kept, anything else `_`.
    static func folderName(_ worker: String) -> String {
        String(
            worker.unicodeScalars.map {
                CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-".unicodeScalars.contains($0)
                    ? Character($0) : "_"
            })
    }

    /// The run's events as an asynchronous sequence, ending after ``PipelineEvent/finished(_:)`` (which carries
    /// the summary). The run starts when iteration starts and is cancelled when the iterating task is, or when
    /// the sequence is dropped.
    ///
    /// Every event is delivered, so that a consumer can count on them; a slow reader never holds up downloads,
    /// and the events it has not read yet wait in memory (progress comes at most four times a second per
    /// download, see ``Options/progressInterval``).
    /// - Throws: (from the iteration) the errors ``run(events:)`` throws before anything is fetched.
    public func events() -> AsyncThrowingStream<PipelineEvent, any Error> {
        AsyncThrowingStream(bufferingPolicy: .unbounded) { continuation in
            let task = Task {
                do {
                    _ = try await run { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}
