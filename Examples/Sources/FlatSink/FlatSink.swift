import Foundation
import MediaFetchCore

/// Stores every file in one folder as `Artist - Title.ext`, clashes numbered in plan order: a sink written
/// outside the MediaFetch repository, from the core's public helpers alone.
public final class FlatSink: Sink {
    public let root: URL
    /// Plans come one at a time, in source order. Handed to the pipeline as `pathReserver`, the names taken live in
    /// the run's ledger, not in memory, however many items the run has.
    private let names = PathReserver()

    public var pathReserver: PathReserver? { names }

    public init(root: URL) {
        self.root = root.standardizedFileURL
    }

    public func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        let artist = item.artist.map { $0 + " - " } ?? ""
        let ext = item.fileExtension(for: asset)
        let wanted = SafeName.component(artist + item.title + (ext.isEmpty ? "" : "." + ext), keepingExtension: true)
        let name = try names.reserve([wanted]).joined()
        return StoragePlan(item: item.ref, asset: asset, relativePath: name)
    }

    public func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        try SafePlacement(rootPath: root.path, relativePath: plan.relativePath, item: plan.item).place(file.url.path)
        return plan.relativePath
    }

    public func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool {
        guard record.location == plan.relativePath else { return false }
        var info = stat()
        let path = root.appendingPathComponent(plan.relativePath).path
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && Int64(info.st_size) == record.size
    }
}

extension FlatSink {
    /// `sink: {use: flat, path: FOLDER}` in a config.
    public static let descriptor = SinkDescriptor(
        info: PluginInfo(
            kind: .sink, name: "flat", summary: "Stores every file in one folder as Artist - Title.ext.",
            options: [
                OptionSpec(
                    "path", .path, default: .path("flat"),
                    doc: "The folder, created when missing; relative to the config file's folder.")
            ]),
        make: { options, _ in FlatSink(root: URL(fileURLWithPath: options.path("path") ?? "flat")) })
}
