import CLinux
import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// Makes stores durable in groups.
///
/// An `fsync` per file (and one per folder after its rename) asks the disk to empty its cache for every
/// file; with thousands of small files those flushes, not the bytes, were what the runs waited for. A
/// store instead waits twice:
/// * on ``barrier()`` before its rename: one `syncfs(2)` of the sink's filesystem writes the bytes of every
///   store that asked since the last one began, so no name ever points at data the disk may not have;
/// * on ``flushFolder(_:)`` after it: one `fsync` of each folder that stores renamed into meanwhile, so the
///   name is on disk before the ledger says stored. (`syncfs` alone would not do for names: on ext4 without
///   a journal it empties the disk's cache before it writes the folders' blocks.)
///
/// Stores that arrive while a flush runs share the next one. The cost of the trade: `syncfs` also writes
/// out other programs' unsaved data on that filesystem. Since Linux 5.8 `syncfs` reports a write-back
/// error once per descriptor, so a failed flush may belong to another file; the sink then goes back to an
/// `fsync` per file, which names the file it is about, and each store also checks its own file before its
/// rename (`SafePlacement.checkWrittenBack`).
///
/// `@unchecked Sendable`: ``state`` is only touched under ``condition``.
final class GroupFlush: @unchecked Sendable {
    private struct Waiter {
        var continuation: CheckedContinuation<Void, any Error>
        /// A descriptor of the folder to flush (the caller's, open until it is resumed); nil asks for a
        /// `syncfs`.
        var folder: Int32?
    }

    private struct State {
        var waiting: [Waiter] = []
        var closed = false
        /// When the first and the last of the waiting stores asked (``now()``): how fast stores come.
        var firstArrival: UInt64 = 0
        var lastArrival: UInt64 = 0
    }

    private let condition = NSCondition()
    private var state = State()
    private let descriptor: Int32
    private let root: URL
    private let flush: @Sendable (Int32) -> Int32
    private let flushFolderCall: @Sendable (Int32) -> Int32
    /// Nanoseconds.
    private let gather: UInt64
    private let gatherTarget: Int
    private let settle: UInt64

    /// Flushes the filesystem that holds `root`, which must exist.
    /// - Parameters:
    ///   - flush: the call that flushes the filesystem, given a descriptor of `root` (`syncfs`);
    ///   - flushFolder: the call that flushes one folder (`fsync`). Each returns 0 or sets `errno`; tests
    ///     replace them to watch the grouping.
    ///   - gather: how long a flush waits, once its first store has asked, for more to share it (at most; it
    ///     starts as soon as `gatherTarget` stores wait). Small files arrive by the thousand a second and a flush
    ///     costs about the same however many it serves: without the wait a group of 10 KB files was about 7 (2,994
    ///     syncfs for 20,000 files), with 2 ms about 12, with 20 ms about 33 (612), which was the fastest
    ///     durable run of the windows tried (0, 2, 5, 10, 20 ms). A store waits that much longer at most, and
    ///     less when the stores stop coming (`settle`).
    ///   - gatherTarget: the waiting stores (barriers and folders) that start a flush at once; see
    ///     ``defaultTarget(storesAtOnce:)``.
    ///   - settle: a flush that has not reached its target starts once no store came for this long, or for four
    ///     times the mean gap between the waiting stores' arrivals, whichever is longer: the stores have stopped
    ///     coming because every writer that could store waits already, and the rest of the window would be waited
    ///     for nothing. A lone store waits `settle`.
    init(
        root: URL, flush: @escaping @Sendable (Int32) -> Int32 = { syncfs($0) },
        flushFolder: @escaping @Sendable (Int32) -> Int32 = { fsync($0) },
        gather: Duration = .milliseconds(20), gatherTarget: Int = defaultTarget(),
        settle: Duration = .milliseconds(1)
    ) throws(SinkError) {
        self.root = root
        self.gather = UInt64(min(3600, max(0, gather.seconds)) * 1e9)
        self.gatherTarget = gatherTarget
        self.settle = UInt64(min(3600, max(0, settle.seconds)) * 1e9)
        self.flush = flush
        self.flushFolderCall = flushFolder
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

    /// Returns once a `syncfs` that began after this call has finished: whatever the caller wrote before
    /// calling is then on disk.
    /// - Throws: ``SinkError`` when the flush failed, or the group was closed.
    func barrier() async throws {
        try await wait(folder: nil)
    }

    /// Returns once `folder` (a descriptor the caller keeps open until then) was flushed by an `fsync` that
    /// began after this call, shared with the other stores into that folder waiting at the same time.
    /// - Throws: ``SinkError`` when the flush failed, or the group was closed.
    func flushFolder(_ folder: Int32) async throws {
        try await wait(folder: folder)
    }

    private func wait(folder: Int32?) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            condition.lock()
            let closed = state.closed
            if !closed {
                state.waiting.append(Waiter(continuation: continuation, folder: folder))
                state.lastArrival = Self.now()
                if state.waiting.count == 1 { state.firstArrival = state.lastArrival }
                // The thread waits for a first store, then for a group's worth: woken for each store, it would
                // only count them and wait again (a thread switch a file).
                let count = state.waiting.count
                if count == 1 || count >= gatherTarget { condition.signal() }
            }
            condition.unlock()
            if closed { continuation.resume(throwing: SinkError("the group flush was closed")) }
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
            let deadline = Self.now() + gather
            while state.waiting.count < gatherTarget && !state.closed {
                let now = Self.now()
                guard now < deadline else { break }
                // Not woken for each store (a thread switch a file): it looks again when the stores may have
                // stopped coming.
                let arrivals = UInt64(state.waiting.count)
                let gap = arrivals > 1 ? (state.lastArrival - state.firstArrival) / (arrivals - 1) : 0
                let settled = state.lastArrival + max(settle, 4 * gap)
                guard now < settled else { break }
                _ = condition.wait(until: Date(timeIntervalSinceNow: Double(min(deadline, settled) - now) / 1e9))
            }
            let batch = state.waiting
            state.waiting = []
            let closed = state.closed
            condition.unlock()
            if batch.isEmpty && closed { return }
            // One syncfs for every data barrier, one fsync per folder (by device and inode) for the rest.
            var syncfsFailure: Int32?
            if batch.contains(where: { $0.folder == nil }) {
                syncfsFailure = flush(descriptor) == 0 ? nil : errno
            }
            var folderFailures: [FolderKey: Int32?] = [:]
            // Every waiter's descriptor is open until it is resumed, below, so within a batch one number is one
            // open folder: the sink's root, shared by most stores, is looked at once.
            var keys: [Int32: FolderKey?] = [:]
            for waiter in batch {
                guard let folder = waiter.folder else {
                    if let syncfsFailure {
                        waiter.continuation.resume(
                            throwing: SinkError("syncfs of \(root.path): \(errorText(syncfsFailure))"))
                    } else {
                        waiter.continuation.resume()
                    }
                    continue
                }
                let key: FolderKey?
                if let known = keys[folder] {
                    key = known
                } else {
                    key = FolderKey(folder)
                    keys[folder] = key
                }
                let failure: Int32?
                if let key, let done = folderFailures[key] {
                    failure = done
                } else {
                    failure = flushFolderCall(folder) == 0 ? nil : errno
                    if let key { folderFailures[key] = failure }
                }
                if let failure {
                    waiter.continuation.resume(throwing: SinkError("fsync of the folder: \(errorText(failure))"))
                } else {
                    waiter.continuation.resume()
                }
            }
        }
    }

    /// The waiting stores that start a flush at once: half the stores that can wait (``Pipeline/storesAtOnce``), so
    /// that one half transfers while the other waits; 256 at most (and outside a run), 8 at least. A target the
    /// waiting stores cannot reach holds every one of them until the stores stop coming, and the transfers stand
    /// still meanwhile. At 20,000 x 10 KB durable: with 496 stores that can wait, 256 made half the flushes of 64
    /// and took 0.88x the time (6 pairs, alternating); with 124 (`concurrency: 4`), 62 took 0.75x the time of 256
    /// (4 pairs); with the open files limited to 300 (100), 256 took 5.2-5.6 s and 50 took 3.7 s. The directory
    /// sink makes its group flush at its first durable store, so the target is that run's (a sink kept for another
    /// run keeps it).
    static func defaultTarget(storesAtOnce: Int? = Pipeline.storesAtOnce) -> Int {
        max(8, min(256, (storesAtOnce ?? 512) / 2))
    }

    /// A monotonic clock, in nanoseconds.
    private static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    /// A folder's identity, so that two descriptors of one folder share one fsync.
    private struct FolderKey: Hashable {
        var device: UInt64
        var inode: UInt64

        init?(_ descriptor: Int32) {
            var info = stat()
            guard fstat(descriptor, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }
}
