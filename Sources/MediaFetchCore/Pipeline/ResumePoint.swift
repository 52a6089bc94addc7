import Foundation

/// Where a download goes on from: the bytes a staging file holds, when the ledger knows the validator they
/// were fetched under (a resume without one could splice two versions of the file) and nothing else speaks
/// against them.
struct ResumePoint: Sendable, Hashable {
    /// Bytes kept, sent as `Range: bytes=<offset>-`.
    var offset: Int64
    /// Sent as `If-Range`; nil with no kept bytes.
    var validator: Validator?

    /// Nothing kept: the download starts from zero.
    static let start = ResumePoint(offset: 0, validator: nil)

    /// Decides from the staging file's size and what the ledger remembers of the item.
    /// - Parameters:
    ///   - kept: the staging file's size (0 when there is none).
    ///   - entry: the ledger's row for the item, if any.
    ///   - url: what the download asks for now.
    ///   - refetch: the run ignores what the ledger says.
    /// - Returns: where to go on from; ``start`` when the kept bytes must go (then `discardsKept`).
    static func decide(kept: Int64, entry: LedgerEntry?, url: URL, refetch: Bool) -> ResumePoint {
        guard !refetch, kept > 0, let entry, let validator = entry.validator, validator.ifRangeValue != nil,
            entry.url == url.absoluteString, kept <= entry.expectedBytes ?? .max
        else { return .start }
        return ResumePoint(offset: kept, validator: validator)
    }
}
