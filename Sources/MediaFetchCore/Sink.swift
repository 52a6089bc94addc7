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
/// * ``prepare()`` is called once by the ``Runner`` before the source starts; a sink that can find out early that
///   it cannot store anything (an object store that is unreachable, refuses the credentials or lacks the
///   bucket) throws there, and the run ends before anything is fetched (`mediafetch` exits 2). A sink used
///   without the runner must work without it (do the same checks on first use).
/// * ``finish()`` is called once at the end of the run, also after an interruption.
/// * A sink whose stores are durable only once ``finish()`` returns (an archive) says so with
///   ``commitsEachStore``, so that the ledger records its items as stored only then. Such a sink must
///   leave each file it is given where it is and unchanged (it may read it until ``finish()`` returns):
///   the pipeline keeps it until the commit, so that a run interrupted before then loses no download,
///   and deletes it after.
public protocol Sink: Sendable {
    /// Which files of each item the sink wants, in order. Default: the preview.
    var assets: [AssetKind] { get }

    /// Where to fetch `asset` of `item` from; nil when the item has none. Default: the item's URL
    /// for it (a sink may ask for a larger artwork than the catalog's thumbnail).
    func url(for asset: AssetKind, of item: MediaItem) -> URL?

    /// True when the sink needs every file's SHA-256 (for a manifest), even where the run verifies sizes
    /// only. Default: false.
    var needsDigests: Bool { get }

    /// True when a file is safely stored once ``store(_:as:)`` returns; false when only
    /// ``finish()`` makes the run's files durable. False also means that ``store(_:as:)`` must not move,
    /// delete or change the file it is given: it is the pipeline's copy until ``finish()`` commits.
    /// Default: true.
    var commitsEachStore: Bool { get }

    /// The largest file, in bytes, that the pipeline may hand to ``store(_:as:)`` in memory
    /// (``StagedFile/contents``) instead of in the staging folder; 0, the default, for always a file. Worth it to
    /// a sink that copies the bytes elsewhere (an object store's uploads: a small file then never touches the disk
    /// on its way), and to one that writes files (the directory sink writes them straight into their folder,
    /// ``SafePlacement/place(contents:root:attributes:beforeNaming:)``, sparing a staging file and a rename). The pipeline holds all such files of a run within a bound of its own
    /// (``Pipeline/inMemoryStagingBudget``), whatever the concurrency, and stages the rest as files; a
    /// transport that does not keep bodies in memory leaves them all files. Ignored for a sink that does not
    /// ``commitsEachStore`` (its files must stay until the commit). Must not change over the sink's life; a sink
    /// that wraps another forwards it, as it forwards the other properties.
    var inMemoryStagingLimit: Int64 { get }

    /// The reserver ``plan(_:asset:)`` takes its names from, for the pipeline to keep them in the run's ledger
    /// (``PathReserver/keep(in:)``) rather than in memory; nil when the sink names files otherwise. Default: nil.
    var pathReserver: PathReserver? { get }

    /// Decides where an asset will be stored.
    /// - Throws: ``SinkError`` when no safe name can be made.
    func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan

    /// Stores `file`. A sink that ``commitsEachStore`` may move or delete it: it is the sink's from now
    /// on. Any other sink must only read it: the file stays the pipeline's, kept until ``finish()`` has
    /// committed, so that a run interrupted before then stores it again from there without fetching it.
    /// - Returns: where the file now is, for messages and the ledger.
    /// - Throws: ``SinkError`` when it could not be stored; nothing was then stored.
    func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String

    /// The ledger says an earlier run stored `plan` as `record`. Answers whether the sink still has
    /// it, and keeps it (an archive carries it into the new one); false makes the pipeline fetch it
    /// again. Default: false.
    func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool

    /// Completes the collection (an archive is closed and moved into place).
    func finish() async throws

    /// Checks, before the run fetches anything, that stores can succeed at all, and sets up what the sink needs
    /// (an object store's bucket; the unfinished uploads an interrupted run left). Default: nothing.
    /// - Throws: ``SinkError`` saying what is wrong and what to do; the run then ends before it starts.
    func prepare() async throws

    /// `mediafetch clean`: discards what interrupted runs left unfinished in the collection itself (an object
    /// store's open multipart uploads), never a stored file. Default: nothing.
    /// - Returns: one line per thing discarded, for the user.
    /// - Throws: ``SinkError`` when the collection cannot be reached.
    func discardUnfinished() async throws -> [String]
}

extension Sink {
    public var assets: [AssetKind] { [.preview] }

    public func url(for asset: AssetKind, of item: MediaItem) -> URL? {
        item.url(for: asset)
    }

    public var commitsEachStore: Bool { true }

    public var needsDigests: Bool { false }

    public var pathReserver: PathReserver? { nil }

    public var inMemoryStagingLimit: Int64 { 0 }

    public func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool { false }

    public func finish() async throws {}

    public func prepare() async throws {}

    public func discardUnfinished() async throws -> [String] { [] }
}

/// A finished, verified download waiting in the staging directory (or, for a sink that takes small files so,
/// in memory: ``contents``).
public struct StagedFile: Sendable {
    /// The file. Made with ``init(path:size:sha256:sourceURL:downloadedAt:contents:)``, this URL is made from
    /// ``path`` each time it is read.
    public var url: URL {
        get { file.url }
        set { file = FileLocation(url: newValue) }
    }
    /// The path of ``url``, which a sink that opens the file itself should use: a staged file made from a path makes
    /// its URL only when asked (see ``DownloadRequest/destinationPath``).
    public var path: String {
        get { file.path }
        set { file = FileLocation(path: newValue) }
    }
    private var file: FileLocation
    public var size: Int64
    /// Lowercase hex SHA-256 of the bytes; nil when the run verifies sizes only and the sink did not ask
    /// for digests (``Sink/needsDigests``).
    public var sha256: String?
    /// Where the bytes came from (after redirects).
    public var sourceURL: URL
    /// When the download finished.
    public var downloadedAt: Date
    /// The file's bytes, when the pipeline kept them in memory (only for a sink whose
    /// ``Sink/inMemoryStagingLimit`` allows it): then nothing is at ``path``, and the sink reads these instead.
    public var contents: Data?

    public init(
        url: URL, size: Int64, sha256: String?, sourceURL: URL, downloadedAt: Date = Date(), contents: Data? = nil
    ) {
        self.init(
            file: FileLocation(url: url), size: size, sha256: sha256, sourceURL: sourceURL, at: downloadedAt,
            contents: contents)
    }

    /// A staged file given by its path (see ``path``).
    public init(
        path: String, size: Int64, sha256: String?, sourceURL: URL, downloadedAt: Date = Date(), contents: Data? = nil
    ) {
        self.init(
            file: FileLocation(path: path), size: size, sha256: sha256, sourceURL: sourceURL, at: downloadedAt,
            contents: contents)
    }

    private init(
        file: FileLocation, size: Int64, sha256: String?, sourceURL: URL, at downloadedAt: Date, contents: Data?
    ) {
        self.contents = contents
        self.file = file
        self.size = size
        self.sha256 = sha256
        self.sourceURL = sourceURL
        self.downloadedAt = downloadedAt
    }
}

/// What the ledger remembers of a stored file.
public struct StoredRecord: Sendable, Hashable {
    /// What ``Sink/store(_:as:)`` answered.
    public var location: String
    public var size: Int64
    public var sha256: String?

    public init(location: String, size: Int64, sha256: String?) {
        self.location = location
        self.size = size
        self.sha256 = sha256
    }
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
