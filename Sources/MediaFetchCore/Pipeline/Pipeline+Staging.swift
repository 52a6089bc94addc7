import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The staging area: where partial and checked downloads live under the state directory until a sink takes
/// them, named so that a later run finds them again.
extension Pipeline {
    /// The most memory a run keeps small downloads in at once, for a sink that takes them so
    /// (``Sink/inMemoryStagingLimit``): 8 MiB, ten preview-sized files.
    public static let inMemoryStagingBudget: Int64 = 8 << 20

    /// A staging file name: readable, unique per source, item and asset, stable across runs, safe anywhere.
    public static func stagingName(source: String, itemID: String, asset: AssetKind) -> String {
        stagingNameAndShard(source: source, itemID: itemID, asset: asset).name
    }

    /// The staging name, and the subfolder it belongs in: the last digit of its hash (see ``shard(ofStagingName:)``).
    static func stagingNameAndShard(source: String, itemID: String, asset: AssetKind) -> (name: String, shard: String) {
        // FNV-1a (stable across runs and platforms, unlike `hashValue`) of source, NUL, id: folded in turn, not joined.
        let hash = String(FNV1a.fold(itemID, into: FNV1a.fold("\u{0}", into: FNV1a.fold(source))), radix: 16)
        let shard = hash.last.map(String.init) ?? "0"
        // On bytes, the same answer, built in one buffer: Character-level filtering, and then a string made in
        // seven appends, showed in profiles of many-file runs.
        let ascii = itemID.withUTF8Bytes { id -> String? in
            guard id.allSatisfy({ $0 < 0x80 }) else { return nil }
            var name: [UInt8] = []
            name.reserveCapacity(min(id.count, 40) + hash.utf8.count + asset.rawValue.utf8.count + 7)
            for byte in id where byte.isASCIILetterOrDigit {
                if name.count == 40 { break }
                name.append(byte)
            }
            name.append(UInt8(ascii: "-"))
            name.append(contentsOf: hash.utf8)
            name.append(UInt8(ascii: "."))
            name.append(contentsOf: asset.rawValue.utf8)
            name.append(contentsOf: ".part".utf8)
            return String(decoding: name, as: UTF8.self)
        }
        if let ascii { return (ascii, shard) }
        let readable = String(itemID.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(40))
        return ("\(readable)-\(hash).\(asset.rawValue).part", shard)
    }

    /// Where the staging file of one asset lives: in one of sixteen subfolders named by the last digit of
    /// the name's hash. A file is created under its folder's lock, and ext4 holds that lock while it looks
    /// for a free inode; with one folder, the transport's threads took turns there and spun while waiting.
    public static func stagingFile(in staging: URL, source: String, itemID: String, asset: AssetKind) -> URL {
        URL(
            fileURLWithPath: stagingPath(inFolder: staging.path, source: source, itemID: itemID, asset: asset),
            isDirectory: false)
    }

    /// ``stagingFile(in:source:itemID:asset:)`` for the staging folder's path, as a path: a run hands it to the
    /// transport and the sink as it is (``DownloadRequest/destinationPath``, ``StagedFile/path``), since a file
    /// URL made and then decoded again by each `URL.path` cost 16,000 instructions a file.
    static func stagingPath(inFolder folder: String, source: String, itemID: String, asset: AssetKind) -> String {
        let (name, shard) = stagingNameAndShard(source: source, itemID: itemID, asset: asset)
        let separator = folder.hasSuffix("/") ? "" : "/"
        return folder + separator + shard + "/" + name
    }

    /// The staging subfolders: one per last digit of a staging name's hash.
    static let stagingShards = "0123456789abcdef".map { String($0) }

    /// The staging folder and its subfolders, where partial downloads may be.
    static func stagingFolders(_ staging: URL) -> [URL] {
        [staging] + stagingShards.map { staging.appendingPathComponent($0) }
    }

    /// The subfolder a staging file name belongs in: the last digit of its hash (`…-<hash>.<asset>.part`).
    static func shard(ofStagingName name: String) -> String? {
        guard name.hasSuffix(".part"), let dash = name.lastIndex(of: "-") else { return nil }
        let hash = name[name.index(after: dash)...].prefix { $0 != "." }
        // Only what a staging name's hash holds (0-9, a-f): any other file is not ours to move.
        guard let digit = hash.last.map(String.init), stagingShards.contains(digit) else { return nil }
        return digit
    }

    /// Every staging subfolder, created when missing; partial files an earlier version kept directly in
    /// the staging folder move into theirs, so their bytes still resume. One that cannot be moved stays
    /// where it is (its download starts over): a stray file is no reason to stop a run.
    static func prepareStaging(_ staging: URL) throws {
        let files = FileManager.default
        for shard in stagingShards {
            try files.createDirectory(
                at: staging.appendingPathComponent(shard, isDirectory: true), withIntermediateDirectories: true)
        }
        for name in (try? files.contentsOfDirectory(atPath: staging.path)) ?? [] {
            guard let shard = shard(ofStagingName: name) else { continue }
            let from = staging.appendingPathComponent(name)
            let to = staging.appendingPathComponent(shard).appendingPathComponent(name)
            // Never over a partial already in the subfolder: that one is newer, and the ledger's validator
            // describes it. The old one then goes.
            if link(from.path, to.path) == 0 || errno == EEXIST { _ = unlink(from.path) }
        }
    }

    /// Every partial download in a staging folder (the sixteen subfolders, and the folder itself for files
    /// an earlier version kept there).
    public static func partialFiles(in staging: URL) -> [URL] {
        let files = FileManager.default
        return stagingFolders(staging).flatMap { folder in
            ((try? files.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".part") }
                .map { folder.appendingPathComponent($0) }
        }
    }

    /// Whether the staging folder and its subfolders hold no partial download (stops at the first found).
    static func holdsNoPartialFile(_ staging: URL) -> Bool {
        for folder in stagingFolders(staging) {
            guard let stream = opendir(folder.path) else {
                // A subfolder that cannot be read may hold anything.
                if errno == ENOENT { continue }
                return false
            }
            defer { closedir(stream) }
            while let entry = readdir(stream) {
                let isPart = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                    let name = bytes.prefix { $0 != 0 }
                    return name.count > 5 && name.suffix(5).elementsEqual(".part".utf8)
                }
                if isPart { return false }
            }
        }
        return true
    }

    /// Where a run keeps partial downloads, inside its state directory.
    public static func stagingDirectory(state: URL) -> URL {
        state.appendingPathComponent("staging")
    }

    /// The size of a file, by `stat` (FileManager's attribute dictionary showed in profiles).
    static func fileSize(_ url: URL) throws -> Int64 {
        try fileSize(atPath: url.path)
    }

    static func fileSize(atPath path: String) throws -> Int64 {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw PipelineError("cannot read \(path): \(String(cString: strerror(errno)))")
        }
        return Int64(info.st_size)
    }
}
