import DirectorySink
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Files handed over in memory (`StagedFile.contents`, the sink's `inMemoryStagingLimit`): written into their folder
/// without a name and named once complete, with the same safety as a staged file's rename.
@Suite("DirectorySink, files in memory")
struct InMemoryStoreTests {
    /// What the pipeline hands over for a body kept in memory: nothing at `path`.
    func inMemory(_ bytes: Data, _ fixture: borrowing Fixture) -> StagedFile {
        StagedFile(
            path: fixture.stage.appendingPathComponent("never-written.part").path, size: Int64(bytes.count),
            sha256: nil, sourceURL: URL(fileURLWithPath: "/dev/null"), contents: bytes)
    }

    func sink(_ fixture: borrowing Fixture, sync: Bool) throws -> DirectorySink {
        DirectorySink(root: fixture.root, layout: try LayoutTemplate(LayoutTemplate.defaultLayout), sync: sync)
    }

    @Test func theSinkTakesSmallFilesInMemory() throws {
        let fixture = try Fixture()
        #expect(try sink(fixture, sync: true).inMemoryStagingLimit == 64 << 10)
    }

    @Test(arguments: [false, true])
    func storesTheBytesMarkedUnderTheirNameAndNothingElse(sync: Bool) async throws {
        let fixture = try Fixture()
        let sink = try sink(fixture, sync: sync)
        let bytes = Data((0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let plan = try await sink.plan(song("1", title: "Upside Down"), asset: .preview)

        let stored = try await sink.store(inMemory(bytes, fixture), as: plan)

        #expect(stored == plan.relativePath)
        #expect(try Data(contentsOf: fixture.url(stored)) == bytes)
        #expect(ownerMark(at: fixture.url(stored)) == "preview:1")
        // No temporary beside it, and nothing written to the staging path.
        #expect(try fixture.tree(fixture.root).keys.sorted() == [plan.relativePath])
        let folder = fixture.url(stored).deletingLastPathComponent().path
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["01 Upside Down.m4a"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.stage.path).isEmpty)
    }

    @Test(arguments: [false, true])
    func anOlderFileAndALinkAtTheNameAreReplacedNeverWrittenThrough(sync: Bool) async throws {
        let fixture = try Fixture()
        let sink = try sink(fixture, sync: sync)
        let first = try await sink.plan(song("1", title: "Song"), asset: .preview)
        let second = try await sink.plan(song("2", title: "Other"), asset: .preview)
        _ = try await sink.store(inMemory(Data("old".utf8), fixture), as: first)
        let target = fixture.outside.appendingPathComponent("precious.txt")
        try Data("original".utf8).write(to: target)
        let link = fixture.url(second.relativePath)
        try FileManager.default.createDirectory(at: link.deletingLastPathComponent(), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)

        _ = try await sink.store(inMemory(Data("new".utf8), fixture), as: first)
        _ = try await sink.store(inMemory(Data("second".utf8), fixture), as: second)

        #expect(
            try fixture.tree(fixture.root)
                == [first.relativePath: Data("new".utf8), second.relativePath: Data("second".utf8)])
        #expect(fixture.kind(link) == .file)
        #expect(try Data(contentsOf: target) == Data("original".utf8))
        let folder = link.deletingLastPathComponent().path
        let names = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(names == ["01 Other.m4a", "01 Song.m4a"])
    }

    @Test(arguments: [false, true])
    func aFolderInTheWayFailsTheStoreAndLeavesNothingBehind(sync: Bool) async throws {
        let fixture = try Fixture()
        let sink = try sink(fixture, sync: sync)
        let plan = try await sink.plan(song("1", title: "Song"), asset: .preview)
        let blocker = fixture.url(plan.relativePath)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: blocker.appendingPathComponent("inside.txt"))

        await #expect {
            _ = try await sink.store(inMemory(Data("x".utf8), fixture), as: plan)
        } throws: { error in
            (error as? SinkError)?.message.contains("a directory is in the way") ?? false
        }

        let album = blocker.deletingLastPathComponent()
        #expect(try FileManager.default.contentsOfDirectory(atPath: album.path) == ["01 Song.m4a"])
        #expect(try Data(contentsOf: blocker.appendingPathComponent("inside.txt")) == Data("keep".utf8))
    }
}
