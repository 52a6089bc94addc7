import Dispatch
import Foundation
import MediaFetchCore
import Synchronization

/// The archive's single owner: a dedicated thread that runs commands against one ``ArchiveSession``, one at a
/// time, in the order they were submitted.
///
/// Why a thread and not an actor: writing an entry blocks on file I/O and compression for as long as the
/// entry takes, and an actor would do that on one of Swift's few cooperative threads (two on two cores),
/// stalling every download task meanwhile. Here callers only suspend. The queue needs no bound of its own:
/// each caller awaits its command, so it never holds more than one command per download worker.
///
/// The session is created on the thread and never leaves it, so it needs no lock and no `Sendable`.
final class ArchiveOwner: Sendable {
    private enum Command: Sendable {
        case run(@Sendable (ArchiveSession) -> Void)
        case stop
    }

    private struct Queue {
        var commands: [Command] = []
        var started = false
        var stopped = false
    }

    private let configuration: ArchiveSinkConfiguration
    private let queue = Mutex(Queue())
    /// Counts commands waiting; the thread sleeps on it.
    private let pending = DispatchSemaphore(value: 0)

    init(configuration: ArchiveSinkConfiguration) {
        self.configuration = configuration
    }

    /// Runs `body` on the owner thread and returns its result.
    /// - Throws: what `body` throws, or ``SinkError`` when the owner has stopped (the sink finished).
    func perform<T: Sendable>(_ body: @escaping @Sendable (ArchiveSession) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let accepted = submit(.run { session in continuation.resume(with: Result { try body(session) }) })
            if !accepted {
                continuation.resume(throwing: SinkError("the archive \(configuration.path.path) is already finished"))
            }
        }
    }

    /// Ends the thread after the commands before it; later commands are refused.
    func stop() {
        _ = submit(.stop)
    }

    /// Gives up whatever the session has written and stops, without waiting (for the sink's `deinit`).
    func abandon() {
        _ = submit(.run { $0.abandon() })
        stop()
    }

    private func submit(_ command: Command) -> Bool {
        let outcome: (accepted: Bool, start: Bool) = queue.withLock { queue in
            guard !queue.stopped else { return (false, false) }
            if case .stop = command {
                queue.stopped = true
                // No thread yet: there is nothing to stop.
                guard queue.started else { return (false, false) }
            }
            queue.commands.append(command)
            defer { queue.started = true }
            return (true, !queue.started)
        }
        if outcome.start {
            let thread = Thread { [self] in run() }
            thread.name = "mediafetch-archive"
            thread.start()
        }
        if outcome.accepted { pending.signal() }
        return outcome.accepted
    }

    private func run() {
        // Every libarchive call of the session runs here, under a UTF-8 locale (see ``UTF8Locale``).
        UTF8Locale.run {
            let session = ArchiveSession(configuration: configuration)
            while true {
                pending.wait()
                let command = queue.withLock { $0.commands.removeFirst() }
                switch command {
                case .run(let body): body(session)
                case .stop: return
                }
            }
        }
    }
}
