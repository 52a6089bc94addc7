import Dispatch
import Foundation
import Synchronization

/// Turns SIGINT and SIGTERM into task cancellation: the first stops the work gently, a second
/// ends the process at once (files are only ever renamed into place, so that corrupts nothing).
final class SignalWatcher: Sendable {
    private struct State {
        var received = 0
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    // Only kept so that deinit can cancel them; Mutex makes holding them Sendable.
    private let sources = Mutex<[any DispatchSourceSignal]>([])

    init(signals: [Int32] = [SIGINT, SIGTERM]) {
        // Made inside the lock, so the non-Sendable sources never exist outside it.
        sources.withLock { sources in
            sources = signals.map { number in
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
                source.setEventHandler { [weak self] in self?.received() }
                source.resume()
                return source
            }
        }
    }

    private func received() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.received += 1
            if state.received > 1 {
                FileHandle.standardError.write(Data("\nmediafetch: interrupted again, stopping now\n".utf8))
                exit(130)
            }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    deinit {
        sources.withLock { for source in $0 { source.cancel() } }
    }

    /// Returns when the first signal arrives, or when the calling task is cancelled.
    func firstSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if state.received > 0 || Task.isCancelled { return true }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }

    var wasSignalled: Bool { state.withLock { $0.received > 0 } }

    /// Runs `body`, cancelling it when a signal arrives.
    func run<T: Sendable>(_ body: @escaping @Sendable () async -> T) async -> T {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { await body() }
            group.addTask {
                await self.firstSignal()
                return nil
            }
            var result: T?
            while let next = await group.next() {
                // Either the work ended (stop waiting for signals) or a signal came (stop the work).
                group.cancelAll()
                if let next { result = next }
            }
            guard let result else { preconditionFailure("the work task always returns a value") }
            return result
        }
    }
}
