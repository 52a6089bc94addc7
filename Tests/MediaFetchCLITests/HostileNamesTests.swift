import Foundation
import MediaFetchTesting
import Testing

/// Hostile metadata from a catalog, through the whole program: search, download, store.
/// Nothing may land outside the sink's root, nothing may crash, every name must be safe.
struct HostileNamesTests {
    static let hostile: [(artist: String, title: String)] = [
        ("../../etc", "passwd"),
        ("/absolute", "/root/.ssh/authorized_keys"),
        ("evil", "through the planted symlink"),
        ("Nul\u{0}Byte", "Bell\u{7}and\u{1B}[31mEscape"),
        ("Right\u{202E}4pm.exe", "Left\u{202D}To\u{2066}Right"),
        ("..", "."),
        ("CON", "aux"),
        ("Trailing. ", "dots... "),
        ("Windows<>:\"|?*", "back\\slash"),
        (String(repeating: "Á", count: 300), String(repeating: "日本語", count: 400)),
        ("Same", "Title"),
        ("same", "title"),
        ("   ", ""),
        ("Ten KB", String(repeating: "x", count: 10_240)),
    ]

    @Test func hostileMetadataNeverEscapesTheRoot() async throws {
        let songs = Self.hostile.enumerated().map { index, names in
            MockSong(
                trackId: 7_000 + index, artistName: names.artist, collectionName: "Hostile", trackName: names.title)
        }
        let server = try MockCatalogServer(catalog: MockCatalog(songs: songs))
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let root = scratch.appendingPathComponent("root")
        let outside = scratch.appendingPathComponent("outside")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("evil"), withDestinationURL: outside)

        let outcome = try await CommandRunner.run([
            "run", "config/demo.yaml", "--quiet",
            "--set", "source.endpoint=\(server.baseURL.absoluteString)",
            "--set", "source.term=hostile", "--set", "source.max-items=100",
            "--set", "sink.path=\(root.path)", "--set", "sink.layout={artist}/{title}.{ext}",
            "--set", "state=\(scratch.appendingPathComponent("state").path)",
        ])
        // The one item aimed through the symlink fails; every other is stored.
        #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("\(songs.count - 1) stored, 1 failed"))
        #expect(outcome.stdout.contains("evil"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)

        let stored = try CommandRunner.tree(root)
        #expect(stored.count == songs.count - 1)
        for path in stored.keys {
            for component in path.split(separator: "/") {
                #expect(!component.hasPrefix("."), "\(path)")
                #expect(component.utf8.count <= 255, "\(path)")
                #expect(!component.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F }, "\(path)")
                #expect(!component.unicodeScalars.contains { (0x202A...0x202E).contains($0.value) }, "\(path)")
            }
        }
        let expectedBytes = Set(songs.map { Data(server.catalog.previewBytes(for: $0)) })
        #expect(stored.values.allSatisfy { expectedBytes.contains($0) })
        // Two names differing only in case are two files, numbered in the catalog's order.
        #expect(stored.keys.contains("Same/Title.m4a"))
        #expect(stored.keys.contains { $0.lowercased() == "same/title (2).m4a" })
    }
}
