import Foundation
import MediaFetchCore
import MediaFetchTesting

@testable import ArchiveSink

#if canImport(Glibc)
    import Glibc
#endif

/// A scratch folder per test: `archive` is the sink's path (its folder not created: the sink must),
/// `stage` holds downloads.
struct ArchiveFixture: ~Copyable {
    let base: URL
    let stage: URL
    let archive: URL

    init(name: String = "previews.tar") throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("mediafetch-tar-\(UUID().uuidString)")
        stage = base.appendingPathComponent("stage")
        archive = base.appendingPathComponent("out/\(name)")
        try FileManager.default.createDirectory(at: stage, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: base)
    }

    func sink(
        format: ArchiveFormat = .pax,
        compression: ArchiveCompression = .none,
        layout: String = LayoutTemplate.defaultLayout,
        entryTime: ArchiveEntryTime = .releaseDate,
        collection: CollectionOptions = CollectionOptions()
    ) throws -> ArchiveSink {
        ArchiveSink(
            configuration: ArchiveSinkConfiguration(
                path: archive, format: format, compression: compression, layout: try LayoutTemplate(layout),
                entryTime: entryTime, collection: collection
            ))
    }

    /// A downloaded file with `bytes`, as the pipeline would hand it over.
    func staged(_ bytes: Data, from source: String = "https://audio.example/x.m4a") throws -> StagedFile {
        try StagedFile.written(
            bytes, in: stage, sourceURL: URL(string: source) ?? stage,
            downloadedAt: Date(timeIntervalSince1970: 1_700_000_000))
    }

    /// Every entry of `url` in archive order, read back through libarchive: header and bytes.
    func entries(_ url: URL? = nil) throws -> [(entry: ArchiveReader.Entry, data: Data)] {
        let descriptor = open((url ?? archive).path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ArchiveError("cannot open \((url ?? archive).path)") }
        defer { close(descriptor) }
        let reader = try ArchiveReader(descriptor: descriptor)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        var result: [(entry: ArchiveReader.Entry, data: Data)] = []
        while let entry = try reader.next() {
            var data = Data()
            try reader.readData(into: buffer) { data.append(contentsOf: $0) }
            result.append((entry, data))
        }
        return result
    }

    /// Every entry's header, the data skipped (seeked over in an uncompressed archive).
    func headers() throws -> [ArchiveReader.Entry] {
        let descriptor = open(archive.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw ArchiveError("cannot open \(archive.path)") }
        defer { close(descriptor) }
        let reader = try ArchiveReader(descriptor: descriptor)
        var result: [ArchiveReader.Entry] = []
        while let entry = try reader.next() { result.append(entry) }
        return result
    }

    /// Entry name to bytes.
    func contents(_ url: URL? = nil) throws -> [String: Data] {
        Dictionary(try entries(url).map { ($0.entry.name, $0.data) }, uniquingKeysWith: { first, _ in first })
    }

    /// Extracts the archive with an outside tool (GNU tar, or libarchive's bsdtar) into a new folder and
    /// returns every file below it, relative path to bytes. GNU tar runs the filter's own program (`zstd`,
    /// `xz`) to read a compressed archive, so that one is required too.
    /// - Throws: ``MissingProgram`` when a program is not installed.
    func extract(with tool: RequiredProgram, filter: ArchiveCompression = .none) throws -> [String: Data] {
        if tool == .gnuTar, let program = RequiredProgram.filter(named: filter.rawValue) { _ = try program.locate() }
        let folder = base.appendingPathComponent("extract-\(tool)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let status = try run(tool, ["-xf", archive.path, "-C", folder.path])
        guard status == 0 else { throw ArchiveError("\(tool) -xf exited with \(status)") }
        return try tree(folder)
    }

    /// Runs `tool` with a UTF-8 locale, its output discarded; returns the exit status.
    func run(_ tool: RequiredProgram, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = try tool.locate()
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["LC_ALL"] = "C.UTF-8"
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// Every plain file below `folder`, relative path to contents.
    func tree(_ folder: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return result }
        while let relative = walker.nextObject() as? String {
            let url = folder.appendingPathComponent(relative)
            var info = stat()
            guard lstat(url.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
            result[relative.precomposedStringWithCanonicalMapping] = try Data(contentsOf: url)
        }
        return result
    }

    /// Names in the archive's folder other than the archive itself (a leftover partial file).
    func leftovers() throws -> [String] {
        let folder = archive.deletingLastPathComponent()
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(atPath: folder.path)
            .filter { $0 != archive.lastPathComponent }
    }
}

/// A song with the fields the default layout uses.
func song(
    _ id: String,
    title: String,
    artist: String? = "Artist",
    album: String? = "Album",
    track: Int? = 1,
    released: Date? = Date(timeIntervalSince1970: 1_000_000_000)
) -> MediaItem {
    MediaItem(
        id: id,
        kind: "song",
        title: title,
        artist: artist,
        album: album,
        trackNumber: track,
        durationMillis: 205_400,
        releaseDate: released,
        previewURL: URL(string: "https://audio.example/\(id)/preview.m4a"),
        artworkURL: URL(string: "https://art.example/\(id)/100x100bb.jpg")
    )
}

/// Deterministic bytes of `count` for item `seed`.
func bytes(_ seed: Int, count: Int = 4096) -> Data {
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 | 1
    var data = Data(capacity: count)
    for _ in 0..<count {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        data.append(UInt8(truncatingIfNeeded: state))
    }
    return data
}
