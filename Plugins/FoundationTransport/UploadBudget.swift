import Synchronization

/// Bytes of upload bodies a transport may hold in memory at once, across all its uploads: an upload takes its
/// body's bytes before it reads the file and gives them back when it ends; one that does not fit waits, in
/// order of arrival. Cancelling a waiting task ends its wait with `CancellationError`.
final class UploadBudget: Sendable {
    private struct Waiter {
        var id: UInt64
        var bytes: Int64
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var free: Int64
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>

    init(bytes: Int64) {
        state = Mutex(State(free: bytes))
    }

    /// Waits until `bytes` fit, and takes them. `bytes` must not exceed the budget.
    func take(_ bytes: Int64) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                enum Next { case go, cancelled, wait }
                // Under the lock with the wait itself: a cancellation is either seen here or finds the waiter.
                let next = state.withLock { state -> Next in
                    if Task.isCancelled { return .cancelled }
                    if state.waiters.isEmpty && state.free >= bytes {
                        state.free -= bytes
                        return .go
                    }
                    state.waiters.append(Waiter(id: id, bytes: bytes, continuation: continuation))
                    return .wait
                }
                switch next {
                case .go: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: break
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
            // The waiters behind it may fit now.
            give(0)
        }
    }

    /// Tasks waiting for room now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Gives `bytes` back, and lets in the waiters that now fit, first come first.
    func give(_ bytes: Int64) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.free += bytes
            var ready: [CheckedContinuation<Void, any Error>] = []
            while let first = state.waiters.first, first.bytes <= state.free {
                state.free -= first.bytes
                ready.append(state.waiters.removeFirst().continuation)
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }
}
