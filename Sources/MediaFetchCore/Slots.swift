import Synchronization

/// At most `limit` holders at a time, the rest waiting in the order they came (those who ask to go ahead before
/// the others). The pipeline uses three: its transfer slots, which a download holds while bytes move and gives
/// back before its file is stored (a store that waits on the disk then lets the next download start); the
/// places of downloads under way, held from the first attempt to the store, retry delays included; and the
/// source's credits, so the source runs only a little ahead of the downloads. ``close()`` ends every wait, for
/// a consumer that has left.
final class Slots: Sendable {
    private struct State {
        var available: Int
        var waiters: [(id: UInt64, ahead: Bool, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextID: UInt64 = 0
        var closed = false
    }

    private let state: Mutex<State>

    init(limit: Int) {
        state = Mutex(State(available: max(1, limit)))
    }

    /// Takes a slot, waiting for one when all are taken.
    /// - Parameter ahead: wait before everyone who did not ask to (in their order among themselves): a
    ///   download that already started, coming back for a retry, goes before one that has not started.
    /// - Throws: `CancellationError` when the calling task is cancelled first, or the slots are closed; no
    ///   slot is then taken.
    func acquire(ahead: Bool = false) async throws {
        // A free slot is taken without a continuation or a cancellation handler (each an allocation and a lock
        // or two): three acquires an item, as many as there are items.
        let taken = state.withLock { state in
            guard !state.closed, state.available > 0, !Task.isCancelled else { return false }
            state.available -= 1
            return true
        }
        if taken { return }
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { state in
                    // A cancellation before this point found no waiter to end; it is seen here instead.
                    if Task.isCancelled || state.closed { return .failure(CancellationError()) }
                    if state.available > 0 {
                        state.available -= 1
                        return .success(())
                    }
                    let place =
                        ahead
                        ? state.waiters.firstIndex { !$0.ahead } ?? state.waiters.endIndex : state.waiters.endIndex
                    state.waiters.insert((id, ahead, continuation), at: place)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Gives a slot back, to the longest waiter if there is one.
    func release() {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard !state.waiters.isEmpty else {
                state.available += 1
                return nil
            }
            return state.waiters.removeFirst().continuation
        }
        next?.resume()
    }

    /// Ends every wait, now and later, with `CancellationError`.
    func close() {
        let waiters = state.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume(throwing: CancellationError()) }
    }

    /// Slots free right now (for tests).
    var available: Int { state.withLock { $0.available } }

    /// Tasks waiting for a slot right now (for tests).
    var waiters: Int { state.withLock { $0.waiters.count } }
}
