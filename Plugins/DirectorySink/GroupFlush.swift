import CLinux
import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// Makes stores durable in groups: one `syncfs(2)` of the sink's filesystem covers every store that asked
/// since the last one began.
///
/// An `fsync` per file (and one per folder after its rename) asks the disk to empty its cache for every
/// file; with thousands of small files those flushes, not the bytes, were what the runs waited for. A
/// store instead waits twice for ``barrier()``: once before its rename, so the name never points at data
/// the disk may not have, and once after, so the name itself is on disk before the ledger says stored.
/// Stores that arrive while a flush runs share the next one.
///
/// The cost of the trade: `syncfs` also writes out other programs' unsaved data on that filesystem.
///
/// A failed flush fails every later barrier too. Since Linux 5.8 `syncfs` reports a write-back error once
/// per descriptor, so the store whose barrier sees it may not be the one whose bytes were lost; once the
/// disk has said no, no store here is trusted. (Each store also checks its own file, see
/// `SafePlacement.checkWrittenBack`.)
///
/// `@unchecked Sendable`: ``state`` is only touched under ``condition``.
final class GroupFlush: @unchecked Sendable {
    private struct State {
        var waiting: [CheckedContinuation<Void, any Error>] = []
        var closed = false
        /// The errno of the first failed flush.
        var failure: Int32?
    }

    private let condition = NSCondition()
    private var state = State()
    private let descriptor: Int32
    private let root: URL
    private let flush: @Sendable (Int32) -> Int32

    /// Flushes the filesystem that holds `root`, which must exist.
    /// - Parameter flush: the call that flushes, given a descriptor of `root`; returns 0 or sets `errno`
    ///   (tests replace it to watch the grouping).
    init(root: URL, flush: @escaping @Sendable (Int32) -> Int32 = { syncfs($0) }) throws(SinkError) {
        self.root = root
        self.flush = flush
        descriptor = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw SinkError("cannot open the folder \(root.path): \(errorText(errno))")
        }
        let thread = Thread { [self] in run() }
        thread.name = "mediafetch.flush"
        thread.start()
    }

    deinit {
        _ = Glibc.close(descriptor)
    }

    /// Returns once a flush that began after this call has finished: whatever the caller wrote before
    /// calling is then on disk.
    /// - Throws: ``SinkError`` when the flush failed (the disk reported an error).
    func barrier() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            condition.lock()
            let closed = state.closed
            if !closed {
                state.waiting.append(continuation)
                condition.signal()
            }
            condition.unlock()
            if closed { continuation.resume(throwing: SinkError("the sink was closed")) }
        }
    }

    /// Barriers waiting for the next flush to begin.
    var waiting: Int {
        condition.lock()
        defer { condition.unlock() }
        return state.waiting.count
    }

    /// Ends the thread once the waiting stores are served.
    func close() {
        condition.lock()
        state.closed = true
        condition.signal()
        condition.unlock()
    }

    private func run() {
        while true {
            condition.lock()
            while state.waiting.isEmpty && !state.closed { condition.wait() }
            let batch = state.waiting
            state.waiting = []
            let closed = state.closed
            let earlier = state.failure
            condition.unlock()
            if batch.isEmpty && closed { return }
            let failure = earlier ?? (flush(descriptor) == 0 ? nil : errno)
            if earlier == nil, let failure {
                condition.lock()
                state.failure = failure
                condition.unlock()
            }
            for waiter in batch {
                if let failure {
                    waiter.resume(throwing: SinkError("syncfs of \(root.path): \(errorText(failure))"))
                } else {
                    waiter.resume()
                }
            }
        }
    }
}
