import Foundation

/// A small key-value store a source keeps between runs, in the run's ledger: what it needs to be cheap to run
/// again, such as the `ETag` and `Last-Modified` of a feed it fetched and the body they stand for, so that the next
/// run asks with a conditional GET and an unchanged feed costs a `304`.
///
/// A source reaches its store through ``SourceContext/state``; keys are its own (the store is scoped to the
/// source's plugin name) and values are bytes. Writes go to disk at once, each call in one transaction, so a
/// source can write a validator and the body it belongs to together and never find one without the other.
///
/// The store lives as long as the ledger: `mediafetch clean --all` empties it, and a run with `--refetch` reads
/// nothing from it (every value reads as absent) while still writing what it learns.
public struct SourceState: Sendable {
    private let ledger: any RunLedger
    /// The source's plugin name: the scope of every key.
    public let source: String
    /// False for a `--refetch` run: stored values are not read.
    public let readsStoredValues: Bool

    /// The store of `source` in `ledger`.
    public init(ledger: any RunLedger, source: String, readsStoredValues: Bool = true) {
        self.ledger = ledger
        self.source = source
        self.readsStoredValues = readsStoredValues
    }

    /// The value stored under `key`, or nil when there is none (or the run reads none).
    /// - Throws: ``LedgerError`` when the ledger cannot be read.
    public func value(forKey key: String) throws -> Data? {
        guard readsStoredValues else { return nil }
        return try ledger.sourceValue(source: source, key: key)
    }

    /// Stores every pair at once, in one transaction; a nil value removes its key.
    /// - Throws: ``LedgerError`` when the ledger cannot be written.
    public func set(_ values: [(key: String, value: Data?)]) throws {
        try ledger.setSourceValues(source: source, values)
    }
}
