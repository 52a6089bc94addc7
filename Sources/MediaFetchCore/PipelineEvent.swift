import Foundation

/// What a run reports as it goes, for the progress display and for tests.
public enum PipelineEvent: Sendable {
    /// A download began; `resumeFrom` bytes kept from an earlier run are not fetched again.
    case itemStarted(ItemRef, asset: AssetKind, url: URL, resumeFrom: Int64)
    /// Bytes arrived; sent at a bounded rate per item.
    case progress(ItemRef, asset: AssetKind, DownloadProgress)
    /// An attempt failed in a way worth trying again; the next one starts after `after`.
    case retrying(ItemRef, asset: AssetKind, attempt: Int, after: Duration, reason: String)
    /// The file is in the sink.
    case stored(ItemRef, asset: AssetKind, location: String, bytes: Int64)
    /// The item will not be stored in this run, and why.
    case failed(ItemRef, url: URL?, reason: String)
    /// Nothing to do for the item, and nothing wrong.
    case skipped(ItemRef, reason: String)
    /// An earlier run stored it, and the sink still has it: no request was made.
    case alreadyStored(ItemRef, asset: AssetKind, location: String)
    /// Something worth telling the user that is not about one item (throttling, paging).
    case notice(String)
    /// The run is over.
    case finished(RunSummary)
}

/// The outcome of a run: counts, bytes, time, and why it stopped early if it did.
public struct RunSummary: Sendable, Hashable, Codable {
    public var stored = 0
    public var failed = 0
    public var skipped = 0
    /// Stored by an earlier run and kept without a request.
    public var alreadyStored = 0
    /// Bytes of the files stored in this run.
    public var bytes: Int64 = 0
    /// Bytes that came over the network in this run (less than `bytes` when downloads resumed).
    public var bytesTransferred: Int64 = 0
    public var wallSeconds: Double = 0
    /// Set when the source failed as a whole; items found before still ran.
    public var sourceError: String?
    /// Set when the sink could not complete the collection.
    public var sinkError: String?
    /// Set when the run was interrupted.
    public var interrupted = false
    /// Set when the failure budget stopped the run early.
    public var stopReason: String?
    /// Downloads stopped by the interruption, their bytes kept for the next run.
    public var paused = 0
    public var pausedBytes: Int64 = 0

    public init() {}

    /// The process exit code the README documents: 0 all stored, 1 some items failed,
    /// 3 the source failed, 130 interrupted. (2, usage or config error, never gets this far.)
    public var exitCode: Int32 {
        if interrupted { return 130 }
        if sourceError != nil { return 3 }
        if failed > 0 || sinkError != nil { return 1 }
        return 0
    }
}
