import ExecPlugins
import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Testing

/// The two plugins in `Examples/exec`, written from PROTOCOL.md alone, run end to end against the mock catalog:
/// the Python source reads a CSV file, the sh sink stores into a folder.
struct ExamplesTests {
    /// A CSV of `songs` of the mock catalog (lines 2 to 1 + count), then a row without a preview, one with an ftp
    /// URL and one without an id.
    static func csv(_ songs: [MockSong], server: MockCatalogServer) -> String {
        func quoted(_ text: String) -> String { "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
        var rows = ["id,title,artist,album,trackNumber,releaseDate,previewUrl,label"]
        for song in songs {
            let fields = [
                String(song.trackId), quoted(song.trackName), quoted(song.artistName), quoted(song.collectionName),
                String(song.trackNumber), "2005-01-01", server.previewURL(for: song).absoluteString, "Indie",
            ]
            rows.append(fields.joined(separator: ","))
        }
        rows.append("9001,No Preview,Someone,Somewhere,1,,,")
        rows.append("9002,Wrong Scheme,Someone,Somewhere,2,,ftp://example.com/x.m4a,")
        rows.append(",Nameless,Someone,,,,http://127.0.0.1:1/x.m4a,")
        return rows.joined(separator: "\n") + "\n"
    }

    static func config(folder: String = "stored") -> String {
        """
        source:
          use: exec
          command: [python3, \(ExecFixture.example("csv-source.py").path)]
          options: {file: songs.csv}
        sink:
          use: exec
          command: [\(ExecFixture.example("dir-sink.sh").path)]
          options: {folder: \(folder)}
        """
    }

    @Test func theExampleSourceAndSinkStoreWhatTheServerServed() async throws {
        _ = try RequiredProgram.python3.locate()
        let fixture = try ExecFixture()
        let songs = Array(fixture.server.catalog.songs.prefix(5))
        try fixture.write("songs.csv", Self.csv(songs, server: fixture.server))

        let first = try await fixture.run(Self.config())
        #expect(first.summary.stored == 5, "\(first.failures) \(first.summary)")
        #expect(first.summary.sourceError == nil && first.summary.sinkError == nil)
        #expect(first.skips["9001"]?.contains("songs.csv line 7: the row has no previewUrl") == true)
        #expect(first.failures["9002"]?.contains("is not an http or https URL") == true)
        #expect(first.failures["songs.csv line 9"]?.contains("the row has no id") == true)
        #expect(first.summary.failed == 2 && first.summary.exitCode == 1)

        // Every song is where the layout the plan request suggested puts it, holding the bytes served.
        let stored = try fixture.tree("stored")
        #expect(stored.count == 5)
        let layout = try LayoutTemplate(LayoutTemplate.defaultLayout)
        for song in songs {
            let item = MediaItem(
                id: String(song.trackId), title: song.trackName, artist: song.artistName, album: song.collectionName,
                trackNumber: song.trackNumber, previewURL: fixture.server.previewURL(for: song))
            let path = layout.renderPath(item, asset: .preview)
            #expect(stored[path] == Data(fixture.server.catalog.previewBytes(for: song)), "\(path)")
        }

        // The next run asks the sink to keep each file, and fetches none again.
        let requests = fixture.server.requests.count
        let second = try await fixture.run(Self.config())
        #expect(second.summary.alreadyStored == 5 && second.summary.stored == 0)
        #expect(fixture.server.requests.count == requests)
    }

    @Test func theBuiltToolRunsThemAndShowsThePluginsStderrUnderItsName() throws {
        _ = try RequiredProgram.python3.locate()
        let fixture = try ExecFixture()
        let songs = Array(fixture.server.catalog.songs.prefix(3))
        try fixture.write("songs.csv", Self.csv(songs, server: fixture.server))
        try fixture.write("exec.yaml", Self.config())

        let outcome = try Binary.run(["run", "exec.yaml"], in: fixture.folder)
        #expect(outcome.status == 1, "\(outcome.stderr)")
        #expect(outcome.stdout.contains("3 stored, 2 failed, 1 skipped"), "\(outcome.stdout)")
        // csv-source.py's closing count, written to its stderr.
        #expect(
            outcome.stderr.contains("[csv-source.py] songs.csv: 3 items, 1 skipped, 2 failed\n"), "\(outcome.stderr)")
        for song in songs {
            #expect(
                try fixture.tree("stored").values.contains(Data(fixture.server.catalog.previewBytes(for: song))))
        }
    }

    @Test func thePluginsCommandListsExecAsASourceAndASink() throws {
        let fixture = try ExecFixture(files: 1)
        let outcome = try Binary.run(["plugins"], in: fixture.folder)
        #expect(outcome.status == 0)
        let lines = outcome.stdout.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("source exec: ") }, "\(outcome.stdout)")
        #expect(lines.contains { $0.hasPrefix("sink exec: ") }, "\(outcome.stdout)")
        #expect(outcome.stdout.contains("PROTOCOL.md"))
    }
}
