import Foundation

extension Runner {
    /// Runs the config's transport, sink and download policy over a ``DownloadQueue`` instead of the config's
    /// source: items are downloaded as they are added to the queue, until ``DownloadQueue/close()`` or until the
    /// calling task is cancelled (then downloads in flight stop and keep their bytes; the queue, opened again,
    /// resumes them).
    ///
    /// The queue holds the state directory's lock and opened its ledger; the run uses both.
    /// - Returns: the run's summary.
    /// - Throws: before anything is fetched: ``ConfigError`` when a factory refuses its options, ``StartupError``
    ///   when the sink's ``Sink/prepare()`` finds it cannot store anything.
    public func run(
        queue: DownloadQueue, events: @escaping @Sendable (PipelineEvent) -> Void = { _ in }
    ) async throws -> RunSummary {
        let context = PluginContext(stateDirectory: spec.stateDirectory)
        guard let transportFactory = registry.transport(named: spec.transport.name),
            let sinkFactory = registry.sink(named: spec.sink.name)
        else {
            throw ConfigError("the config names a plugin this build does not have", at: nil)
        }
        let transport = try transportFactory.make(spec.transport.options, context)
        let base = try sinkFactory.make(
            spec.sink.options,
            PluginContext(
                stateDirectory: spec.stateDirectory, transport: transport, downloadPolicy: spec.downloadPolicy))
        do {
            try await base.prepare()
        } catch {
            await transport.shutdown()
            throw StartupError("the sink cannot store anything, so nothing was fetched: \(error)", cause: error)
        }
        queue.follow(assets: base.assets)
        let pipeline = Pipeline(
            source: queue.source,
            transport: transport,
            sink: PlanOnceSink(base),
            options: .init(
                concurrency: transport.maxConcurrentTransfers,
                stagingDirectory: Pipeline.stagingDirectory(state: spec.stateDirectory),
                progressInterval: options.progressInterval,
                sourceName: queue.sourceName,
                ledger: queue.ledger,
                policy: spec.downloadPolicy,
                control: queue.control
            ),
            events: { event in
                queue.handle(event)
                events(event)
            }
        )
        let summary = await pipeline.run()
        // What the run reported last is in the queue's table before the queue is closed or opened again.
        try? queue.flush()
        return summary
    }
}
