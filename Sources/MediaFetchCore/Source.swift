import Foundation
import Synchronization

/// Finds media items: an iTunes search, a list of URLs.
///
/// Implementation requirements:
/// * Every network call goes through `context.transport`, so that a test that swaps the transport
///   swaps everything that touches the network.
/// * Items are emitted in a deterministic order for the same catalog answers: the sink names
///   files in that order, and the output must not depend on timing.
/// * `emit` may suspend (the pipeline applies back-pressure); an error it throws ends the run and
///   must be rethrown.
/// * Items the source cannot use are reported with ``SourceOutput/skipped(_:reason:)`` (nothing
///   to download, a duplicate) or ``SourceOutput/failed(_:url:reason:)`` (bad input the user should fix).
public protocol Source: Sendable {
    /// Produces this source's items.
    /// - Throws: ``SourceError`` when the source as a whole failed (the API refused, the list is unreadable).
    func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws
}

/// What a source has at hand while it runs.
public struct SourceContext: Sendable {
    public var transport: any Transport
    /// Receives notices worth showing the user (throttling, paging), not items.
    public var notice: @Sendable (String) -> Void
    /// What the source kept from earlier runs (a feed's validators, say), in the run's ledger; nil when the run
    /// has no ledger.
    public var state: SourceState?
    /// The ids this run's source emitted, in the run's ledger when it has one (nothing per item in memory).
    let seen: SeenIDs

    public init(
        transport: any Transport, notice: @escaping @Sendable (String) -> Void = { _ in }, state: SourceState? = nil
    ) {
        self.init(transport: transport, notice: notice, state: state, seen: SeenIDs(ledger: nil))
    }

    init(transport: any Transport, notice: @escaping @Sendable (String) -> Void, state: SourceState?, seen: SeenIDs) {
        self.transport = transport
        self.notice = notice
        self.state = state
        self.seen = seen
    }

    /// Notes that this run's source met `id` at `place` (a line number, say) and answers where it met it first:
    /// nil the first time, so a source reports a duplicate without keeping every id it emitted. The ids are kept
    /// in the run's ledger (forgotten when the next run starts), or in memory for a run without one.
    /// - Throws: ``LedgerError`` when the ledger cannot be read.
    public func firstOccurrence(of id: String, at place: String) throws -> String? {
        try seen.firstOccurrence(of: id, at: place)
    }
}

/// Where ``SourceContext/firstOccurrence(of:at:)`` keeps the ids: the ledger's run keys, or memory.
final class SeenIDs: Sendable {
    private static let scope = "seen"
    private let ledger: (any RunLedger)?
    private let memory = Mutex<[String: String]>([:])

    init(ledger: (any RunLedger)?) {
        self.ledger = ledger
    }

    func firstOccurrence(of id: String, at place: String) throws -> String? {
        guard let ledger else {
            return memory.withLock { seen in
                if let first = seen[id] { return first }
                seen[id] = place
                return nil
            }
        }
        if let first = try ledger.runKey(scope: Self.scope, key: id) { return first ?? "" }
        ledger.takeRunKey(scope: Self.scope, key: id, value: place)
        return nil
    }
}

/// One thing a source reports.
public enum SourceOutput: Sendable {
    case item(MediaItem)
    /// Nothing to do for this entry, and nothing wrong either.
    case skipped(ItemRef, reason: String)
    /// An entry that should have been an item and is not; counts as a failure.
    case failed(ItemRef, url: URL?, reason: String)
}

/// A source failed as a whole: the run cannot know what it should have fetched.
public struct SourceError: Error, Sendable, CustomStringConvertible {
    /// What happened and what to do, for a person.
    public var message: String
    /// The error underneath, when there was one (a transport's, the file system's), for programs that look.
    public var cause: (any Error & Sendable)?

    public init(_ message: String, cause: (any Error & Sendable)? = nil) {
        self.message = message
        self.cause = cause
    }

    public var description: String { message }
}
