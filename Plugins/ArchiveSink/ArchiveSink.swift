import Foundation
import MediaFetchCore
import Synchronization

/// Stores finished files as entries of one archive (tar in pax, ustar or GNU format, optionally gzip, zstd
/// or xz; or zip), named by a ``LayoutTemplate`` like the directory sink, through libarchive.
///
/// * Names: ``LayoutTemplate/render(_:asset:)`` (made safe by ``SafeName``) and a ``NameReserver`` in plan
///   order, the same code as the directory sink; `manifest.json` and `playlist.m3u8` are reserved.
/// * ``store(_:as:)`` may be called concurrently; each file is streamed into its entry in 1 MiB pieces by the
///   archive's single owner thread. It returns once the entry is written; it answers the entry name (= the
///   plan's relative path). The file is only read: ``commitsEachStore`` is false, so the pipeline keeps it
///   until ``finish()`` has committed the archive, and deletes it then.
/// * The archive is written as `<path>.partial-<pid>-<n>` and renamed over `path` by ``finish()`` once
///   complete and flushed, so `path` always holds the previous complete archive or the new one; a killed
///   run's partial file is deleted by the next run.
/// * ``keep(_:stored:)`` answers true when the previous archive at `path` holds the entry with the recorded
///   size; ``finish()`` then copies those entries (header and data, streamed) into the new archive after
///   this run's stores, in the previous archive's order, so every item is in it exactly once.
/// * ``finish()`` after an interruption (called from a cancelled task, as the pipeline does) discards the new
///   archive and keeps the previous one, and throws: nothing of the interrupted run is committed. Its
///   downloads are not lost: they are still in the pipeline's staging folder, and the next run stores them
///   from there without fetching them again.
/// * A write error mid-entry gives up the whole archive: later stores fail, ``finish()`` deletes the
///   temporary file and throws. A corrupt file never reaches `path`.
///
/// Why an interrupted run's work survives as kept downloads rather than as an archive committed in parts:
/// parts would mean either several archives where the user asked for one, or growing the committed archive in
/// place, which a tar's end blocks, a compressed stream and a zip's central directory all resist, and where a
/// kill during an append leaves `path` corrupt unless each part first copies the whole archive. Keeping the
/// files works alike for every format and filter, keeps the single atomic rename, and asks nothing of a killed
/// run's partial archive (it is deleted). The price is disk while a run writes: the kept files hold as much
/// again as the new entries, until ``finish()`` commits and the pipeline deletes them.
public final class ArchiveSink: Sink {
    public let configuration: ArchiveSinkConfiguration
    private let owner: ArchiveOwner
    private let collector: CollectionCollector
    /// Plan-order names; in the run's ledger under a pipeline.
    private let names = PathReserver.reservingCollectionFiles()

    public var pathReserver: PathReserver? { names }

    public init(configuration: ArchiveSinkConfiguration) {
        self.configuration = configuration
        self.owner = ArchiveOwner(configuration: configuration)
        self.collector = CollectionCollector(options: configuration.collection)
    }

    deinit {
        // A sink dropped without finish() (a failed setup, a test) must not leave its temporary file.
        owner.abandon()
    }

    public var assets: [AssetKind] { configuration.collection.assets }

    /// The manifest lists every file's SHA-256.
    public var needsDigests: Bool { configuration.collection.writesManifest }

    public func url(for asset: AssetKind, of item: MediaItem) -> URL? {
        configuration.collection.url(for: asset, of: item)
    }

    public var commitsEachStore: Bool { false }

    /// Renders the layout and reserves a unique entry name; deterministic in call order.
    /// - Throws: ``SinkError`` when the format cannot hold the name (ustar's 255 bytes).
    public func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        let wanted = configuration.layout.render(item, asset: asset)
        let path = try names.reserve(wanted).joined(separator: "/")
        if let refusal = configuration.format.refusal(of: path) {
            throw SinkError("cannot store \(item.ref) as \(path) in \(configuration.path.path): \(refusal)")
        }
        let plan = StoragePlan(item: item.ref, asset: asset, relativePath: path)
        collector.planned(item, as: plan, from: url(for: asset, of: item))
        return plan
    }

    /// Writes `file` into the archive as `plan.relativePath`; the file is left as it was (see the type's doc).
    /// - Returns: the entry name, `plan.relativePath`.
    /// - Throws: ``SinkError`` naming the item; the file is then not in the archive.
    public func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        let name = plan.relativePath
        let modified: Date
        switch configuration.entryTime {
        case .releaseDate: modified = collector.item(for: plan)?.releaseDate ?? file.downloadedAt
        case .downloadTime: modified = file.downloadedAt
        }
        do {
            try await owner.perform { try $0.store(file, as: name, modified: modified) }
        } catch let error as SinkError {
            throw SinkError("cannot store \(plan.item) as \(name): \(error.message)")
        }
        collector.stored(plan, file: file)
        return name
    }

    /// True when the previous archive holds `record`'s entry, still under this run's name, with its size;
    /// the entry is then carried into the new archive by ``finish()``.
    public func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool {
        guard record.location == plan.relativePath else { return false }
        let name = plan.relativePath
        let size = record.size
        let kept = try await owner.perform { $0.keep(name, size: size) }
        if kept { collector.kept(plan, record: record) }
        return kept
    }

    /// Carries kept entries over, appends the manifest and playlist, closes the archive, flushes it and
    /// moves it into place. After an interruption, keeps the previous archive instead (see the type's doc).
    /// - Throws: ``SinkError`` when the archive could not be completed; `path` is then unchanged.
    public func finish() async throws {
        defer { owner.stop() }
        if Task.isCancelled {
            _ = try? await owner.perform { $0.abandon() }
            throw SinkError(
                "interrupted, so the archive \(configuration.path.path) was left as it was (an archive is "
                    + "replaced only by a complete one); the next run stores what this one downloaded without "
                    + "fetching it again"
            )
        }
        do {
            let hashes = try await owner.perform { try $0.carry() }
            for (name, hash) in hashes { collector.verified(path: name, sha256: hash) }
            let extras = try collector.files()
            try await owner.perform { try $0.close(extras: extras) }
        } catch {
            _ = try? await owner.perform { $0.abandon() }
            throw error as? SinkError ?? SinkError("the archive \(configuration.path.path) was not written: \(error)")
        }
    }
}
