import Synchronization

/// Back-pressure between the source and the pipeline: the source may run at most `limit` outputs
/// ahead of the consumer, then its `emit` waits. Closing (or cancelling the waiter) ends the wait with
/// an error, so a source never waits for a consumer that has stopped.
final class Credits: Sendable {
    private struct State {
        var available: Int
        var waiter: CheckedContinuation<Void, any Error>?
        var closed = false
    }

    private let state: Mutex<State>

    init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Takes one credit, waiting for the consumer when there is none.
    /// - Throws: `CancellationError` when closed or when the calling task is cancelled.
    func acquire() async throws {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    if state.closed || Task.isCancelled { return .failure(CancellationError()) }
                    if state.available > 0 {
                        state.available -= 1
                        return .success(())
                    }
                    state.waiter = continuation
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            close()
        }
    }

    /// Gives one credit back: the consumer took an output.
    func release() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.available += 1
            return nil
        }
        waiter?.resume()
    }

    /// Ends every wait, now and later.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            state.closed = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(throwing: CancellationError())
    }
}
