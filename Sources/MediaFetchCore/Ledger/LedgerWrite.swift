/// One write a run asks of its ledger, queued and committed in batches: the SQLite ledger's and the bundled
/// PostgreSQL ledger's alike (`package`: shared by this package's modules, not public API).
package enum LedgerWrite: Sendable {
    case begin(LedgerKey, title: String, url: String)
    case responded(LedgerKey, validator: Validator?, expected: Int64?)
    case verified(LedgerKey, size: Int64, sha256: String?)
    case stored(LedgerKey, StoredRecord)
    case failed(LedgerKey, reason: String, received: Int64)
    case paused(LedgerKey, received: Int64)
    case retrying(LedgerKey)
    case runKey(scope: String, key: String, value: String?)

    /// The asset the write is about; nil for a run key.
    package var key: LedgerKey? {
        switch self {
        case .begin(let key, _, _), .responded(let key, _, _), .verified(let key, _, _), .stored(let key, _),
            .failed(let key, _, _), .paused(let key, _), .retrying(let key):
            key
        case .runKey: nil
        }
    }
}
