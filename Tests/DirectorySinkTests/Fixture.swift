import DirectorySink
import Foundation
import MediaFetchCore
import MediaFetchTesting

#if canImport(Glibc)
    import Glibc
#endif

/// A scratch folder per test: `root` for the sink (not created, the sink must create it), `stage` for
/// downloads, `outside` for things that must never change.
struct Fixture: ~Copyable {
    let base: URL
    let root: URL
    let stage: URL
    let outside: URL

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("mediafetch-sink-\(UUID().uuidString)")
        root = base.appendingPathComponent("library/music")
        stage = base.appendingPathComponent("stage")
        outside = base.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: stage, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
    }

    deinit {
        try? FileManager.default.removeItem(at: base)
    }

    func sink(_ layout: String = LayoutTemplate.defaultLayout, root: URL? = nil) throws -> DirectorySink {
        DirectorySink(root: root ?? self.root, layout: try LayoutTemplate(layout))
    }

    /// A downloaded file with `bytes`, as the pipeline would hand it over.
    func staged(_ bytes: Data, in folder: URL? = nil) throws -> StagedFile {
        try StagedFile.written(bytes, in: folder ?? stage, sourceURL: URL(fileURLWithPath: "/dev/null"))
    }

    func url(_ relative: String, under base: URL? = nil) -> URL {
        (base ?? root).appendingPathComponent(relative)
    }

    /// Every plain file below `folder`, relative path to contents, without following links.
    func tree(_ folder: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        func walk(_ url: URL, _ prefix: String) throws {
            for name in try FileManager.default.contentsOfDirectory(atPath: url.path) {
                let child = url.appendingPathComponent(name)
                let relative = prefix.isEmpty ? name : prefix + "/" + name
                switch kind(child) {
                case .directory: try walk(child, relative)
                case .file: result[relative] = try Data(contentsOf: child)
                case .link, .other, .missing: result[relative] = Data("<\(kind(child))>".utf8)
                }
            }
        }
        try walk(folder, "")
        return result
    }

    enum Kind { case file, directory, link, other, missing }

    /// What is at `url` itself (a link is a link, not its target).
    func kind(_ url: URL) -> Kind {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return .missing }
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .file
        case S_IFDIR: return .directory
        case S_IFLNK: return .link
        default: return .other
        }
    }
}

/// A song with the fields the default layout uses.
func song(
    _ id: String,
    title: String,
    artist: String? = "Artist",
    album: String? = "Album",
    track: Int? = 1
) -> MediaItem {
    MediaItem(
        id: id,
        kind: "song",
        title: title,
        artist: artist,
        album: album,
        trackNumber: track,
        previewURL: URL(string: "https://audio.example/\(id)/preview.m4a")
    )
}
