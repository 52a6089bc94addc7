import DirectorySink
import Foundation
import MediaFetchCore
import Testing

@Suite("DirectorySink collection extras")
struct CollectionExtrasTests {
    @Test func manifestAndPlaylistAreWrittenAtFinishWhenAskedFor() async throws {
        let fixture = try Fixture()
        let sink = DirectorySink(
            root: fixture.root, layout: try LayoutTemplate(LayoutTemplate.defaultLayout),
            collection: CollectionOptions(assets: [.preview, .artwork]))
        var item = song("1", title: "Upside Down")
        item.artworkURL = URL(string: "https://art.example/a/100x100bb.jpg")
        item.durationMillis = 208_643
        #expect(sink.url(for: .artwork, of: item)?.absoluteString == "https://art.example/a/600x600bb.jpg")
        for asset in sink.assets {
            let plan = try await sink.plan(item, asset: asset)
            _ = try await sink.store(try fixture.staged(Data(asset.rawValue.utf8)), as: plan)
        }
        try await sink.finish()

        let tree = try fixture.tree(fixture.root)
        #expect(
            Set(tree.keys) == [
                "Artist/Album/01 Upside Down.m4a", "Artist/Album/01 Upside Down.jpg",
                "manifest.json", "playlist.m3u8",
            ])
        let playlist = String(decoding: try #require(tree["playlist.m3u8"]), as: UTF8.self)
        #expect(playlist == "#EXTM3U\n#EXTINF:209,Artist - Upside Down\nArtist/Album/01 Upside Down.m4a\n")
        let manifestData = try #require(tree["manifest.json"])
        let manifest = try #require(try JSONSerialization.jsonObject(with: manifestData) as? [String: Any])
        let files = try #require((manifest["items"] as? [[String: Any]])?.first?["files"] as? [[String: Any]])
        for file in files {
            let path = try #require(file["path"] as? String)
            #expect(file["sha256"] as? String == SHA256.hex(of: try #require(tree[path])))
        }
        #expect(files.count == 2)
    }

    @Test func byDefaultTheTreeHoldsOnlyTheItemsButTheNamesAreReserved() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink("{title}.json")
        #expect(sink.assets == [.preview])
        let plan = try await sink.plan(song("1", title: "manifest"), asset: .preview)
        #expect(plan.relativePath == "manifest (2).json")
        _ = try await sink.store(try fixture.staged(Data("x".utf8)), as: plan)
        try await sink.finish()
        #expect(try fixture.tree(fixture.root).keys.sorted() == ["manifest (2).json"])
    }

    @Test func artworkWithoutAnExtensionInTheLayoutIsNumberedNotOverwritten() async throws {
        let fixture = try Fixture()
        let sink = DirectorySink(
            root: fixture.root, layout: try LayoutTemplate("{artist}/{title}"),
            collection: CollectionOptions(assets: [.preview, .artwork]))
        var item = song("1", title: "Song")
        item.artworkURL = URL(string: "https://art.example/a/100x100bb.jpg")
        let preview = try await sink.plan(item, asset: .preview)
        let artwork = try await sink.plan(item, asset: .artwork)
        #expect(preview.relativePath == "Artist/Song")
        #expect(artwork.relativePath == "Artist/Song (2)")
    }
}
