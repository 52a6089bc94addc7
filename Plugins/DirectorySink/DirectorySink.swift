import CLinux
import Foundation
import MediaFetchCore
import Synchronization

/// Stores files in a folder tree, named by a ``LayoutTemplate``: `downloads/Artist/Album/01 Title.m4a`.
///
/// * Names come from ``LayoutTemplate/render(_:asset:)`` (every component made safe by ``SafeName``) and are
///   made unique by a ``NameReserver`` in plan order, so the same run gives the same tree at any concurrency.
/// * ``store(_:as:)`` may run concurrently. It never writes outside ``root``: no symbolic link below the
///   root is followed, and a link or file where a folder should be is reported, not removed. A file appears
///   under its final name whole or not at all, replacing only an older file of its own item (a name held by
///   anything else before the run is numbered around at plan time: see ``ownerAttribute``).
/// * A store returns the path relative to ``root`` (`Artist/Album/01 Title.m4a`), the same string as the
///   plan's ``StoragePlan/relativePath``: stable if the user moves the folder.
public final class DirectorySink: Sink {
    /// The collection defaults of this sink: previews only, no manifest or playlist unless asked for, so a
    /// tree made before those existed stays as it was.
    public static let collectionDefaults = CollectionOptions(writesManifest: false, writesPlaylist: false)

    /// `directory`: options `path` and `layout`, and the collection options `assets`, `artwork-size`,
    /// `manifest`, `playlist`.
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
                OptionSpec(
                    "sync",
                    .bool,
                    default: .bool(true),
                    doc: "Put each file's bytes on disk before it gets its name, and the name after, before the "
                        + "ledger says stored, so a power cut cannot leave a stored file empty. On ext4, XFS, Btrfs "
                        + "and F2FS files are flushed in groups: one syncfs (which also writes out other programs' "
                        + "unsaved data on that filesystem) and one fsync per folder cover every file finished "
                        + "meanwhile; elsewhere each file and folder is fsynced. Off, files are as safe as "
                        + "curl's or wget's: a crash of mediafetch still loses nothing, a power cut may lose the "
                        + "newest files, and the next run fetches them again (it checks every stored file's size)."
                ),
            ] + CollectionOptions.specs(defaults: collectionDefaults)
        ),
        make: { options, _ in try DirectorySink(options: options) }
    )

    /// The folder everything is stored under.
    public let root: URL
    /// `root.path`, worked out once (each `URL.path` decodes the whole path again).
    private let rootPath: String
    public let layout: LayoutTemplate
    public let collection: CollectionOptions
    /// Whether files and folders are flushed to disk as they are stored (the `sync` option).
    public let sync: Bool
    private let collector: CollectionCollector
    /// Plan-order names (locked inside, as `store` runs on other tasks); in the run's ledger under a pipeline.
    private let names: PathReserver

    public var pathReserver: PathReserver? { names }
    /// Whether the root held files before the run (``folderHeldFiles()``), looked at by the first plan.
    private let heldFiles = Mutex<Bool?>(nil)
    /// Decided on the first store that flushes, once the root exists.
    private let flusher = Mutex(FlushChoice.undecided)
    /// The root, opened by the first store and kept open for the next ones: a store into the root itself then
    /// makes no `open` and `close` of it (two of a small file's ten system calls). Opened again when the folder
    /// was removed meanwhile (see ``store(_:as:)``).
    private let openRoot = Mutex<OpenFolder?>(nil)
    /// Whether each folder staged files came from is on the root's filesystem (see ``groupFlush(covering:)``).
    private let stagingDevices = Mutex<[String: Bool]>([:])
    /// What group flushing calls: `syncfs`, `fsync` of a folder, and `fstatfs`'s type (tests replace them).
    let calls: FlushCalls

    struct FlushCalls: Sendable {
        var syncFilesystem: @Sendable (Int32) -> Int32 = { syncfs($0) }
        var syncFolder: @Sendable (Int32) -> Int32 = { fsync($0) }
        var filesystemType: @Sendable (Int32) -> Int = { mf_filesystem_type($0) }
    }

    private enum FlushChoice {
        case undecided
        /// The root's filesystem flushes everything with `syncfs`; `device` is its `st_dev`.
        case group(GroupFlush, device: dev_t)
        /// Any other filesystem (FUSE, NFS, FAT): an `fsync` of each file and folder, as `SafePlacement` does.
        case eachFile
    }

    /// Filesystems (`statfs` types) whose `syncfs` writes every dirty file and then empties the disk's cache:
    /// ext2/3/4, XFS, Btrfs, F2FS, and tmpfs, which has nothing to write. FUSE may not pass `syncfs` on to
    /// its server, and FAT's does not flush the disk's cache, so they, and anything not named here, keep an
    /// `fsync` per file.
    static let groupFlushFilesystems: Set<Int> = [0xEF53, 0x5846_5342, 0x9123_683E, 0xF2F5_2010, 0x0102_1994]

    /// A sink storing under `root` (resolved against the current directory when relative).
    public convenience init(
        root: URL, layout: LayoutTemplate, collection: CollectionOptions = DirectorySink.collectionDefaults,
        sync: Bool = true
    ) {
        self.init(root: root, layout: layout, collection: collection, sync: sync, calls: FlushCalls())
    }

    /// As the public initializer, with the calls group flushing makes replaced (tests).
    init(
        root: URL, layout: LayoutTemplate, collection: CollectionOptions = DirectorySink.collectionDefaults,
        sync: Bool = true, calls: FlushCalls
    ) {
        self.calls = calls
        self.root = root.standardizedFileURL
        self.rootPath = self.root.path
        self.layout = layout
        self.collection = collection
        self.sync = sync
        self.collector = CollectionCollector(options: collection)
        // The collection's own file names are taken even when not written, so no item ever changes name.
        self.names = PathReserver.reservingCollectionFiles()
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
        self.init(
            root: URL(fileURLWithPath: path, isDirectory: true), layout: layout,
            collection: try CollectionOptions(options: options, defaults: Self.collectionDefaults),
            sync: options.bool("sync") ?? true
        )
    }

    public var assets: [AssetKind] { collection.assets }

    /// The manifest lists every file's SHA-256.
    public var needsDigests: Bool { collection.writesManifest }

    public func url(for asset: AssetKind, of item: MediaItem) -> URL? {
        collection.url(for: asset, of: item)
    }

    /// Renders the layout and reserves a unique name; deterministic in call order (and in what the folder held
    /// before the run: see ``ownerAttribute``).
    public func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        let wanted = layout.render(item, asset: asset)
        let path: String
        if folderHeldFiles() {
            let marks = [Self.ownerMark(of: item.id, asset: asset)] + Self.earlierOwnerMark(of: item.id, asset: asset)
            path = try names.reserve(wanted, occupied: { self.holdsAnotherFile($0, marks: marks) })
                .joined(separator: "/")
        } else {
            path = try names.reserve(wanted).joined(separator: "/")
        }
        let plan = StoragePlan(item: item.ref, asset: asset, relativePath: path)
        // Only the collection's own files read what was planned; without them nothing per item is held.
        if collection.writesManifest || collection.writesPlaylist {
            collector.planned(item, as: plan, from: url(for: asset, of: item))
        }
        return plan
    }

    /// The extended attribute each stored file carries (`user.mediafetch.item`): its asset and item id
    /// (`preview:1440857781`), or, when those take more than ``ownerMarkLimit`` bytes (a URL list's ids are URLs),
    /// `sha256:` and the first 128 bits of their SHA-256 in hex. A run into a folder that held files
    /// before numbers around every file that is not the planned item's own, by this mark or by the ledger: a file
    /// a person put there, or another item's from a run whose ledger is gone, is never replaced. A file the run
    /// before put in place and was killed before recording keeps its name for its item. The ledger's word comes
    /// first: a name its row says the item stored (by name, or by location for rows without one) is the item's.
    ///
    /// What it does not tell: the source (two sources whose items share an id, into one folder without their
    /// ledgers, take each other's files for their own); a file someone put in place of one the ledger says the item
    /// stored (it is fetched again over it when it differs). Where the filesystem keeps no user attributes (some
    /// FUSE and NFS mounts, tmpfs before Linux 6.6, also as the staging folder of a copy), an unrecorded file is
    /// numbered around too: a killed run's last file is then stored again beside itself.
    public static let ownerAttribute = "user.mediafetch.item"

    /// The longest mark, in bytes. ext4's usual 256-byte inode keeps 92 bytes for attributes, and this one's
    /// entry header, name and the list's end take 36 of them: a value of up to 56 bytes is written with the inode
    /// when it holds no other attribute (an SELinux label or an ACL takes some of that room). A longer one takes
    /// an attribute block of its own, 4 KiB, found through a cache whose lookups grow with the count: at 20,000
    /// files of a URL list (marks of 58 bytes), setting it was a fifth of the run's CPU.
    public static let ownerMarkLimit = 48

    /// The value of ``ownerAttribute`` for an item's asset: `asset:id`, or its digest when that is longer than
    /// ``ownerMarkLimit`` (an asset named `sha256` aside, the two never meet).
    static func ownerMark(of id: String, asset: AssetKind) -> [UInt8] {
        var text = asset.rawValue + ":" + id
        guard text.utf8.count > ownerMarkLimit else { return Array(text.utf8) }
        // Digested in place and written as bytes: through Data and a String of the whole digest this was 14,000
        // instructions a stored file of a URL list, in callgrind counts, where the digest itself takes 5,000.
        return text.withUTF8 { bytes in
            SHA256.withDigest(of: UnsafeRawBufferPointer(bytes)) { digest in
                Array("sha256:".utf8) + SHA256.hexDigits(UnsafeBufferPointer(rebasing: digest.prefix(16))).utf8
            }
        }
    }

    /// The mark builds of 2 Dec 2026 wrote, where it differs from ``ownerMark(of:asset:)`` (`asset:id` for an id of
    /// up to 200 bytes, `asset:sha256:` and the id's whole digest for a longer one), so that their files are still
    /// their items' own.
    static func earlierOwnerMark(of id: String, asset: AssetKind) -> [[UInt8]] {
        let text = asset.rawValue + ":" + id
        guard text.utf8.count > ownerMarkLimit else { return [] }
        let name = id.utf8.count > 200 ? "sha256:" + SHA256.hex(of: Data(id.utf8)) : id
        return [Array((asset.rawValue + ":" + name).utf8)]
    }

    /// Whether the root held anything but dot files when the first item was planned: only then can a name be
    /// taken by a file this run does not know (a safe name never starts with a dot), so a first run into an empty
    /// folder asks the disk nothing.
    private func folderHeldFiles() -> Bool {
        heldFiles.withLock { held in
            if let held { return held }
            var found = false
            if let folder = opendir(rootPath) {
                while let entry = readdir(folder) {
                    let first = withUnsafeBytes(of: entry.pointee.d_name) { $0.first ?? 0 }
                    if first != UInt8(ascii: ".") {
                        found = true
                        break
                    }
                }
                closedir(folder)
            }
            held = found
            return found
        }
    }

    /// Whether something is at `components` below the root that is not the file the item marked with one of
    /// `marks` stored: a file without such a mark (or with another item's), a folder, a link. Only read, never
    /// followed into.
    /// Only what is there counts: a path that cannot be looked at (a folder on it that cannot be searched, a file
    /// where a folder should be) is left to the store, which reports it, so the numbering always ends.
    private func holdsAnotherFile(_ components: [String], marks: [[UInt8]]) -> Bool {
        var path = rootPath.hasSuffix("/") ? rootPath : rootPath + "/"
        path += components.joined(separator: "/")
        var info = stat()
        guard lstat(path, &info) == 0 else { return false }
        var value = [UInt8](repeating: 0, count: (marks.map(\.count).max() ?? 0) + 1)
        let length = value.withUnsafeMutableBytes { lgetxattr(path, Self.ownerAttribute, $0.baseAddress, $0.count) }
        // No mark (or none possible, or a longer one): not this item's.
        guard length >= 0 else { return true }
        return !marks.contains { $0.count == length && value.prefix(length).elementsEqual($0) }
    }

    /// Moves `file` to `plan.relativePath` under ``root`` atomically.
    /// - Returns: `plan.relativePath`, the path relative to ``root``.
    /// - Throws: ``SinkError`` naming the item and path. No temporary file is left, and an older file of that
    ///   name is untouched, except when only the flush after the rename failed: the file is then in place but
    ///   not recorded, and the next run fetches it again.
    public func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        let placement = SafePlacement(
            rootPath: rootPath, relativePath: plan.relativePath, item: plan.item, sync: sync)
        let staged = file.path
        // Marked before it gets its name, so the name is never without the mark. A filesystem that keeps no
        // user attributes refuses it: its runs then number around what they did not record (see ownerAttribute).
        let mark = Self.ownerMark(of: plan.item.id, asset: plan.asset)
        if let contents = file.contents {
            // Kept in memory (inMemoryStagingLimit): written into its folder unnamed, and named once complete.
            try await intoRoot(placement) { root in
                try await place(contents, marked: mark, with: placement, into: root)
            }
        } else {
            _ = mark.withUnsafeBytes { lsetxattr(staged, Self.ownerAttribute, $0.baseAddress, $0.count, 0) }
            let flush = sync ? try groupFlush(covering: staged) : nil
            try await intoRoot(placement) { root in
                try await place(staged, with: placement, into: root, flushedBy: flush)
            }
        }
        collector.stored(plan, file: file)
        return plan.relativePath
    }

    /// Runs `store` into the root held open; when it fails because that root was removed (or moved away) since,
    /// once more where the path leads now, as when each store opened the root, created again when missing.
    private func intoRoot(_ placement: SafePlacement, _ store: (OpenFolder) async throws -> Void) async throws {
        let root = try rootFolder(placement)
        do {
            try await store(root)
        } catch let error as SinkError {
            guard root.isGone else { throw error }
            openRoot.withLock { if $0 === root { $0 = nil } }
            try await store(try rootFolder(placement))
        }
    }

    /// Files up to 64 KiB come in memory (``Sink/inMemoryStagingLimit``): a small file then makes one name, in its
    /// own folder, instead of a staging file's and a rename across folders. The rename was the largest single
    /// cost of a run of many small files (a seventh of its CPU at 20,000 x 10 KB, with the filesystem's rename
    /// lock taken by each). Not previews (300 KB to 1.2 MB): their bytes stay on disk as they arrive, so that
    /// `mediafetch status` shows them partial and a run killed mid-way resumes them (a download cut short in memory
    /// is written out too, but a `kill -9` loses it); for them a rename is a small part of the cost.
    public var inMemoryStagingLimit: Int64 { 64 << 10 }

    /// Stores bytes handed over in memory (``SafePlacement/place(contents:root:attributes:beforeNaming:)``),
    /// marked before they have a name; when ``sync``, flushed before the name (by the group flush when the folder
    /// is on the root's filesystem) and the folder after it.
    private func place(
        _ contents: Data, marked mark: [UInt8], with placement: SafePlacement, into root: OpenFolder
    ) async throws {
        var flush: GroupFlush?
        let folder = try await placement.place(
            contents: contents, root: root.raw, attributes: [(Self.ownerAttribute, mark)]
        ) { file, folder in
            guard sync else { return }
            flush = try groupFlush(coveringFolder: folder, root: root.raw)
            if let group = flush {
                if (try? await group.barrier()) != nil {
                    guard mf_wait_written(file) == 0 else {
                        throw placement.failure("the downloaded file could not be written to disk: \(errorText(errno))")
                    }
                    return
                }
                // The failure may be another file's: from now on each file is fsynced, which names its own.
                stopGroupFlushing()
                flush = nil
            }
            guard fsync(file) == 0 else {
                throw placement.failure("cannot flush the file to disk: \(errorText(errno))")
            }
        }
        if sync { try await flushFolder(folder.raw, by: flush, placement) }
    }

    /// Flushes the folder a file was just named in: with the group's shared `fsync` when there is a group (and on
    /// its own if that fails: from then on every store flushes its own), else on its own.
    private func flushFolder(_ folder: Int32, by flush: GroupFlush?, _ placement: SafePlacement) async throws {
        if let flush {
            do {
                try await flush.flushFolder(folder)
                return
            } catch {
                stopGroupFlushing()
            }
        }
        guard fsync(folder) == 0 else {
            throw placement.failure(
                "the file is in place, but its folder could not be flushed to disk (\(errorText(errno))); "
                    + "it is not recorded as stored, so the next run fetches it again")
        }
    }

    /// The root held open for every store, opened (and created) by the first.
    private func rootFolder(_ placement: SafePlacement) throws(SinkError) -> OpenFolder {
        try openRoot.withLock { (folder: inout OpenFolder?) throws(SinkError) -> OpenFolder in
            if let folder { return folder }
            let opened = OpenFolder(try placement.openRoot())
            folder = opened
            return opened
        }
    }

    private func place(
        _ staged: String, with placement: SafePlacement, into root: OpenFolder, flushedBy flush: GroupFlush?
    ) async throws {
        if let flush {
            try await place(staged, with: placement, into: root, flushedBy: flush)
        } else {
            try placement.place(staged, root: root.raw)
        }
    }

    /// `placement` with a group flush in place of the fsyncs of the file and its folder (see GroupFlush): a
    /// syncfs before the rename for the bytes, a shared fsync of the folder after it for the name. A copy
    /// into another filesystem mounted below the root is flushed on its own.
    private func place(
        _ staged: String, with placement: SafePlacement, into root: OpenFolder, flushedBy flush: GroupFlush
    ) async throws {
        do {
            try await flush.barrier()
        } catch {
            // The failure may be another file's: from now on each file is fsynced, which names its own.
            stopGroupFlushing()
            try placement.place(staged, root: root.raw)
            return
        }
        var grouped = placement
        grouped.sync = false
        grouped.flushesCopies = true
        try grouped.checkWrittenBack(staged)
        // Open until the flush is done: the root is held by the sink, a folder below it by `placed`.
        let placed = try grouped.placeKeepingFolder(staged, root: root.raw)
        try await flushFolder(placed.raw, by: flush, grouped)
    }

    deinit {
        stopGroupFlushing()
    }

    /// Ends group flushing for the rest of the run: each store fsyncs its own file and folder.
    private func stopGroupFlushing() {
        flusher.withLock { choice in
            if case .group(let flush, _) = choice { flush.close() }
            choice = .eachFile
        }
    }

    /// The group flush that covers `staged`: nil when the root's filesystem is not one whose `syncfs` can be
    /// trusted, or when `staged` is on another filesystem (then the store is a copy, flushed on its own).
    private func groupFlush(covering staged: String) throws(SinkError) -> GroupFlush? {
        guard let (flush, device) = try groupFlushChoice() else { return nil }
        // By the staged file's folder: a run's files come from the sixteen folders of its staging area, so a
        // `stat` of each file is spared (a mount point is always a folder, and a file is on its folder's device).
        let folder = staged.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(staged[..<$0]) } ?? "."
        if let known = stagingDevices.withLock({ $0[folder] }) { return known ? flush : nil }
        var info = stat()
        guard stat(folder, &info) == 0 else { return nil }
        let same = info.st_dev == device
        stagingDevices.withLock { known in
            if known.count < 64 { known[folder] = same }
        }
        return same ? flush : nil
    }

    /// The root's group flush and its device, decided by the first store that flushes; nil when the root's
    /// filesystem is not one whose `syncfs` can be trusted (or group flushing stopped).
    private func groupFlushChoice() throws(SinkError) -> (GroupFlush, dev_t)? {
        let choice = try flusher.withLock { (choice: inout FlushChoice) throws(SinkError) -> FlushChoice in
            guard case .undecided = choice else { return choice }
            let folder = try SafePlacement(
                rootPath: rootPath, relativePath: ".", item: ItemRef(id: "", title: "the folder")
            )
            .openRoot()
            var info = stat()
            if Self.groupFlushFilesystems.contains(calls.filesystemType(folder.raw)), fstat(folder.raw, &info) == 0 {
                choice = .group(
                    try GroupFlush(root: root, flush: calls.syncFilesystem, flushFolder: calls.syncFolder),
                    device: info.st_dev)
            } else {
                choice = .eachFile
            }
            return choice
        }
        guard case .group(let flush, let device) = choice else { return nil }
        return (flush, device)
    }

    /// The group flush that covers a file in `folder` (a store's final folder): nil when the root's filesystem's
    /// `syncfs` cannot be trusted, or the folder is on another filesystem mounted below the root.
    private func groupFlush(coveringFolder folder: Int32, root: Int32) throws(SinkError) -> GroupFlush? {
        guard let (flush, device) = try groupFlushChoice() else { return nil }
        if folder == root { return flush }
        var info = stat()
        return fstat(folder, &info) == 0 && info.st_dev == device ? flush : nil
    }

    /// A file stored by an earlier run is kept when it is still where this run would put it, a regular
    /// file of the recorded size; anything else (deleted, moved, edited, layout changed) is fetched again.
    public func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool {
        guard record.location == plan.relativePath else { return false }
        var info = stat()
        // By string: URL's appendingPathComponent and path cost more than the lstat, once per item of a re-run.
        let path = (rootPath.hasSuffix("/") ? rootPath : rootPath + "/") + plan.relativePath
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == record.size
        else { return false }
        collector.kept(plan, record: record)
        return true
    }

    /// Writes the collection's own files (manifest, playlist) into ``root``, each atomically and by the same
    /// safe placement as a stored file. Nothing when both are off.
    /// - Throws: ``SinkError`` naming the file that could not be written.
    public func finish() async throws {
        let files = try collector.files()
        for (name, data) in files {
            let staged = FileManager.default.temporaryDirectory
                .appendingPathComponent(".mediafetch-\(UUID().uuidString.lowercased()).\(name)")
            do {
                try data.write(to: staged)
            } catch {
                throw SinkError("cannot write \(name) for \(rootPath): \(error.localizedDescription)")
            }
            defer { try? FileManager.default.removeItem(at: staged) }
            try SafePlacement(
                rootPath: rootPath, relativePath: name, item: ItemRef(id: name, title: "the collection"),
                sync: sync
            )
            .place(staged.path)
        }
    }
}

/// A folder descriptor shared by the stores of one sink, closed when the last of them lets go.
final class OpenFolder: Sendable {
    let raw: Int32

    init(_ descriptor: consuming FileDescriptor) {
        raw = descriptor.release()
    }

    /// Whether the folder no longer has a name (removed while held open).
    var isGone: Bool {
        var info = stat()
        return fstat(raw, &info) != 0 || info.st_nlink == 0
    }

    deinit {
        _ = close(raw)
    }
}
