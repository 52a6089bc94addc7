import Foundation
import MediaFetchCore
import Testing

@Suite("LayoutTemplate")
struct NamingLayoutTemplateTests {
    static func song() throws -> MediaItem {
        MediaItem(
            id: "1469577741",
            kind: "song",
            title: "Upside Down",
            artist: "Jack Johnson",
            album: "Curious George",
            trackNumber: 1,
            discNumber: 1,
            durationMillis: 208_643,
            releaseDate: try Date("2006-02-07T08:00:00Z", strategy: .iso8601),
            genre: "Rock",
            previewURL: URL(string: "https://audio.example/p/mzaf_1.plus.aac.p.m4a"),
            artworkURL: URL(string: "https://art.example/a/100x100bb.jpg")
        )
    }

    @Test func defaultLayout() throws {
        let layout = try LayoutTemplate(LayoutTemplate.defaultLayout)
        let expected = ["Jack Johnson", "Curious George", "01 Upside Down.m4a"]
        #expect(layout.render(try Self.song(), asset: .preview) == expected)
        #expect(layout.renderPath(try Self.song(), asset: .artwork) == "Jack Johnson/Curious George/01 Upside Down.jpg")
    }

    @Test(arguments: [
        ("{id}", "1469577741"),
        ("{kind}", "song"),
        ("{title}", "Upside Down"),
        ("{artist}", "Jack Johnson"),
        ("{album}", "Curious George"),
        ("{track-number}", "1"),
        ("{track-number:03}", "001"),
        ("{disc-number:2}", "01"),
        ("{genre}", "Rock"),
        ("{year}", "2006"),
        ("{release-date}", "2006-02-07"),
        ("{duration}", "3m28s"),
        ("{ext}", "m4a"),
        ("{asset}", "preview"),
        ("{{literal}} {title}", "{literal} Upside Down"),
        ("a}}b{{c", "a}b{c"),
    ])
    func placeholder(_ template: String, _ expected: String) throws {
        let layout = try LayoutTemplate(template)
        #expect(layout.render(try Self.song(), asset: .preview) == [expected])
    }

    @Test func longDurationHasHours() throws {
        var item = try Self.song()
        item.durationMillis = 3_725_000
        #expect(try LayoutTemplate("{duration}").render(item, asset: .preview) == ["1h02m05s"])
    }

    @Test func missingFieldsDropTheirDirectories() throws {
        let url = URL(string: "https://example.com/a/b.mp3")
        let item = MediaItem(id: "https://example.com/a/b.mp3", title: "b", previewURL: url)
        let layout = try LayoutTemplate(LayoutTemplate.defaultLayout)
        // No track number: no stray leading space either.
        #expect(layout.render(item, asset: .preview) == ["b.mp3"])
        // No artwork URL, so no extension: never a made-up one.
        #expect(layout.render(item, asset: .artwork) == ["b"])
    }

    @Test func emptyTitleStillGivesAFileName() throws {
        let item = MediaItem(id: "1", title: "", previewURL: URL(string: "https://x.example/1.m4a"))
        #expect(try LayoutTemplate("{title}.{ext}").render(item, asset: .preview) == ["_.m4a"])
        #expect(try LayoutTemplate("{genre}").render(item, asset: .preview) == ["_"])
    }

    @Test func fieldValuesNeverAddDirectories() throws {
        var item = try Self.song()
        item.artist = "../../etc"
        item.album = "/abs/path"
        item.title = "x\u{0}/y"
        let parts = try LayoutTemplate(LayoutTemplate.defaultLayout).render(item, asset: .preview)
        #expect(parts == ["_.._etc", "_abs_path", "01 x_y.m4a"])
    }

    @Test func whitespaceCollapses() throws {
        var item = try Self.song()
        item.title = "  Upside \n\t Down  "
        let layout = try LayoutTemplate("{artist}  -  {title}")
        #expect(layout.render(item, asset: .preview) == ["Jack Johnson - Upside Down"])
    }

    @Test func dateIsUTC() throws {
        var item = try Self.song()
        item.releaseDate = try Date("2006-12-31T23:30:00Z", strategy: .iso8601)
        #expect(try LayoutTemplate("{year}/{release-date}").render(item, asset: .preview) == ["2006", "2006-12-31"])
    }

    @Test(arguments: [
        ("{titel}", "unknown placeholder {titel}"),
        ("{}", "unknown placeholder {}"),
        ("{title", "without its \"}\""),
        ("title}", "without its \"{\""),
        ("{title:02}", "only numbers take a width"),
        ("{track-number:x}", "the width must be"),
        ("{track-number:0}", "the width must be"),
        ("", "empty"),
        ("/{title}", "starts with \"/\""),
        ("{title}/", "ends with \"/\""),
        ("{artist}//{title}", "empty folder name"),
        ("../{title}", "\"..\" folder"),
    ])
    func badLayout(_ template: String, _ fragment: String) {
        #expect {
            _ = try LayoutTemplate(template)
        } throws: { error in
            guard let error = error as? ConfigError else { return false }
            return error.message.contains(fragment)
        }
    }

    @Test func unknownPlaceholderListsTheAllowedOnes() {
        do {
            _ = try LayoutTemplate("{artist}/{titel}.{ext}")
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("{titel}"))
            for placeholder in LayoutTemplate.Placeholder.allCases {
                #expect(error.message.contains("{\(placeholder.rawValue)}"))
            }
        }
    }
}
