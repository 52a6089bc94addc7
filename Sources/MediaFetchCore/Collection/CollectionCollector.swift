import Foundation
import Synchronization

/// Remembers what a collection sink planned and stored, and renders the collection's own files
/// (`manifest.json`, `playlist.m3u8`) from it. One implementation for every sink, so a directory and
/// an archive describe their contents the same way.
///
/// Use: ``planned(_:as:from:)`` in the sink's `plan` (plan order is the order of both files), then
/// ``stored(_:file:)`` after a store commits or ``kept(_:record:)`` when an earlier run's file is kept;
/// ``files()`` at `finish`. Only planned files that were stored or kept appear. Thread-safe: stores run
/// concurrently.
///
/// When the options ask for neither file, a planned item is held only until its store (or keep), so that a run
/// of a million items holds only those in flight; ``collectedItems()`` is then empty.
public final class CollectionCollector: Sendable {
    public let options: CollectionOptions

    private struct Planned {
        var item: MediaItem
        var asset: AssetKind
        var source: URL?
        var file: CollectedFile?
    }

    private struct State {
        var order: [String] = []
        var byPath: [String: Planned] = [:]
    }

    private let state = Mutex(State())
    /// Whether what was stored is kept for the collection's own files.
    private let keepsStored: Bool

    public init(options: CollectionOptions) {
        self.options = options
        keepsStored = options.writesManifest || options.writesPlaylist
    }

    /// Records `plan` for `item`, in plan order; `source` is the URL the sink asks for.
    public func planned(_ item: MediaItem, as plan: StoragePlan, from source: URL?) {
        state.withLock { state in
            if keepsStored, state.byPath[plan.relativePath] == nil { state.order.append(plan.relativePath) }
            state.byPath[plan.relativePath] = Planned(item: item, asset: plan.asset, source: source)
        }
    }

    /// The item planned as `plan`, if it was.
    public func item(for plan: StoragePlan) -> MediaItem? {
        state.withLock { $0.byPath[plan.relativePath]?.item }
    }

    /// Records that `file` is now stored as `plan`.
    public func stored(_ plan: StoragePlan, file: StagedFile) {
        collect(plan, size: file.size, sha256: file.sha256, source: file.sourceURL)
    }

    /// Records that an earlier run's file is kept as `plan`.
    public func kept(_ plan: StoragePlan, record: StoredRecord) {
        collect(plan, size: record.size, sha256: record.sha256, source: nil)
    }

    /// Replaces the checksum of a kept file once the sink has read its bytes (an archive copying an
    /// entry hashes it on the way).
    public func verified(path: String, sha256: String) {
        state.withLock { $0.byPath[path]?.file?.sha256 = sha256 }
    }

    private func collect(_ plan: StoragePlan, size: Int64, sha256: String?, source: URL?) {
        state.withLock { state in
            guard keepsStored else {
                state.byPath[plan.relativePath] = nil
                return
            }
            guard var planned = state.byPath[plan.relativePath] else { return }
            planned.file = CollectedFile(
                asset: plan.asset, path: plan.relativePath, size: size, sha256: sha256,
                source: source ?? planned.source
            )
            state.byPath[plan.relativePath] = planned
        }
    }

    /// The items with their stored files, in plan order; an item's files in the order they were planned.
    public func collectedItems() -> [CollectedItem] {
        state.withLock { state in
            var result: [CollectedItem] = []
            var indexByID: [String: Int] = [:]
            for path in state.order {
                guard let planned = state.byPath[path], let file = planned.file else { continue }
                if let index = indexByID[planned.item.id] {
                    result[index].files.append(file)
                } else {
                    indexByID[planned.item.id] = result.count
                    result.append(CollectedItem(item: planned.item, files: [file]))
                }
            }
            return result
        }
    }

    /// The collection's own files the options ask for, name and bytes: the manifest, then the playlist.
    /// - Throws: an `EncodingError` if the manifest cannot be encoded (a non-finite number in a record).
    public func files() throws -> [(name: String, data: Data)] {
        let items = collectedItems()
        var result: [(name: String, data: Data)] = []
        if options.writesManifest {
            result.append((CollectionOptions.manifestName, try CollectionManifest.render(items)))
        }
        if options.writesPlaylist {
            result.append((CollectionOptions.playlistName, CollectionPlaylist.render(items)))
        }
        return result
    }
}
