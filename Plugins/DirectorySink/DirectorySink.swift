import Foundation
import MediaFetchCore
import Synchronization

/// Stores files in a folder tree, named by a ``LayoutTemplate``: `downloads/Artist/Album/01 Title.m4a`.
///
/// * Names come from ``LayoutTemplate/render(_:asset:)`` (every component made safe by ``SafeName``) and are
///   made unique by a ``NameReserver`` in plan order, so the same run gives the same tree at any concurrency.
/// * ``store(_:as:)`` may run concurrently. It never writes outside ``root``: no symbolic link below the
///   root is followed, and a link or file where a folder should be is reported, not removed. A file appears
///   under its final name whole or not at all, replacing an older file of that name.
/// * A store returns the path relative to ``root`` (`Artist/Album/01 Title.m4a`), the same string as the
///   plan's ``StoragePlan/relativePath``: stable if the user moves the folder.
public final class DirectorySink: Sink {
    /// `directory`: options `path` and `layout`.
    public static let descriptor = SinkDescriptor(
        info: PluginInfo(
            kind: .sink,
            name: "directory",
            summary: "Stores files in a folder tree named by a layout such as {artist}/{album}/{title}.{ext}.",
            options: [
                OptionSpec(
                    "path",
                    .path,
                    default: .path("downloads"),
                    doc: "The folder files are stored in, created when missing. A relative path is relative to "
                        + "the config file's folder. Symbolic links inside it are never followed."
                ),
                OptionSpec(
                    "layout",
                    .string,
                    default: .string(LayoutTemplate.defaultLayout),
                    doc: "Where each file goes below `path`; `/` separates folders. Placeholders: "
                        + LayoutTemplate.placeholderList + ". Numbers take a zero-padded width, "
                        + "{track-number:02}; {duration} reads 3m25s; dates are UTC; {{ and }} are literal "
                        + "braces. A folder whose fields are all missing is left out; clashing names get "
                        + "\" (2)\", \" (3)\" in the order items are found."
                ),
            ]
        ),
        make: { options, _ in try DirectorySink(options: options) }
    )

    /// The folder everything is stored under.
    public let root: URL
    public let layout: LayoutTemplate
    /// Plan-order state; plan calls come one at a time, but the sink must be `Sendable` and `store` runs
    /// on other tasks, so the reserver lives behind a lock rather than in an actor hop.
    private let reserver: Mutex<NameReserver>

    /// A sink storing under `root` (resolved against the current directory when relative).
    public init(root: URL, layout: LayoutTemplate) {
        self.root = root.standardizedFileURL
        self.layout = layout
        self.reserver = Mutex(NameReserver())
    }

    /// The factory: reads `path` and `layout` from validated options.
    /// - Throws: ``ConfigError`` at the `layout` key for a bad layout, at `path` for an empty path.
    public convenience init(options: PluginOptions) throws(ConfigError) {
        let text = options.string("layout") ?? LayoutTemplate.defaultLayout
        let layout: LayoutTemplate
        do {
            layout = try LayoutTemplate(text)
        } catch {
            throw options.error("layout", error.message)
        }
        // The config loader makes `.path` values absolute against the config file; a relative one (an
        // options value built in code) falls back to the current directory.
        let path = options.path("path") ?? options.string("path") ?? "downloads"
        guard !path.isEmpty else { throw options.error("path", "the folder path is empty") }
        self.init(root: URL(fileURLWithPath: path, isDirectory: true), layout: layout)
    }

    /// Renders the layout and reserves a unique name; deterministic in call order.
    public func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        let wanted = layout.render(item, asset: asset)
        let path = reserver.withLock { $0.reserve(wanted) }.joined(separator: "/")
        return StoragePlan(item: item.ref, asset: asset, relativePath: path)
    }

    /// Moves `file` to `plan.relativePath` under ``root`` atomically.
    /// - Returns: `plan.relativePath`, the path relative to ``root``.
    /// - Throws: ``SinkError`` naming the item and path; an older file of that name is then untouched and no
    ///   temporary file is left.
    public func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        try SafePlacement(root: root, relativePath: plan.relativePath, item: plan.item).place(file.url)
        return plan.relativePath
    }

    /// A file stored by an earlier run is kept when it is still where this run would put it, a regular
    /// file of the recorded size; anything else (deleted, moved, edited, layout changed) is fetched again.
    public func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool {
        guard record.location == plan.relativePath else { return false }
        var info = stat()
        let path = root.appendingPathComponent(plan.relativePath).path
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { return false }
        return Int64(info.st_size) == record.size
    }
}
