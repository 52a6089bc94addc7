import Foundation
import MediaFetchTesting
import Testing

@testable import MediaFetchCore

@Suite("Staging folder", .removesScratch)
struct StagingTests {
    /// Staging names are what a later run resumes from, so they never change between versions: FNV-1a 64 of the
    /// source, a zero byte and the id (values computed apart from this code), with the id's ASCII letters and digits.
    @Test func stagingNamesStayTheSameFromVersionToVersion() {
        #expect(
            Pipeline.stagingName(source: "itunes", itemID: "1440857781", asset: .preview)
                == "1440857781-1131cacee6880cb2.preview.part")
        #expect(
            Pipeline.stagingName(source: "urls", itemID: "Café 日本", asset: .preview)
                == "Caf-728edaf03123d95b.preview.part")
    }

    @Test func partialFilesOfAnEarlierLayoutMoveIntoTheirSubfolder() throws {
        let staging = try scratchFolder("staging")
        defer { try? FileManager.default.removeItem(at: staging) }
        let name = Pipeline.stagingName(source: "itunes", itemID: "1440857781", asset: .preview)
        try Data("kept bytes".utf8).write(to: staging.appendingPathComponent(name))

        try Pipeline.prepareStaging(staging)

        let file = Pipeline.stagingFile(in: staging, source: "itunes", itemID: "1440857781", asset: .preview)
        #expect(file.deletingLastPathComponent().deletingLastPathComponent().path == staging.path)
        #expect(try Data(contentsOf: file) == Data("kept bytes".utf8))
        #expect(Pipeline.partialFiles(in: staging) == [file])
    }

    @Test func aPartialOfTheNewLayoutWinsOverTheOldOne() throws {
        let staging = try scratchFolder("staging")
        defer { try? FileManager.default.removeItem(at: staging) }
        let name = Pipeline.stagingName(source: "itunes", itemID: "42", asset: .preview)
        let file = Pipeline.stagingFile(in: staging, source: "itunes", itemID: "42", asset: .preview)
        try FileManager.default.createDirectory(
            at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("newer".utf8).write(to: file)
        try Data("older".utf8).write(to: staging.appendingPathComponent(name))

        try Pipeline.prepareStaging(staging)

        #expect(try Data(contentsOf: file) == Data("newer".utf8))
        #expect(Pipeline.partialFiles(in: staging) == [file])
    }

    @Test func strayFilesStayWhereTheyAreAndStopNothing() throws {
        let staging = try scratchFolder("staging")
        defer { try? FileManager.default.removeItem(at: staging) }
        // Not a name a staging hash makes (an uppercase digit), and a file that is no partial at all.
        try Data().write(to: staging.appendingPathComponent("x-A.preview.part"))
        try Data().write(to: staging.appendingPathComponent("README"))
        try Pipeline.prepareStaging(staging)
        #expect(FileManager.default.fileExists(atPath: staging.appendingPathComponent("x-A.preview.part").path))
        #expect(FileManager.default.fileExists(atPath: staging.appendingPathComponent("README").path))
    }

    /// A staging file's folder is the one ``Pipeline/shard(ofStagingName:)`` reads back from its name, and the
    /// path is what appending the folder and the name gives.
    @Test func stagingFilesLieInTheFolderTheirNameNames() {
        let staging = URL(fileURLWithPath: "/tmp/state/staging", isDirectory: true)
        var random = SplitMix64(seed: 5)
        for _ in 0..<500 {
            let id = String(UInt64.random(in: 0...UInt64.max, using: &random), radix: 36)
            let name = Pipeline.stagingName(source: "itunes", itemID: id, asset: .preview)
            let file = Pipeline.stagingFile(in: staging, source: "itunes", itemID: id, asset: .preview)
            let shard = Pipeline.shard(ofStagingName: name)
            #expect(shard != nil)
            #expect(
                file == staging.appendingPathComponent(shard ?? "?", isDirectory: true).appendingPathComponent(name))
        }
    }

    /// The byte path of stagingName must keep exactly the letters and digits the Character path keeps.
    @Test func asciiStagingNamesKeepWhatTheCharacterRuleKeeps() {
        var random = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            let length = Int.random(in: 0...60, using: &random)
            let id = String(
                decoding: (0..<length).map { _ in UInt8.random(in: 0...0x7F, using: &random) }, as: UTF8.self)
            let expected = String(id.filter { $0.isASCII && ($0.isLetter || $0.isNumber) }.prefix(40))
            let name = Pipeline.stagingName(source: "s", itemID: id, asset: .preview)
            #expect(name.hasPrefix(expected + "-"), "\(Array(id.utf8))")
        }
    }
}
