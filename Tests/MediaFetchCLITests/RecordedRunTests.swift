import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// `mediafetch run` against real answers of kinds without a preview, and of a podcast episode whose preview is
/// the whole episode.
struct RecordedRunTests {
    static func server() throws -> MockCatalogServer {
        let answers = [
            try MockRecordedAnswer(media: "music", entity: "album", body: try SearchKindsTests.body("album")),
            try MockRecordedAnswer(
                media: "podcast", entity: "podcastEpisode", body: try SearchKindsTests.body("podcast-episode")),
            try MockRecordedAnswer(media: "podcast", entity: "podcast", body: try SearchKindsTests.body("podcast")),
        ]
        return try MockCatalogServer(catalog: MockCatalog(songs: MockCatalog.standard.songs, recorded: answers))
    }

    /// A config in `scratch` searching `media`/`entity` on `server`, storing `assets` under `out`.
    static func config(
        _ scratch: URL, _ server: MockCatalogServer, media: String, entity: String, assets: String,
        download: String = ""
    ) throws -> URL {
        let config = scratch.appendingPathComponent("run.yaml")
        try Data(
            """
            source:
              use: itunes
              term: anything
              media: \(media)
              entity: \(entity)
              endpoint: \(server.baseURL.absoluteString)
              requests-per-minute: 0
            sink:
              use: directory
              path: out
              layout: "{artist}/{title}.{ext}"
              assets: \(assets)
            \(download)
            state: state
            """.utf8
        ).write(to: config)
        return config
    }

    /// The bytes the mock serves for a recorded artwork URL at `size`.
    static func artwork(_ server: MockCatalogServer, _ original: String, size: Int) throws -> Data {
        let url = ArtworkURL.resized(try #require(URL(string: original)), to: size)
        let path = try #require(MockRecordedAnswer.servedPath(of: url))
        return Data(try #require(server.contentBytes(path: path)))
    }

    @Test func artworkOfRecordsWithoutAPreviewIsStored() async throws {
        let server = try Self.server()
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let config = try Self.config(scratch, server, media: "music", entity: "album", assets: "[artwork]")
        let outcome = try await CommandRunner.run(["run", config.path, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("3 stored, 0 failed, 0 skipped"))
        let stored = try CommandRunner.tree(scratch.appendingPathComponent("out"))
        let thumbnail = "https://is3-ssl.mzstatic.com/image/thumb/Music115/v4/04/56/73/"
            + "04567328-c82e-bc18-2174-eb862e53fabb/source/100x100bb.jpg"
        // The sink asks for 600x600 (artwork-size), and gets that size's bytes.
        #expect(stored["U2/No Line on the Horizon.jpg"] == (try Self.artwork(server, thumbnail, size: 600)))
        #expect(Set(stored.keys) == ["U2/No Line on the Horizon.jpg", "U2/The Joshua Tree.jpg",
            "Various Artists/A Very Special Christmas.jpg"])
    }

    /// An album with assets: [preview] has nothing to fetch: skipped, with the reason, not failed.
    @Test func aRecordWithoutAPreviewIsSkippedWhenOnlyPreviewsAreWanted() async throws {
        let server = try Self.server()
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let config = try Self.config(scratch, server, media: "music", entity: "album", assets: "[preview]")
        let outcome = try await CommandRunner.run(["run", config.path])
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("0 stored, 0 failed, 3 skipped"))
        #expect(outcome.stderr.contains("no preview URL"))
    }

    /// Artwork served as something else is refused, and the reason reads right ("not an artwork").
    @Test func artworkOfTheWrongTypeIsRefusedWithAReasonThatReadsRight() async throws {
        let server = try Self.server()
        server.setFaultHook { request in
            request.path.hasSuffix("600x600bb.jpg")
                ? .respond(status: 200, headers: [("Content-Type", "text/html")], body: Array("<html>".utf8)) : nil
        }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let config = try Self.config(scratch, server, media: "music", entity: "album", assets: "[artwork]")
        let outcome = try await CommandRunner.run(["run", config.path, "--quiet"])
        #expect(outcome.status == 1)
        #expect(outcome.stdout.contains("served as text/html, which is not an artwork (the download section's"))
    }

    /// The episode is 44.8 MB (46:40 at 128 kbit/s); a max-size below that fails it before its body is fetched,
    /// and the run said beforehand that it is a whole episode.
    @Test func aWholeEpisodeOverMaxSizeFailsWithTheLimitNamedAndIsNotFetched() async throws {
        let server = try Self.server()
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let config = try Self.config(
            scratch, server, media: "podcast", entity: "podcastEpisode", assets: "[preview]",
            download: "download:\n  max-size: 5MB")
        let outcome = try await CommandRunner.run(["run", config.path])
        #expect(outcome.status == 1, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stderr.contains("some results are whole podcast episodes, not previews"))
        #expect(outcome.stdout.contains("failed: Defining Enough [1000522907460]"))
        #expect(outcome.stdout.contains("larger than the limit of 5000000 bytes (5 MB, download.max-size: raise it"))
        #expect(outcome.stdout.contains("0 stored, 1 failed"))
        // Refused on its announced length: no retry, and nothing of it kept.
        #expect(server.requests.filter { $0.path.hasSuffix("/audio.mp3") }.count == 1)
        let kept = try CommandRunner.tree(scratch).filter { !$0.key.hasSuffix(".sqlite") && $0.key != "run.yaml" }
        #expect(kept.values.allSatisfy { $0.count < 1_000_000 }, "\(kept.keys.sorted())")
    }

    /// A podcast search finds shows, which carry no preview: the summary says every item was skipped, why, and
    /// names what gives episodes. Albums say what has a preview instead, and that artwork can be stored.
    @Test func aRunWhoseItemsWereAllSkippedSaysWhatWouldHaveGivenFiles() async throws {
        let server = try Self.server()
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let shows = try Self.config(scratch, server, media: "podcast", entity: "podcast", assets: "[preview]")
        let outcome = try await CommandRunner.run(["run", shows.path, "--quiet"])
        #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
        #expect(outcome.stdout.contains("every item the source found was skipped, so nothing was downloaded"))
        #expect(outcome.stdout.contains("no preview URL"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("`entity: podcastEpisode`"), "\(outcome.stdout)")
        #expect(outcome.stdout.contains("`assets: [artwork]`"), "\(outcome.stdout)")

        let albums = try Self.config(scratch, server, media: "music", entity: "album", assets: "[preview]")
        let other = try await CommandRunner.run(["run", albums.path, "--quiet"])
        #expect(other.stdout.contains("every item the source found was skipped"), "\(other.stdout)")
        #expect(other.stdout.contains("music: song or musicVideo"), "\(other.stdout)")
        #expect(!other.stdout.contains("podcastEpisode"))
    }
}
