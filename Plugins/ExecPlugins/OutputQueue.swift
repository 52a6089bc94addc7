import Dispatch
import Synchronization

/// A plugin's output on its way to a source's task: the reader thread puts lines in, the task takes them out,
/// waiting for each at most a timeout.
///
/// At most `capacity` lines wait; past that the reader thread blocks, the pipe fills and the plugin waits in its
/// write, so a plugin runs only a little ahead of the run that consumes its items.
final class OutputQueue: Sendable {
    private struct State {
        var items: [PluginOutput] = []
        var head = 0
        var waiter: (token: UInt64, continuation: CheckedContinuation<PluginOutput?, any Error>)?
        var nextToken: UInt64 = 0
        var closed = false
    }

    private let state = Mutex(State())
    /// Free places for lines; the end needs none.
    private let space: DispatchSemaphore

    init(capacity: Int = 256) {
        space = DispatchSemaphore(value: capacity)
    }

    /// Adds `output` (from the reader thread), waiting for a place when the queue is full.
    func push(_ output: PluginOutput) {
        switch output {
        case .ended: break
        case .line, .tooLong:
            guard !state.withLock({ $0.closed }) else { return }
            space.wait()
        }
        let waiter = state.withLock { state -> CheckedContinuation<PluginOutput?, any Error>? in
            guard !state.closed else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter.continuation
            }
            state.items.append(output)
            return nil
        }
        waiter?.resume(returning: output)
    }

    /// The next output, or nil when none came within `timeout`.
    /// - Throws: `CancellationError` when the calling task is cancelled.
    func next(timeout: Duration) async throws -> PluginOutput? {
        let token = state.withLock { state -> UInt64 in
            state.nextToken += 1
            return state.nextToken
        }
        let output = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PluginOutput?, any Error>) in
                let ready = state.withLock { state -> Result<PluginOutput?, any Error>? in
                    if state.head < state.items.count {
                        let item = state.items[state.head]
                        state.head += 1
                        if state.head == state.items.count {
                            state.items.removeAll(keepingCapacity: true)
                            state.head = 0
                        }
                        return .success(item)
                    }
                    if Task.isCancelled { return .failure(CancellationError()) }
                    state.waiter = (token, continuation)
                    return nil
                }
                if let ready {
                    continuation.resume(with: ready)
                    return
                }
                // Only a wait that found nothing sets a timer: a plugin that keeps up costs none.
                DispatchQueue.global().asyncAfter(deadline: .now() + timeout.dispatchInterval) { [weak self] in
                    self?.resumeWaiter(token, with: .success(nil))
                }
            }
        } onCancel: {
            resumeWaiter(token, with: .failure(CancellationError()))
        }
        switch output {
        case .line?, .tooLong?: space.signal()
        case .ended?, nil: break
        }
        return output
    }

    /// Drops what waits and everything that comes later, and frees a reader thread waiting for a place.
    func close() {
        state.withLock { state in
            state.closed = true
            state.items = []
            state.head = 0
        }
        space.signal()
    }

    private func resumeWaiter(_ token: UInt64, with result: Result<PluginOutput?, any Error>) {
        let waiter = state.withLock { state -> CheckedContinuation<PluginOutput?, any Error>? in
            guard let waiter = state.waiter, waiter.token == token else { return nil }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume(with: result)
    }
}

extension Duration {
    /// The duration for a Dispatch deadline.
    var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        return .nanoseconds(
            Int(min(seconds, Int64(Int.max / 1_000_000_000 - 1))) * 1_000_000_000
                + Int(attoseconds / 1_000_000_000))
    }
}
