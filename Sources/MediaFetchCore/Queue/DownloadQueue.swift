import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Downloads added one by one while a run goes on, each paused, resumed or cancelled on its own: the core of
/// `mediafetch serve`.
///
/// A queue is a ``Pipeline`` fed by hand instead of by a config's source (``Runner/run(queue:events:)``): the
/// same transport, sink, ledger, retries and resume (`Range` with `If-Range`). A batch run is the same pipeline
/// fed by its source, and ends when the source does; a queue's run ends when ``close()`` is called or its task
/// is cancelled.
///
/// * ``pause(_:)`` stops the item's download, keeping its bytes in the staging folder;
/// * ``resume(_:)`` queues it again, and the download goes on from the kept bytes;
/// * ``cancel(_:)`` stops it and removes the partial file.
///
/// The queue is kept in the ledger's database beside the ledger's items, so a queue opened again on the same
/// state directory (after a restart) shows every item as it was: stored stays stored, paused stays paused, and
/// what was queued or downloading is queued again and resumes.
///
/// ```swift
/// let queue = try DownloadQueue(stateDirectory: spec.stateDirectory, sourceName: "itunes")
/// async let summary = Runner(spec: spec, registry: registry).run(queue: queue)
/// queue.add(foundItems)
/// ```
public final class DownloadQueue: Sendable {
    private struct Entry {
        var item: MediaItem
        var download: Download
        /// Set when a resume came while the stopped download was still winding down: the item is handed to the
        /// pipeline again once it has.
        var feedWhenStopped = false
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var order: [String] = []
        var observers: [UInt64: @Sendable (Download) -> Void] = [:]
        var nextObserver: UInt64 = 0
        var primaryAsset: AssetKind = .preview
    }

    /// The ledger the queue's run records into (opened by the queue, which holds the state directory's lock).
    public let ledger: Ledger
    /// The source name that keys the ledger's rows.
    public let sourceName: String
    public let stateDirectory: URL
    let control: ItemControl
    private let lock: StateLock
    private let store: QueueStore
    private let state = Mutex(State())
    private let feed: AsyncStream<MediaItem>.Continuation
    private let items: AsyncStream<MediaItem>
    private let stagingDirectory: URL

    /// Opens the queue of a state directory (taking its lock, so no other run uses it meanwhile), with every item
    /// an earlier queue there held.
    /// - Parameters:
    ///   - stateDirectory: the run's state directory (the config's `state:`).
    ///   - sourceName: the name the ledger keys items by; `itunes` for items from an iTunes search.
    /// - Throws: ``LedgerError`` when another run holds the directory or the ledger cannot be opened.
    public init(stateDirectory: URL, sourceName: String = "itunes") throws {
        lock = try StateLock(directory: stateDirectory)
        ledger = try Ledger(directory: stateDirectory)
        store = try QueueStore(directory: stateDirectory)
        self.sourceName = sourceName
        self.stateDirectory = stateDirectory
        stagingDirectory = Pipeline.stagingDirectory(state: stateDirectory)
        (items, feed) = AsyncStream.makeStream(of: MediaItem.self, bufferingPolicy: .unbounded)
        let finished = Mutex<(@Sendable (String) -> Void)?>(nil)
        control = ItemControl { id in finished.withLock { $0 }?(id) }
        finished.withLock { $0 = { [weak self] id in self?.stopped(id) } }
        try restore()
    }

    /// The items to run, in the order they were added.
    var source: any Source { QueueSource(items: items) }

    /// What the queue of a state directory recorded for each item, in the order they were added, without opening
    /// the queue (no lock is taken, so a run may hold the directory): `mediafetch status` reads it.
    public static func recordedStatuses(stateDirectory: URL) throws -> [DownloadStatus] {
        guard FileManager.default.fileExists(atPath: stateDirectory.appendingPathComponent(Ledger.fileName).path)
        else { return [] }
        return try QueueStore(directory: stateDirectory).allRows().map(\.state)
    }

    /// Which asset's download an item's status follows (the sink's first, the preview when it stores one).
    func follow(assets: [AssetKind]) {
        let primary = assets.contains(.preview) ? .preview : (assets.first ?? .preview)
        state.withLock { $0.primaryAsset = primary }
    }

    // MARK: Reading

    /// Every item, in the order it was added.
    public var downloads: [Download] {
        state.withLock { state in state.order.compactMap { state.entries[$0]?.download } }
    }

    /// The item behind a download, or nil when no item of that id was added.
    public func item(_ id: String) -> MediaItem? { state.withLock { $0.entries[id]?.item } }

    /// One item, or nil when no item of that id was added.
    public func download(_ id: String) -> Download? { state.withLock { $0.entries[id]?.download } }

    /// Calls `handler` with an item each time it changes (status, bytes), from any thread, until the returned
    /// observation is cancelled. The handler must be quick: progress comes from the transport's threads.
    public func observe(_ handler: @escaping @Sendable (Download) -> Void) -> QueueObservation {
        let id = state.withLock { state in
            defer { state.nextObserver += 1 }
            state.observers[state.nextObserver] = handler
            return state.nextObserver
        }
        return QueueObservation { [weak self] in _ = self?.state.withLock { $0.observers.removeValue(forKey: id) } }
    }

    // MARK: Control

    /// Queues items. One already queued, under way, paused or stored is left as it is; a cancelled or failed one
    /// is queued again.
    /// - Returns: each item as it now stands, in the order given.
    @discardableResult
    public func add(_ newItems: [MediaItem]) -> [Download] {
        defer { try? store.flush(source: sourceName) }
        return newItems.map { item in
            let existing = download(item.id)
            if let existing, existing.status == .cancelled || existing.status == .failed {
                return (try? resume(item.id)) ?? existing
            }
            if let existing { return existing }
            let download = Download(id: item.id, title: item.title, artist: item.artist, status: .queued)
            state.withLock { state in
                state.entries[item.id] = Entry(item: item, download: download)
                state.order.append(item.id)
            }
            persist(item, .queued, now: false, isNew: true)
            publish(download)
            feed.yield(item)
            return download
        }
    }

    /// Stops the item's download and keeps its bytes; a queued item waits until resumed.
    /// - Throws: ``QueueError``: unknown id, or an item that is stored, failed or cancelled.
    @discardableResult
    public func pause(_ id: String) throws(QueueError) -> Download {
        let download = try change(id, from: [.queued, .downloading, .paused], verb: "pause") { entry in
            entry.download.status = .paused
            entry.feedWhenStopped = false
        }
        control.hold(id)
        // A download that was under way reports its kept bytes when it has stopped (see stopped(_:)).
        return download
    }

    /// Queues a paused, failed or cancelled item again; its download goes on from the bytes kept.
    /// - Throws: ``QueueError``: unknown id, or an item that is stored.
    @discardableResult
    public func resume(_ id: String) throws(QueueError) -> Download {
        let current = try entry(id)
        if current.download.status == .queued || current.download.status == .downloading { return current.download }
        var feedNow = false
        let download = try change(id, from: [.paused, .failed, .cancelled], verb: "resume") { entry in
            entry.download.status = .queued
            entry.download.reason = nil
            // The old download may still be stopping: two into one staging file must never run.
            feedNow = !control.isRunning(id)
            entry.feedWhenStopped = !feedNow
        }
        control.release(id)
        if feedNow { feed.yield(current.item) }
        return download
    }

    /// Stops the item's download and removes its partial file.
    /// - Throws: ``QueueError``: unknown id, or an item that is stored.
    @discardableResult
    public func cancel(_ id: String) throws(QueueError) -> Download {
        let download = try change(id, from: [.queued, .downloading, .paused, .failed, .cancelled], verb: "cancel") {
            entry in
            entry.download.status = .cancelled
            entry.download.receivedBytes = 0
            entry.feedWhenStopped = false
        }
        if !control.hold(id) { removePartials(id) }
        return download
    }

    deinit { try? store.flush(source: sourceName) }

    /// Ends the queue's source: the run finishes once the downloads under way are done.
    public func close() { feed.finish() }

    // MARK: The run's events

    /// Follows the run's events (``Runner/run(queue:events:)`` hands them here).
    public func handle(_ event: PipelineEvent) {
        let primary = state.withLock { $0.primaryAsset }
        let changed: Download? = state.withLock { state in
            func update(_ id: String, _ body: (inout Entry) -> Bool) -> Download? {
                guard var entry = state.entries[id], body(&entry) else { return nil }
                state.entries[id] = entry
                return entry.download
            }
            // What the user stopped is not brought back by a late event of its download; a store that made it
            // is taken, since the file is in the sink.
            func active(_ entry: Entry) -> Bool {
                entry.download.status == .queued || entry.download.status == .downloading
            }
            switch event {
            case .itemStarted(let ref, let asset, _, let resumeFrom) where asset == primary:
                return update(ref.id) { entry in
                    guard active(entry) else { return false }
                    entry.download.status = .downloading
                    entry.download.receivedBytes = resumeFrom
                    return true
                }
            case .progress(let ref, let asset, let progress) where asset == primary:
                return update(ref.id) { entry in
                    guard active(entry) else { return false }
                    entry.download.status = .downloading
                    entry.download.receivedBytes = progress.received
                    if let expected = progress.expected { entry.download.expectedBytes = expected }
                    return true
                }
            case .retrying(let ref, let asset, let attempt, _, let reason) where asset == primary:
                return update(ref.id) { entry in
                    guard active(entry) else { return false }
                    entry.download.reason = "attempt \(attempt) failed, trying again: \(reason)"
                    return true
                }
            case .stored(let ref, let asset, let location, let bytes) where asset == primary:
                return update(ref.id) { entry in
                    entry.download.status = .stored
                    entry.download.location = location
                    entry.download.receivedBytes = bytes
                    entry.download.expectedBytes = bytes
                    entry.download.reason = nil
                    return true
                }
            case .alreadyStored(let ref, let asset, let location) where asset == primary:
                return update(ref.id) { entry in
                    entry.download.status = .stored
                    entry.download.location = location
                    if let expected = entry.download.expectedBytes { entry.download.receivedBytes = expected }
                    return true
                }
            case .failed(let ref, _, let reason), .skipped(let ref, let reason):
                return update(ref.id) { entry in
                    guard active(entry) else { return false }
                    entry.download.status = .failed
                    entry.download.reason = reason
                    return true
                }
            default:
                return nil
            }
        }
        guard let changed else { return }
        if changed.status == .stored || changed.status == .failed,
            let item = state.withLock({ $0.entries[changed.id]?.item })
        {
            persist(item, changed.status, now: false)
        }
        publish(changed)
    }

    // MARK: Internals

    private func entry(_ id: String) throws(QueueError) -> Entry {
        guard let entry = state.withLock({ $0.entries[id] }) else {
            throw QueueError(.unknownItem, "no download with id \"\(id)\" was queued")
        }
        return entry
    }

    /// Applies `body` to the item when its status is one of `allowed`, then records and publishes it.
    private func change(
        _ id: String, from allowed: [DownloadStatus], verb: String, _ body: (inout Entry) -> Void
    ) throws(QueueError) -> Download {
        let result: Result<Entry, QueueError> = state.withLock { state in
            guard var entry = state.entries[id] else {
                return .failure(QueueError(.unknownItem, "no download with id \"\(id)\" was queued"))
            }
            guard allowed.contains(entry.download.status) else {
                return .failure(
                    QueueError(
                        .wrongState,
                        "cannot \(verb) \"\(id)\": it is \(entry.download.status); only "
                            + allowed.map(\.rawValue).joined(separator: ", ") + " items can be"))
            }
            body(&entry)
            state.entries[id] = entry
            return .success(entry)
        }
        let entry = try result.get()
        persist(entry.item, entry.download.status)
        publish(entry.download)
        return entry.download
    }

    /// A download of the item has stopped or ended (from ``ItemControl``).
    private func stopped(_ id: String) {
        guard !control.isRunning(id) else { return }
        let (entry, feedAgain): (Entry?, Bool) = state.withLock { state in
            guard var entry = state.entries[id] else { return (nil, false) }
            let feedAgain = entry.feedWhenStopped
            entry.feedWhenStopped = false
            state.entries[id] = entry
            return (entry, feedAgain)
        }
        guard let entry else { return }
        switch entry.download.status {
        case .cancelled:
            removePartials(id)
        case .paused:
            let kept = keptBytes(id)
            let download: Download? = state.withLock { state in
                guard state.entries[id]?.download.status == .paused else { return nil }
                state.entries[id]?.download.receivedBytes = kept
                return state.entries[id]?.download
            }
            if let download { publish(download) }
        default:
            if feedAgain { feed.yield(entry.item) }
        }
    }

    private func stagingFile(_ id: String, _ asset: AssetKind) -> URL {
        Pipeline.stagingFile(in: stagingDirectory, source: sourceName, itemID: id, asset: asset)
    }

    private func keptBytes(_ id: String) -> Int64 {
        let asset = state.withLock { $0.primaryAsset }
        var info = stat()
        return stat(stagingFile(id, asset).path, &info) == 0 ? Int64(info.st_size) : 0
    }

    private func removePartials(_ id: String) {
        for asset in AssetKind.allCases { _ = unlink(stagingFile(id, asset).path) }
    }

    /// The queue table is what a restart shows. What the user asked for (add, pause, resume, cancel) is written at
    /// once; what the run reports (stored, failed) with the next batch, at most 200 ms later: a crash before then
    /// shows such an item queued again, and the ledger, which the sink's commit decides, has it stored. A write that
    /// fails costs only that memory, so the run goes on.
    private func persist(_ item: MediaItem, _ status: DownloadStatus, now: Bool = true, isNew: Bool = false) {
        store.save(source: sourceName, item: item, state: status == .downloading ? .queued : status, isNew: isNew)
        if now { try? store.flush(source: sourceName) } else { try? store.flushIfDue(source: sourceName) }
    }

    /// Writes what the queue has not written yet (``Runner/run(queue:events:)`` does when the run ends).
    public func flush() throws {
        try store.flush(source: sourceName)
    }

    private func publish(_ download: Download) {
        let observers = state.withLock { Array($0.observers.values) }
        for observer in observers { observer(download) }
    }

    /// Brings back the items an earlier queue on this state directory held: each in the order it was added,
    /// handed to the pipeline again (so that the sink plans names in the same order), held when paused or failed.
    private func restore() throws {
        let rows = try store.rows(source: sourceName)
        for row in rows {
            let item = row.item
            // Each row's entry on its own: the ledger may hold far more of this source than the queue (batch runs on
            // the same state directory), and all of it was read into memory to find the queue's.
            let ledgerEntry = try ledger.entry(LedgerKey(source: sourceName, itemID: item.id, asset: .preview))
            var download = Download(
                id: item.id, title: item.title, artist: item.artist, status: row.state,
                receivedBytes: keptBytes(item.id), expectedBytes: ledgerEntry?.expectedBytes)
            switch row.state {
            case .stored:
                download.location = ledgerEntry?.location
                download.receivedBytes = ledgerEntry?.receivedBytes ?? 0
            case .failed:
                download.reason = ledgerEntry?.reason ?? "failed in an earlier run"
                control.hold(item.id)
            case .paused:
                control.hold(item.id)
            case .cancelled:
                download.receivedBytes = 0
            default:
                download.status = .queued
            }
            state.withLock { state in
                state.entries[item.id] = Entry(item: item, download: download)
                state.order.append(item.id)
            }
            if download.status != .cancelled { feed.yield(item) }
        }
    }
}

/// Keeps a ``DownloadQueue/observe(_:)`` handler registered until cancelled (or dropped).
public final class QueueObservation: Sendable {
    private let onCancel: Mutex<(@Sendable () -> Void)?>

    init(_ onCancel: @escaping @Sendable () -> Void) {
        self.onCancel = Mutex(onCancel)
    }

    /// Stops the calls.
    public func cancel() {
        let action = onCancel.withLock { current in
            defer { current = nil }
            return current
        }
        action?()
    }

    deinit { cancel() }
}
