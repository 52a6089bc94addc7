import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import ArchiveSink

/// Names, collection extras and configuration.
@Suite("ArchiveSink collection")
struct ArchiveCollectionTests {
    @Test func manifestChecksumsMatchTheBytesAndThePlaylistListsPreviews() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink(collection: CollectionOptions(assets: [.preview, .artwork]))
        #expect(sink.assets == [.preview, .artwork])
        let items = [song("1", title: "One"), song("2", title: "#2 Hit\nEXTINF", artist: "Bad\r\nArtist")]
        for (index, item) in items.enumerated() {
            let artwork = try #require(sink.url(for: .artwork, of: item))
            #expect(artwork.absoluteString == "https://art.example/\(item.id)/600x600bb.jpg")
            for asset in sink.assets {
                let plan = try await sink.plan(item, asset: asset)
                _ = try await sink.store(try fixture.staged(bytes(index * 10 + (asset == .preview ? 0 : 1))), as: plan)
            }
        }
        try await sink.finish()
        let contents = try fixture.contents()
        #expect(contents["Artist/Album/01 One.m4a"] != nil)
        #expect(contents["Artist/Album/01 One.jpg"] != nil)

        let manifestData = try #require(contents[CollectionOptions.manifestName])
        let manifest = try #require(try JSONSerialization.jsonObject(with: manifestData) as? [String: Any])
        let entries = try #require(manifest["items"] as? [[String: Any]])
        #expect(entries.count == 2)
        var checked = 0
        for entry in entries {
            let files = try #require(entry["files"] as? [[String: Any]])
            #expect(files.map { $0["asset"] as? String } == ["preview", "artwork"])
            for file in files {
                let path = try #require(file["path"] as? String)
                let data = try #require(contents[path])
                #expect(file["sha256"] as? String == SHA256.hex(of: data))
                #expect((file["size"] as? NSNumber)?.intValue == data.count)
                checked += 1
            }
            let item = try #require(entry["item"] as? [String: Any])
            #expect(item["releaseDate"] as? String == "2001-09-09T01:46:40Z")
        }
        #expect(checked == 4)

        let playlist = String(decoding: try #require(contents[CollectionOptions.playlistName]), as: UTF8.self)
        #expect(
            playlist == """
                #EXTM3U
                #EXTINF:205,Artist - One
                Artist/Album/01 One.m4a
                #EXTINF:205,Bad  Artist - #2 Hit EXTINF
                Bad Artist/Album/01 #2 Hit EXTINF.m4a

                """)
    }

    @Test func aCarriedEntryIsInTheManifestWithItsChecksum() async throws {
        let fixture = try ArchiveFixture()
        let first = try fixture.sink()
        let plan = try await first.plan(song("1", title: "Kept"), asset: .preview)
        _ = try await first.store(try fixture.staged(bytes(7)), as: plan)
        try await first.finish()

        let second = try fixture.sink()
        let again = try await second.plan(song("1", title: "Kept"), asset: .preview)
        #expect(
            try await second.keep(again, stored: StoredRecord(location: again.relativePath, size: 4096, sha256: nil)))
        try await second.finish()
        let contents = try fixture.contents()
        let manifest = String(decoding: try #require(contents[CollectionOptions.manifestName]), as: UTF8.self)
        #expect(manifest.contains(SHA256.hex(of: bytes(7))))
        #expect(contents[again.relativePath] == bytes(7))
    }

    @Test func hostileNamesStayInsideTheArchiveAndTheExtraction() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink(format: .gnutar)
        let items = [
            song("1", title: "../../etc/passwd", artist: "../..", album: ".."),
            song("2", title: "/abs/path", artist: "/etc", album: "/"),
            song("3", title: "nul\u{0}byte", artist: "a\u{0}/../b", album: "\u{202E}txt.exe"),
            song("4", title: "..", artist: nil, album: nil, track: nil),
            song("5", title: "CON", artist: "C:\\Windows", album: "x:y"),
            song("6", title: String(repeating: "ü", count: 300), artist: String(repeating: "a", count: 300)),
            song("7", title: "manifest", artist: nil, album: nil, track: nil),
        ]
        for item in items {
            let plan = try await sink.plan(item, asset: .preview)
            _ = try await sink.store(try fixture.staged(Data(item.id.utf8)), as: plan)
        }
        try await sink.finish()
        let names = try fixture.entries().map(\.entry.name)
        #expect(names.count == items.count + 2)
        for name in names {
            #expect(!name.hasPrefix("/"))
            #expect(
                !name.split(separator: "/", omittingEmptySubsequences: false)
                    .contains { $0.isEmpty || $0 == "." || $0 == ".." })
        }
        for tool in [RequiredProgram.gnuTar, .bsdtar] {
            let tree = try fixture.extract(with: tool)
            #expect(Set(tree.values).isSuperset(of: items.map { Data($0.id.utf8) }), "\(tool)")
        }
        // Nothing landed beside the extraction folders.
        let top = try FileManager.default.contentsOfDirectory(atPath: fixture.base.path)
        #expect(top.allSatisfy { $0 == "stage" || $0 == "out" || $0.hasPrefix("extract-") })
    }

    @Test func theCollectionFileNamesAreReserved() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink(layout: "{title}.json")
        let plan = try await sink.plan(song("1", title: "manifest"), asset: .preview)
        #expect(plan.relativePath == "manifest (2).json")
    }

    @Test func ustarRefusesANameItCannotHoldWhenPlanning() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink(format: .ustar, layout: "{title}.{ext}")
        await #expect(throws: SinkError.self) {
            _ = try await sink.plan(song("1", title: String(repeating: "x", count: 200)), asset: .preview)
        }
        let fits = try await sink.plan(song("2", title: String(repeating: "y", count: 90)), asset: .preview)
        #expect(fits.relativePath.utf8.count == 94)
    }

    func options(_ values: [String: OptionValue]) -> PluginOptions {
        PluginOptions(section: "sink", values: values)
    }

    @Test func configErrorsNameTheKey() throws {
        let cases: [([String: OptionValue], String)] = [
            (["format": .string("zip"), "compression": .string("gzip")], "sink.compression"),
            (["compression": .string("gzip"), "level": .integer(12)], "sink.level"),
            (["compression": .string("none"), "level": .integer(3)], "sink.level"),
            (["layout": .string("{nope}")], "sink.layout"),
            (["assets": .list(["preview", "lyrics"])], "sink.assets"),
            (["path": .string("")], "sink.path"),
        ]
        for (values, key) in cases {
            #expect(throws: ConfigError.self) { _ = try ArchiveSinkConfiguration(options: options(values)) }
            do {
                _ = try ArchiveSinkConfiguration(options: options(values))
            } catch {
                #expect(error.key == key)
            }
        }
        let zstd = try ArchiveSinkConfiguration(
            options: options([
                "compression": .string("zstd"), "level": .integer(19), "mtime": .string("download-time"),
                "artwork-size": .integer(1200), "manifest": .bool(false),
            ]))
        #expect(zstd.compression == .zstd && zstd.level == 19 && zstd.entryTime == .downloadTime)
        #expect(zstd.collection.artworkSize == 1200 && !zstd.collection.writesManifest)
        #expect(ArchiveSink.descriptor.info.name == "tar")
    }
}
