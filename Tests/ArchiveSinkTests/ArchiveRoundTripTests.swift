import Foundation
import MediaFetchCore
import Testing

@testable import ArchiveSink

/// Every format and filter written by the sink and read back by libarchive, GNU tar and bsdtar, with names
/// outside ASCII.
@Suite("ArchiveSink round trip")
struct ArchiveRoundTripTests {
    static let combinations: [(ArchiveFormat, ArchiveCompression)] =
        ArchiveFormat.allCases.flatMap { format in
            ArchiveCompression.allCases.compactMap { format == .zip && $0 != .none ? nil : (format, $0) }
        }

    static let items = [
        song("1", title: "Jóga", artist: "Björk", album: "Homogenic"),
        song("2", title: "戦場のメリークリスマス", artist: "坂本龍一", album: "Merry Christmas Mr. Lawrence"),
        song("3", title: "Déjà vu 🎵", artist: "Beyoncé", album: "B'Day", track: 12),
        song("4", title: "Plain", artist: nil, album: nil, track: nil),
    ]

    @Test(arguments: combinations)
    func roundTrip(format: ArchiveFormat, compression: ArchiveCompression) async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink(format: format, compression: compression)
        var expected: [String: Data] = [:]
        for (index, item) in Self.items.enumerated() {
            let plan = try await sink.plan(item, asset: .preview)
            let data = bytes(index, count: 10_000 + index * 777)
            let stored = try await sink.store(try fixture.staged(data), as: plan)
            #expect(stored == plan.relativePath)
            expected[stored] = data
        }
        try await sink.finish()

        let entries = try fixture.entries()
        let files = entries.filter {
            $0.entry.name != CollectionOptions.manifestName
                && $0.entry.name != CollectionOptions.playlistName
        }
        #expect(Dictionary(uniqueKeysWithValues: files.map { ($0.entry.name, $0.data) }) == expected)
        #expect(expected.keys.contains("Björk/Homogenic/01 Jóga.m4a"))
        #expect(expected.keys.contains("坂本龍一/Merry Christmas Mr. Lawrence/01 戦場のメリークリスマス.m4a"))
        for (entry, data) in files {
            #expect(entry.size == Int64(data.count))
            #expect(entry.permissions == 0o644)
            #expect(entry.isRegularFile)
            // The release date (2001-09-09) in whole seconds.
            #expect(entry.modified == 1_000_000_000)
        }
        #expect(
            entries.suffix(2).map(\.entry.name) == [CollectionOptions.manifestName, CollectionOptions.playlistName])
        #expect(try fixture.leftovers().isEmpty)

        let bsdtar = try fixture.extract(with: .bsdtar, filter: compression)
        #expect(bsdtar.filter { expected[$0.key] != nil } == expected)
        #expect(bsdtar.count == expected.count + 2)
        if format != .zip {
            let gnu = try fixture.extract(with: .gnuTar, filter: compression)
            #expect(gnu.filter { expected[$0.key] != nil } == expected)
            #expect(gnu.count == expected.count + 2)
        }
    }

    @Test func entryTimeCanBeTheDownloadTime() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink(
            entryTime: .downloadTime,
            collection: CollectionOptions(
                writesManifest: false,
                writesPlaylist: false))
        let plan = try await sink.plan(song("1", title: "A"), asset: .preview)
        _ = try await sink.store(try fixture.staged(bytes(1)), as: plan)
        let undated = try await sink.plan(song("2", title: "B", released: nil), asset: .preview)
        _ = try await sink.store(try fixture.staged(bytes(2)), as: undated)
        try await sink.finish()
        #expect(try fixture.entries().map(\.entry.modified) == [1_700_000_000, 1_700_000_000])
    }

    @Test func emptyCollectionIsAValidEmptyArchive() async throws {
        for compression in [ArchiveCompression.none, .zstd] {
            let fixture = try ArchiveFixture()
            let sink = try fixture.sink(
                compression: compression,
                collection: CollectionOptions(writesManifest: false, writesPlaylist: false))
            try await sink.finish()
            #expect(try fixture.entries().isEmpty)
            #expect(try fixture.extract(with: .gnuTar, filter: compression).isEmpty)
            #expect(try fixture.extract(with: .bsdtar, filter: compression).isEmpty)
        }
    }

    @Test func emptyCollectionWithManifestListsNoItems() async throws {
        let fixture = try ArchiveFixture(name: "empty.zip")
        let sink = try fixture.sink(format: .zip)
        try await sink.finish()
        let contents = try fixture.contents()
        #expect(Set(contents.keys) == [CollectionOptions.manifestName, CollectionOptions.playlistName])
        let manifest = try JSONSerialization.jsonObject(with: contents[CollectionOptions.manifestName] ?? Data())
        #expect((manifest as? [String: Any])?["items"] as? [Any] != nil)
        #expect(((manifest as? [String: Any])?["items"] as? [Any])?.isEmpty == true)
        #expect(contents[CollectionOptions.playlistName] == Data("#EXTM3U\n".utf8))
    }
}
