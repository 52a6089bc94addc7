import MediaFetchCore
import Synchronization

/// Collects progress reports, which arrive on the transport's thread.
final class ProgressLog: Sendable {
    private let storage = Mutex<[DownloadProgress]>([])

    func add(_ progress: DownloadProgress) {
        storage.withLock { $0.append(progress) }
    }

    var reports: [DownloadProgress] { storage.withLock { $0 } }
}
