import Foundation

/// One file of a collection as its manifest describes it.
public struct CollectedFile: Sendable, Hashable, Codable {
    public var asset: AssetKind
    /// The path relative to the collection's root (the entry name in an archive).
    public var path: String
    public var size: Int64
    /// Lowercase hex SHA-256 of the stored bytes; nil only for a file kept from an earlier run whose
    /// ledger record has none (the directory sink does not read kept files again).
    public var sha256: String?
    /// Where the bytes came from: after redirects for a file downloaded in this run, the URL the sink
    /// asks for when kept from an earlier run.
    public var source: URL?

    public init(asset: AssetKind, path: String, size: Int64, sha256: String?, source: URL?) {
        self.asset = asset
        self.path = path
        self.size = size
        self.sha256 = sha256
        self.source = source
    }
}
