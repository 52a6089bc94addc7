import Synchronization

/// At most `limit` slots held at a time, the rest of the askers waiting in the order they came (those who ask to go
/// ahead before the others); one asker may take several slots at once. The pipeline uses three, a slot each: its
/// transfer slots, which a download holds while bytes move and gives back before its file is stored (a store that
/// waits on the disk then lets the next download start); the places of downloads under way, held from the first
/// attempt to the store, retry delays included; and the source's credits, so the source runs only a little ahead of
/// the downloads. The foundation transport counts the bytes of the upload bodies it holds in memory with one, a slot
/// a byte. ``close()`` ends every wait, for a consumer that has left.
public final class Slots: Sendable {
    private struct Waiter {
        var id: UInt64
        var count: Int
        var ahead: Bool
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID: UInt64 = 0
        var closed = false

        /// Takes the slots of the waiter at the head if they are free now, and answers it; a head that does not
        /// fit holds back the rest (none overtakes it). One at a time, so that a release allocates nothing.
        mutating func admitNext() -> CheckedContinuation<Void, any Error>? {
            guard let first = waiters.first, first.count <= available else { return nil }
            available -= first.count
            return waiters.removeFirst().continuation
        }
    }

    private let state: Mutex<State>
    /// The slots there are.
    public let limit: Int

    /// - Parameter limit: the slots there are (at least one).
    public init(limit: Int) {
        self.limit = max(1, limit)
        state = Mutex(State(available: self.limit))
    }

    /// Takes `count` slots, waiting until they are free; an asker waiting for many holds back those behind it.
    /// - Parameters:
    ///   - count: how many, from 0 to ``limit``.
    ///   - ahead: wait before everyone who did not ask to (in their order among themselves): a download that already
    ///     started, coming back for a retry, goes before one that has not started.
    /// - Throws: ``SlotsError`` at once for a count there can never be room for (more than ``limit``, or below 0),
    ///   instead of a wait that would never end; `CancellationError` when the calling task is cancelled first, or the
    ///   slots are closed. No slot is then taken.
    public func acquire(_ count: Int = 1, ahead: Bool = false) async throws {
        guard count >= 0, count <= limit else { throw SlotsError(asked: count, limit: limit) }
        // Free slots are taken without a continuation or a cancellation handler (each an allocation and a lock
        // or two): three acquires an item, as many as there are items.
        let taken = state.withLock { state in
            guard !state.closed, state.waiters.isEmpty, state.available >= count, !Task.isCancelled else {
                return false
            }
            state.available -= count
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
                    if state.waiters.isEmpty && state.available >= count {
                        state.available -= count
                        return .success(())
                    }
                    let place =
                        ahead
                        ? state.waiters.firstIndex { !$0.ahead } ?? state.waiters.endIndex : state.waiters.endIndex
                    state.waiters.insert(
                        Waiter(id: id, count: count, ahead: ahead, continuation: continuation), at: place)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            guard let waiter else { return }
            waiter.resume(throwing: CancellationError())
            // The waiters it held back may fit now.
            release(0)
        }
    }

    /// Gives `count` slots back, to the longest waiters they let in.
    public func release(_ count: Int = 1) {
        var next = state.withLock { state in
            state.available += count
            return state.admitNext()
        }
        while let admitted = next {
            admitted.resume()
            next = state.withLock { $0.admitNext() }
        }
    }

    /// Ends every wait, now and later, with `CancellationError`.
    public func close() {
        let waiters = state.withLock { state in
            state.closed = true
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume(throwing: CancellationError()) }
    }

    /// Slots free right now (for tests).
    public var available: Int { state.withLock { $0.available } }

    /// Tasks waiting for slots right now (for tests).
    public var waiters: Int { state.withLock { $0.waiters.count } }
}

/// An ask for slots there can never be room for: more than the limit, or a negative count.
public struct SlotsError: Error, CustomStringConvertible, Sendable {
    public var asked: Int
    public var limit: Int

    public var description: String {
        "asked for \(asked) slots of \(limit): at most \(limit) can ever be free at once"
    }
}
