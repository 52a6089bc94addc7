import Foundation

#if canImport(Glibc)
    import Glibc
#endif

extension Pipeline {
    /// What the ledger knows of `key` as the item is planned: what is committed (one query, nothing held per item).
    /// An item a queue hands over again after a pause has kept bytes and a validator its download may have recorded
    /// a moment ago, still queued: for such an item the queued writes are committed first, so that the resume
    /// sends `If-Range` with that validator. (Committing for every item would cost a transaction an item.)
    func ledgerEntry(_ key: LedgerKey) throws -> LedgerEntry? {
        guard let ledger = options.ledger else { return nil }
        guard options.control != nil else { return try ledger.committedEntry(key) }
        let staging = Self.stagingPath(
            inFolder: options.stagingDirectory.path, source: key.source, itemID: key.itemID, asset: key.asset)
        var info = stat()
        let kept = stat(staging, &info) == 0 && info.st_size > 0
        return try kept ? ledger.entry(key) : ledger.committedEntry(key)
    }
}
