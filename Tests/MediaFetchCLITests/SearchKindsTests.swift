import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import MediaFetchCLI

/// `mediafetch search` against the mock replaying real answers of every kind: a row for every record Apple
/// returned, with its kind and what a run could download, columns aligned by terminal cells in any script.
struct SearchKindsTests {
    /// Each recorded answer (Tests/ITunesSourceTests/Fixtures/records, where their sources are written down)
    /// with the search it answers and what its rows must say.
    static let kinds: [(file: String, media: String, entity: String?, kind: String, download: String)] = [
        ("song", "music", "song", "song", "preview"), ("album", "music", "album", "album", "artwork only"),
        ("artist", "music", "musicArtist", "artist", "nothing"),
        ("music-video", "musicVideo", nil, "music-video", "preview"),
        ("movie", "movie", nil, "feature-movie", "preview"),
        ("tv-episode", "tvShow", "tvEpisode", "tv-episode", "preview"),
        ("podcast", "podcast", nil, "podcast", "artwork only"),
        ("podcast-episode", "podcast", "podcastEpisode", "podcast-episode", "whole episode"),
        ("audiobook", "audiobook", nil, "audiobook", "preview"), ("ebook", "ebook", nil, "ebook", "artwork only"),
        ("software", "software", nil, "software", "artwork only"),
    ]

    static let fixtures = CommandRunner.packageRoot.appendingPathComponent("Tests/ITunesSourceTests/Fixtures/records")

    static func body(_ file: String) throws -> Data {
        try Data(contentsOf: fixtures.appendingPathComponent("\(file).json"))
    }

    /// Titles that try to break a table: wide CJK (long enough to be cut), combining marks, a right-to-left
    /// override, control characters (an escape sequence, a bell, a tab), an emoji ZWJ sequence and a flag;
    /// each put into a real film record in place of its title, artist and film series.
    static let hostile: [(title: String, artist: String, album: String)] = [
        ("東京の夜明けと長い長い物語の始まりについての映画です", "日本語の監督", "映画コレクション"),
        ("Ame\u{301}lie a\u{300}\u{301} Zoe\u{308}", "Bjo\u{308}rk", "Cafe\u{301} Crème"),
        ("\u{202E}evil.exe\u{202C} title", "\u{1B}[31mred\u{1B}[0m", "tab\there\u{7}"),
        ("👩\u{200D}👩\u{200D}👧 family night 🇯🇵🇯🇵", "🎸 band", "👍🏽 best of"),
    ]

    static func hostileAnswer() throws -> MockRecordedAnswer {
        let films = try MockRecordedAnswer(media: "movie", body: try body("movie"))
        let records = try hostile.indices.map { index -> String in
            let record = films.records[index % films.records.count]
            var object = try #require(try JSONSerialization.jsonObject(with: Data(record.utf8)) as? [String: Any])
            object["trackName"] = hostile[index].title
            object["artistName"] = hostile[index].artist
            object["collectionName"] = hostile[index].album
            object["trackId"] = 7_000 + index
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
            return String(decoding: data, as: UTF8.self)
        }
        return MockRecordedAnswer(media: "shortFilm", records: records)
    }

    static let server: MockCatalogServer = {
        do {
            var answers = try kinds.map {
                try MockRecordedAnswer(media: $0.media, entity: $0.entity, body: try body($0.file))
            }
            answers.append(try hostileAnswer())
            // Records without any id: the API returned them, and none can be shown.
            answers.append(MockRecordedAnswer(media: "all", records: [#"{"wrapperType":"artist","artistName":"X"}"#]))
            return try MockCatalogServer(catalog: MockCatalog(songs: MockCatalog.standard.songs, recorded: answers))
        } catch {
            fatalError("the mock server cannot start: \(error)")
        }
    }()

    static func search(media: String, entity: String?, json: Bool = false) async throws -> CommandRunner.Outcome {
        var arguments = ["search", "anything", "--media", media, "--endpoint", server.baseURL.absoluteString]
        if let entity { arguments += ["--entity", entity] }
        if json { arguments.append("--json") }
        return try await CommandRunner.run(arguments)
    }

    /// Where each header column starts, in terminal cells (header words have no spaces; columns are two apart).
    static func columnStarts(_ header: String) -> [Int] {
        let characters = Array(header)
        return characters.indices.filter { characters[$0] != " " && ($0 == 0 || characters[$0 - 1] == " ") }
    }

    /// A row's cells, read at the header's column starts by terminal cells; each must begin exactly there.
    static func cells(_ line: String, starts: [Int]) -> [String]? {
        var cells = Array(repeating: "", count: starts.count)
        var position = 0
        for character in line {
            guard let column = starts.lastIndex(where: { $0 <= position }) else { return nil }
            // A character that straddles a column start, or a cell that does not begin at one, is misaligned.
            let width = DisplayWidth.of(character)
            if column + 1 < starts.count, position + width > starts[column + 1] { return nil }
            cells[column].append(character)
            position += width
        }
        let trimmed = cells.map { String($0.reversed().drop { $0 == " " }.reversed()) }
        // A cell that begins with a space was pushed right.
        if trimmed.contains(where: { $0.hasPrefix(" ") }) { return nil }
        // Each cell but the last ends at least two cells before the next column starts.
        for column in 0..<(starts.count - 1) where !trimmed[column].isEmpty {
            if DisplayWidth.of(trimmed[column]) > starts[column + 1] - starts[column] - 2 { return nil }
        }
        return trimmed
    }

    @Test(arguments: kinds.indices)
    func aRowForEveryRecordWithItsKindAndWhatItOffers(index: Int) async throws {
        let expected = Self.kinds[index]
        let body = try #require(try JSONSerialization.jsonObject(with: try Self.body(expected.file)) as? [String: Any])
        let resultCount = try #require(body["resultCount"] as? Int)
        let outcome = try await Self.search(media: expected.media, entity: expected.entity)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let lines = outcome.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 1 + resultCount, "\(outcome.stdout)")
        let header = try #require(lines.first)
        #expect(header.hasPrefix("KIND  "))
        let starts = Self.columnStarts(header)
        #expect(starts.count == SearchCommand.header.count)
        for line in lines.dropFirst() {
            let cells = try #require(Self.cells(line, starts: starts), "misaligned: \(line)")
            #expect(cells[0] == expected.kind)
            #expect(cells[5] == expected.download)
            #expect(expected.download == "nothing" || cells[6].hasPrefix(Self.server.baseURL.absoluteString))
        }
    }

    @Test func aWholeEpisodeSaysSoInTheTableAndInANote() async throws {
        let outcome = try await Self.search(media: "podcast", entity: "podcastEpisode")
        #expect(outcome.stdout.contains("whole episode"))
        #expect(outcome.stdout.contains("46:40"))
        #expect(outcome.stderr.contains("note: some results are whole podcast episodes, not previews"))
        #expect(outcome.stderr.contains("max-size (default 50MB)"))
    }

    @Test func durationsOfAnHourOrMoreShowHours() async throws {
        let outcome = try await Self.search(media: "movie", entity: nil)
        let starts = Self.columnStarts(try #require(outcome.stdout.split(separator: "\n").first.map(String.init)))
        let rows = outcome.stdout.split(separator: "\n").dropFirst()
        let times = rows.compactMap { Self.cells(String($0), starts: starts)?[4] }
        #expect(times == ["1:59:14", "2:18:22", "2:03:13"])
        let shorter = try await Self.search(media: "tvShow", entity: "tvEpisode")
        #expect(shorter.stdout.contains("  28:24  "))
    }

    /// Hostile titles neither shift a column nor reach the terminal as controls; wide text is cut on a
    /// character boundary with an ellipsis, within its column.
    @Test func hostileTitlesStayInTheirColumns() async throws {
        let outcome = try await Self.search(media: "shortFilm", entity: nil)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let lines = outcome.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 1 + Self.hostile.count)
        let starts = Self.columnStarts(try #require(lines.first))
        for (line, hostile) in zip(lines.dropFirst(), Self.hostile) {
            let cells = try #require(Self.cells(line, starts: starts), "misaligned: \(line)")
            let title = ItemRef.printable(hostile.title)
            #expect(cells[2] == title || (cells[2].hasSuffix("…") && title.hasPrefix(cells[2].dropLast())))
            #expect(cells[1] == ItemRef.printable(hostile.artist))
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 || (0x202A...0x202E).contains($0.value) })
        }
        let cut = try #require(Self.cells(lines[1], starts: starts))[2]
        #expect(cut.hasSuffix("…"))
        #expect(DisplayWidth.of(cut) <= SearchCommand.caps[2])
        #expect(lines[2].contains("Ame\u{301}lie"))
    }

    @Test func jsonHasEveryResultWithItsKindAndWhatItOffers() async throws {
        for expected in Self.kinds {
            let outcome = try await Self.search(media: expected.media, entity: expected.entity, json: true)
            let items = try #require(
                try JSONSerialization.jsonObject(with: Data(outcome.stdout.utf8)) as? [[String: Any]])
            let body = try #require(
                try JSONSerialization.jsonObject(with: try Self.body(expected.file)) as? [String: Any])
            #expect(items.count == body["resultCount"] as? Int)
            let offer = ["preview": "preview", "artwork only": "artwork", "nothing": "nothing",
                         "whole episode": "whole-episode"][expected.download]
            for item in items {
                #expect(item["kind"] as? String == expected.kind)
                #expect(item["downloadable"] as? String == offer)
                #expect((item["isFullLength"] as? Bool) == (expected.download == "whole episode"))
            }
        }
    }

    @Test func noResultsOnlyWhenTheAPIReturnedNone() async throws {
        let none = try await CommandRunner.run([
            "search", "zzzzqqqq", "--endpoint", Self.server.baseURL.absoluteString,
        ])
        #expect(none.status == 0)
        #expect(none.stdout == "no results for \"zzzzqqqq\"\n")
        let unusable = try await Self.search(media: "all", entity: nil)
        #expect(unusable.status == 0)
        #expect(unusable.stdout.contains("none of the 1 results for \"anything\" can be shown"))
        #expect(unusable.stderr.contains("an artist record without a trackId, collectionId or artistId"))
    }
}
