import Synchronization

/// Per-item control of a running pipeline: stops one item's downloads while the others go on.
///
/// The pipeline runs each download of an item through it (an internal call). ``hold(_:)`` stops the item's
/// downloads in flight (their bytes stay in the staging folder, as when a whole run is interrupted) and keeps
/// the pipeline from starting any for it until ``release(_:)``. Used by ``DownloadQueue``; a batch run has none.
public final class ItemControl: Sendable {
    private struct State {
        var held: Set<String> = []
        /// The stop signals of downloads under way, by item id and a token per download.
        var running: [String: [UInt64: (asset: AssetKind, signal: AsyncStream<Void>.Continuation)]] = [:]
        var nextToken: UInt64 = 0
    }

    private let state = Mutex(State())
    /// Called after an item's download stopped or ended, with the item's id (from the download's task).
    private let onFinished: @Sendable (String) -> Void

    public init(onFinished: @escaping @Sendable (String) -> Void = { _ in }) {
        self.onFinished = onFinished
    }

    /// Stops the item's downloads under way and starts none until ``release(_:)``.
    /// - Returns: whether a download of the item was under way (it has been told to stop, and
    ///   `onFinished` follows once it has).
    @discardableResult
    public func hold(_ itemID: String) -> Bool {
        let signals = state.withLock { state in
            state.held.insert(itemID)
            return (state.running[itemID] ?? [:]).values.map(\.signal)
        }
        for signal in signals { signal.yield() }
        return !signals.isEmpty
    }

    /// Lets the item's downloads start again.
    public func release(_ itemID: String) {
        _ = state.withLock { $0.held.remove(itemID) }
    }

    /// Whether the item is held.
    public func isHeld(_ itemID: String) -> Bool { state.withLock { $0.held.contains(itemID) } }

    /// Whether a download of the item is under way.
    public func isRunning(_ itemID: String) -> Bool { state.withLock { !($0.running[itemID] ?? [:]).isEmpty } }

    /// Runs `body` (the download of one asset of the item) unless the item is held, or that asset's download is
    /// under way already (an item handed over twice must not write one staging file twice at once); a
    /// ``hold(_:)`` while it runs cancels it.
    func perform(_ itemID: String, asset: AssetKind, _ body: @escaping @Sendable () async -> Void) async {
        let (signal, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let token: UInt64? = state.withLock { state in
            let busy = (state.running[itemID] ?? [:]).values.contains { $0.asset == asset }
            guard !state.held.contains(itemID), !busy else { return nil }
            defer { state.nextToken += 1 }
            state.running[itemID, default: [:]][state.nextToken] = (asset, continuation)
            return state.nextToken
        }
        guard let token else { return }
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                await body()
                return true
            }
            group.addTask {
                for await _ in signal { return false }
                return false
            }
            // The download ending first ends the watcher; a stop signal first cancels the download.
            if await group.next() == true { continuation.finish() } else { group.cancelAll() }
            await group.waitForAll()
        }
        state.withLock { state in
            state.running[itemID]?[token] = nil
            if state.running[itemID]?.isEmpty == true { state.running[itemID] = nil }
        }
        onFinished(itemID)
    }
}
