import Foundation
import Testing

@testable import MediaFetchCLI

/// `mock-server --recorded MEDIA[/ENTITY]=FILE` reads a captured answer for the searches it names.
struct MockServerCommandTests {
    static let records = CommandRunner.packageRoot.appendingPathComponent("Tests/ITunesSourceTests/Fixtures/records")

    @Test func aMediaAndEntityNameTheSearch() async throws {
        let path = Self.records.appendingPathComponent("podcast-episode.json").path
        let answer = try MockServerCommand.recordedAnswer("podcast/podcastEpisode=\(path)")
        #expect(answer.media == "podcast")
        #expect(answer.entity == "podcastEpisode")
        #expect(answer.records.count == 1)
        let ebooks = Self.records.appendingPathComponent("ebook.json").path
        let plain = try MockServerCommand.recordedAnswer("ebook=\(ebooks)")
        #expect(plain.entity == nil)
        #expect(plain.records.count == 3)
    }

    @Test(arguments: ["podcast", "=x.json", "podcast=/no/such/file.json", "podcast=\(#filePath)"])
    func aWrongValueIsAUsageErrorThatSaysWhy(value: String) {
        let error = #expect(throws: UsageError.self) { try MockServerCommand.recordedAnswer(value) }
        #expect(error?.description.contains("--recorded") == true)
    }
}
