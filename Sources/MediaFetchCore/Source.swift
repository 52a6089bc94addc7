import Foundation

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

    public init(
        transport: any Transport, notice: @escaping @Sendable (String) -> Void = { _ in }, state: SourceState? = nil
    ) {
        self.transport = transport
        self.notice = notice
        self.state = state
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
