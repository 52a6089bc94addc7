import Foundation

/// Where finished files go: a directory tree, an archive.
///
/// Implementation requirements:
/// * ``plan(_:asset:)`` is called once per asset, in source order, one call at a time, before the
///   download starts. Its answer may depend only on the item and on the items planned before it
///   (never on download timing), so the same run gives the same names at any concurrency.
/// * ``store(_:as:)`` receives only complete, verified files and may be called concurrently.
///   A file is stored whole or not at all: a crash at any moment leaves every file stored earlier
///   intact and no half-written file under a final name.
/// * Nothing is ever written outside the sink's root, whatever the item's metadata says.
/// * ``finish()`` is called once at the end of the run, also after an interruption.
public protocol Sink: Sendable {
    /// Decides where an asset will be stored.
    /// - Throws: ``SinkError`` when no safe name can be made.
    func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan

    /// Stores `file`, which the sink may move or delete: it is the sink's from now on.
    /// - Returns: where the file now is, for messages and the ledger.
    /// - Throws: ``SinkError`` when it could not be stored; nothing was then stored.
    func store(_ file: URL, as plan: StoragePlan) async throws -> String

    /// Completes the collection (an archive is closed and moved into place).
    func finish() async throws
}

extension Sink {
    public func finish() async throws {}
}

/// Where a sink decided to put an asset.
public struct StoragePlan: Sendable, Hashable, Codable {
    public var item: ItemRef
    public var asset: AssetKind
    /// A relative path under the sink's root, `/`-separated, every component already safe.
    public var relativePath: String

    public init(item: ItemRef, asset: AssetKind, relativePath: String) {
        self.item = item
        self.asset = asset
        self.relativePath = relativePath
    }
}

/// A sink could not plan or store a file.
public struct SinkError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
