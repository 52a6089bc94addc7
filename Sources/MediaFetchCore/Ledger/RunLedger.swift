import Foundation

/// What the pipeline needs from a ledger, the memory between runs (and, for a ``SharedRunLedger``, between the
/// workers of one run): per asset what is partial and with which validator, what is verified, stored where, what
/// failed and why, and the small values a source keeps (``SourceState``).
///
/// Two implementations ship: ``Ledger`` (SQLite in the state directory, the default) and the PostgreSQL ledger of
/// the `PostgreSQLLedger` module (`ledger: postgresql://...` in a config). Both pass the same contract suite,
/// `LedgerContract` in `MediaFetchTesting`; a ledger of your own should too.
///
/// Implementation requirements:
/// * The write methods (``begin(_:title:url:)`` to ``paused(_:receivedBytes:)``) are called from any thread,
///   also from a transport's own threads, and must return at once: queue them, and commit them in order at
///   ``flushIfDue()`` or ``flush()``. A write that could not be committed stays queued for the next flush.
/// * Every read commits the queued writes first, so that a reader sees what was written before it.
/// * An asset is recorded ``LedgerStatus/stored`` only by ``stored(_:_:)``; nothing else may make a row stored.
/// * ``begin(_:title:url:)`` of a stored or verified asset makes it pending again (it is fetched again).
/// * ``paused(_:receivedBytes:)`` never changes a stored or verified row.
/// * Errors are ``LedgerError``s that say what is wrong and what to do, never quoting a password.
public protocol RunLedger: AnyObject, Sendable {
    /// Where the ledger is, for messages: a file path, or a connection URI with any password removed.
    var location: String { get }

    /// What the ledger knows of one asset; nil when nothing.
    /// - Throws: ``LedgerError`` when the ledger cannot be read.
    func entry(_ key: LedgerKey) throws -> LedgerEntry?

    /// Every entry, ordered by key (source, item id, asset) for a stable listing.
    func entries() throws -> [LedgerEntry]

    /// Every entry of one source, by key.
    func entries(source: String) throws -> [LedgerKey: LedgerEntry]

    /// How many entries each status has (a status without one may be left out), queued writes committed first:
    /// what `mediafetch status` shows of a run of any size without reading its entries. The default counts what
    /// ``entries()`` lists, which holds every entry in memory at once; a ledger that can count where it keeps its
    /// rows should do so (both that ship do).
    func statusCounts() throws -> [LedgerStatus: Int]

    /// What the ledger holds for one asset without committing queued writes first: what earlier runs (or other
    /// workers) left, looked up item by item as a run plans. Writes queued here and not committed are not seen.
    func committedEntry(_ key: LedgerKey) throws -> LedgerEntry?

    /// Calls `body` with every entry of `source` whose status is `status`, ordered by item id and asset, a page at
    /// a time (a walk over a run of any size without holding it); queued writes are committed first.
    func forEachEntry(source: String, status: LedgerStatus, _ body: (LedgerEntry) throws -> Void) throws

    /// Forgets every run key (``takeRunKey(scope:key:value:)``): a run starts with none.
    func resetRunKeys() throws

    /// Whether the run took `key` in `scope`, and with which value: the queued writes first, then the store.
    /// - Returns: nil when the key is not taken; else the value it was taken with (itself nil when taken with none).
    func runKey(scope: String, key: String) throws -> String??

    /// Takes `key` in `scope` for this run with `value` (replacing the value it had), queued with the other writes
    /// and seen by ``runKey(scope:key:)`` at once: a sink's planned names (``PathReserver``), a source's ids.
    func takeRunKey(scope: String, key: String, value: String?)

    /// A download of `key` is about to start: the row exists from now on (pending), with one attempt.
    func begin(_ key: LedgerKey, title: String, url: URL)

    /// The server answered: what to resume against, and how big the whole file is; the row becomes partial.
    func responded(_ key: LedgerKey, validator: Validator?, expectedBytes: Int64?)

    /// The file is complete and checked, and kept in the staging folder until the sink commits it.
    func verified(_ key: LedgerKey, size: Int64, sha256: String?)

    /// The sink committed the file.
    func stored(_ key: LedgerKey, _ record: StoredRecord)

    /// The sink committed the file at `plannedPath` (its plan's relative path). A ledger that keeps names records
    /// the name with it (``NameReserver/nameKey(of:)``), for ``storedName(_:except:)`` in later runs; the default
    /// is ``stored(_:_:)``.
    func stored(_ key: LedgerKey, _ record: StoredRecord, plannedPath: String)

    /// What a file that an earlier run stored makes of the name `key` (``NameReserver/nameKey(of:)``) for the item
    /// `owner` planning it: a file taken (``TakenName/directory`` nil) when another item's stored file has that
    /// name; the directory, with its spelling, when a stored file lies below it; nil otherwise, or when the file is
    /// `owner`'s own. A run's ``PathReserver`` asks it after the run's own names, so that an item keeps its name
    /// whatever order the source gives items in, and no item is given a name another's file has. The default keeps
    /// no names and answers nil (names then follow the source's order alone).
    func storedName(_ key: String, except owner: LedgerKey?) throws -> TakenName?

    /// The download failed for good, with `receivedBytes` kept.
    func failed(_ key: LedgerKey, reason: String, receivedBytes: Int64)

    /// Another attempt at the download begins in this run: ``LedgerEntry/attempts`` counts it.
    func retrying(_ key: LedgerKey)

    /// The run stopped with `receivedBytes` of the file kept for a resume.
    func paused(_ key: LedgerKey, receivedBytes: Int64)

    /// Commits queued writes when the batch is big or old enough; may return at once when another thread is
    /// committing.
    func flushIfDue() throws

    /// Commits every queued write.
    func flush() throws

    /// Forgets everything (`mediafetch clean --all`).
    func removeAll() throws

    /// Partial, pending and verified entries go back to pending with nothing received (`mediafetch clean`).
    func forgetPartials() throws

    /// The value `source` stored under `key` (``SourceState``), or nil.
    func sourceValue(source: String, key: String) throws -> Data?

    /// Writes `values` for `source` at once, all or none; a nil value removes its key.
    func setSourceValues(source: String, _ values: [(key: String, value: Data?)]) throws
}

extension RunLedger {
    public func statusCounts() throws -> [LedgerStatus: Int] {
        var counts: [LedgerStatus: Int] = [:]
        for entry in try entries() { counts[entry.status, default: 0] += 1 }
        return counts
    }

    public func stored(_ key: LedgerKey, _ record: StoredRecord, plannedPath: String) { stored(key, record) }

    public func storedName(_ key: String, except owner: LedgerKey?) throws -> TakenName? { nil }
}

extension Ledger: RunLedger {
    public var location: String { url.path }
}
