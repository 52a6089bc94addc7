import DirectorySink
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

@Suite("DirectorySink")
struct DirectorySinkTests {
    /// A catalog that answers in another order the next day (search ranking changes): the stored files keep their
    /// names, nothing is fetched again, and a new item with the same name is numbered around them, never given a
    /// stored file's name (it replaced that file before).
    @Test func aStoredFileKeepsItsNameWhenTheSourceComesInAnotherOrder() async throws {
        let fixture = try Fixture()
        let state = fixture.base.appendingPathComponent("state")
        let ledger = try Ledger(directory: state)
        struct ListSource: Source {
            var items: [MediaItem]
            func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
                for item in items { try await emit(.item(item)) }
            }
        }
        @Sendable func bytes(_ url: URL) -> [UInt8] { Array("the preview of \(url.path)".utf8) }
        func run(_ ids: [String]) async throws -> (summary: RunSummary, fetched: [String]) {
            let transport = ScriptedTransport(download: { request in ScriptedTransport.File(bytes: bytes(request.url)) })
            let items = ids.map { id in song(id, title: "Same Title", artist: id == "4" ? "DUP" : "Dup") }
            let summary = await Pipeline(
                source: ListSource(items: items), transport: transport, sink: try fixture.sink("{artist}/{title}.{ext}"),
                options: .init(
                    concurrency: 2, stagingDirectory: state.appendingPathComponent("staging"), sourceName: "list",
                    ledger: ledger)
            ).run()
            return (summary, transport.requests.map { $0.url.pathComponents[1] })
        }
        let first = try await run(["1", "2", "3"])
        #expect(first.summary.stored == 3)
        let tree = try fixture.tree(fixture.root)
        #expect(tree["Dup/Same Title.m4a"] == Data(bytes(URL(string: "https://audio.example/1/preview.m4a")!)))
        #expect(tree["Dup/Same Title (3).m4a"] == Data(bytes(URL(string: "https://audio.example/3/preview.m4a")!)))

        let reversed = try await run(["3", "2", "1"])
        #expect(reversed.summary.stored == 0 && reversed.summary.alreadyStored == 3 && reversed.summary.failed == 0)
        #expect(reversed.fetched.isEmpty)
        #expect(try fixture.tree(fixture.root) == tree)

        let more = try await run(["4", "3", "2", "1"])
        #expect(more.summary.stored == 1 && more.summary.alreadyStored == 3)
        #expect(more.fetched == ["4"])
        var expected = tree
        expected["Dup/Same Title (4).m4a"] = Data(bytes(URL(string: "https://audio.example/4/preview.m4a")!))
        #expect(try fixture.tree(fixture.root) == expected)
    }

    @Test func storesTheStagedBytesInTheLayout() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        let bytes = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let plan = try await sink.plan(song("1", title: "Upside Down"), asset: .preview)
        #expect(plan.relativePath == "Artist/Album/01 Upside Down.m4a")
        let staged = try fixture.staged(bytes)

        let stored = try await sink.store(staged, as: plan)

        #expect(stored == plan.relativePath)
        #expect(try Data(contentsOf: fixture.url(stored)) == bytes)
        #expect(fixture.kind(fixture.root.appendingPathComponent("Artist/Album")) == .directory)
        #expect(fixture.kind(staged.url) == .missing)
        #expect(try fixture.tree(fixture.root).keys.sorted() == [plan.relativePath])
    }

    /// The sink holds its root open between stores; a root removed meanwhile is made again where the path says,
    /// as when each store opened it, with and without sync.
    @Test(arguments: [false, true])
    func aRootRemovedBetweenStoresIsMadeAgain(sync: Bool) async throws {
        let fixture = try Fixture()
        let sink = DirectorySink(root: fixture.root, layout: try LayoutTemplate("{title}.{ext}"), sync: sync)
        let first = try await sink.plan(song("1", title: "One"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Data("one".utf8)), as: first)
        try FileManager.default.removeItem(at: fixture.root)
        let second = try await sink.plan(song("2", title: "Two"), asset: .preview)

        let stored = try await sink.store(try fixture.staged(Data("two".utf8)), as: second)

        #expect(try fixture.tree(fixture.root) == [stored: Data("two".utf8)])
        #expect(try fixture.tree(fixture.outside).isEmpty)
    }

    @Test func hostileMetadataLandsInsideTheRoot() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        let items = [
            song("1", title: "../../etc/passwd", artist: "../..", album: ".."),
            song("2", title: "/abs/path", artist: "/etc", album: "/"),
            song("3", title: "nul\u{0}byte", artist: "a\u{0}/../b", album: "\u{202E}txt.exe"),
            song("4", title: "..", artist: nil, album: nil, track: nil),
            song("5", title: "CON", artist: "C:\\Windows", album: "x:y"),
        ]
        for item in items {
            let plan = try await sink.plan(item, asset: .preview)
            #expect(!plan.relativePath.split(separator: "/").contains { $0 == ".." || $0 == "." || $0.isEmpty })
            _ = try await sink.store(try fixture.staged(Data(item.id.utf8)), as: plan)
        }
        let tree = try fixture.tree(fixture.root)
        #expect(Set(tree.values) == Set(items.map { Data($0.id.utf8) }))
        // Nothing appeared anywhere else in the scratch folder.
        #expect(try fixture.tree(fixture.base).keys.allSatisfy { $0.hasPrefix("library/music/") })
        #expect(try fixture.tree(fixture.outside).isEmpty)
    }

    @Test func symlinkPlantedAsAFolderIsNotFollowed() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        try FileManager.default.createDirectory(at: fixture.root, withIntermediateDirectories: true)
        let link = fixture.root.appendingPathComponent("Artist")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: fixture.outside)
        let plan = try await sink.plan(song("1", title: "Song"), asset: .preview)
        let staged = try fixture.staged(Data("evil".utf8))

        await #expect {
            _ = try await sink.store(staged, as: plan)
        } throws: { error in
            let message = (error as? SinkError)?.message ?? ""
            return message.contains("symbolic link") && message.contains("Artist") && message.contains("Song [1]")
        }

        #expect(try fixture.tree(fixture.outside).isEmpty)
        #expect(fixture.kind(link) == .link)  // the user's link is left alone
        #expect(try fixture.tree(fixture.root) == ["Artist": Data("<link>".utf8)])
    }

    @Test func symlinkPlantedDeeperIsNotFollowed() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        let artist = fixture.root.appendingPathComponent("Artist")
        try FileManager.default.createDirectory(at: artist, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            at: artist.appendingPathComponent("Album"),
            withDestinationURL: fixture.outside
        )
        let plan = try await sink.plan(song("1", title: "Song"), asset: .preview)
        await #expect(throws: SinkError.self) {
            _ = try await sink.store(try fixture.staged(Data("evil".utf8)), as: plan)
        }
        #expect(try fixture.tree(fixture.outside).isEmpty)
    }

    @Test func fileWhereAFolderShouldBeIsReported() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        try FileManager.default.createDirectory(at: fixture.root, withIntermediateDirectories: true)
        let blocker = fixture.root.appendingPathComponent("Artist")
        try Data("mine".utf8).write(to: blocker)
        let plan = try await sink.plan(song("1", title: "Song"), asset: .preview)

        await #expect {
            _ = try await sink.store(try fixture.staged(Data("x".utf8)), as: plan)
        } throws: { error in
            (error as? SinkError)?.message.contains("not a folder") ?? false
        }
        #expect(try Data(contentsOf: blocker) == Data("mine".utf8))
    }

    @Test func symlinkAtTheFinalNameIsReplacedNotWrittenThrough() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        let plan = try await sink.plan(song("1", title: "Song"), asset: .preview)
        let target = fixture.outside.appendingPathComponent("precious.txt")
        try Data("original".utf8).write(to: target)
        let final = fixture.url(plan.relativePath)
        let folder = final.deletingLastPathComponent()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: final, withDestinationURL: target)

        _ = try await sink.store(try fixture.staged(Data("new".utf8)), as: plan)

        #expect(try Data(contentsOf: target) == Data("original".utf8))
        #expect(fixture.kind(final) == .file)
        #expect(try Data(contentsOf: final) == Data("new".utf8))
    }

    @Test func storingOverAnExistingFileReplacesIt() async throws {
        let fixture = try Fixture()
        let first = try fixture.sink()
        let plan = try await first.plan(song("1", title: "Song"), asset: .preview)
        _ = try await first.store(try fixture.staged(Data("old".utf8)), as: plan)

        // A second run plans the same name and replaces the file.
        let second = try fixture.sink()
        let again = try await second.plan(song("1", title: "Song"), asset: .preview)
        #expect(again == plan)
        _ = try await second.store(try fixture.staged(Data("new".utf8)), as: again)

        #expect(try fixture.tree(fixture.root) == [plan.relativePath: Data("new".utf8)])
    }

    @Test func failedStoreLeavesNoTemporaryFileAndKeepsWhatWasThere() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        let plan = try await sink.plan(song("1", title: "Song"), asset: .preview)
        // A non-empty folder where the file should go: the final rename must fail.
        let blocker = fixture.url(plan.relativePath)
        try FileManager.default.createDirectory(at: blocker, withIntermediateDirectories: true)
        try Data("keep".utf8).write(to: blocker.appendingPathComponent("inside.txt"))

        await #expect {
            _ = try await sink.store(try fixture.staged(Data("x".utf8)), as: plan)
        } throws: { error in
            (error as? SinkError)?.message.contains("a directory is in the way") ?? false
        }

        let album = blocker.deletingLastPathComponent()
        #expect(try FileManager.default.contentsOfDirectory(atPath: album.path) == ["01 Song.m4a"])
        #expect(try Data(contentsOf: blocker.appendingPathComponent("inside.txt")) == Data("keep".utf8))
    }

    @Test func unsafePlansAreRefused() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink()
        for path in ["../escape.m4a", "/abs.m4a", "a//b.m4a", "a/./b.m4a", ""] {
            let plan = StoragePlan(item: ItemRef(id: "1", title: "x"), asset: .preview, relativePath: path)
            await #expect(throws: SinkError.self) {
                _ = try await sink.store(try fixture.staged(Data("x".utf8)), as: plan)
            }
        }
        #expect(try fixture.tree(fixture.base).keys.allSatisfy { $0.hasPrefix("stage/") })
    }

    @Test func plansAreDeterministicAndNumbered() async throws {
        let fixture = try Fixture()
        let items = [
            song("1", title: "Same"), song("2", title: "same"), song("3", title: "SAME"), song("4", title: "Other"),
        ]
        var runs: [[String]] = []
        for _ in 0..<2 {
            let sink = try fixture.sink()
            var paths: [String] = []
            for item in items { paths.append(try await sink.plan(item, asset: .preview).relativePath) }
            runs.append(paths)
        }
        #expect(runs[0] == runs[1])
        #expect(
            runs[0] == [
                "Artist/Album/01 Same.m4a", "Artist/Album/01 same (2).m4a",
                "Artist/Album/01 SAME (3).m4a", "Artist/Album/01 Other.m4a",
            ])
    }

    @Test func concurrentStoresGiveTheSameTreeAsSequentialOnes() async throws {
        let fixture = try Fixture()
        let sequentialRoot = fixture.base.appendingPathComponent("sequential")
        let concurrentRoot = fixture.base.appendingPathComponent("concurrent")
        let sequential = try fixture.sink(root: sequentialRoot)
        let concurrent = try fixture.sink(root: concurrentRoot)
        // Many clashes: 5 artists, 4 albums, 30 titles in mixed case.
        let items = (0..<200).map { index in
            song(
                "\(index)",
                title: index % 2 == 0 ? "Title \(index % 30)" : "TITLE \(index % 30)",
                artist: "Artist \(index % 5)",
                album: "Album \(index % 4)",
                track: index % 3
            )
        }
        var jobs: [(StagedFile, StoragePlan)] = []
        for item in items {
            let plan = try await sequential.plan(item, asset: .preview)
            #expect(try await concurrent.plan(item, asset: .preview) == plan)
            jobs.append((try fixture.staged(Data("item \(item.id)".utf8)), plan))
        }
        var concurrentJobs: [(StagedFile, StoragePlan)] = []
        for (_, plan) in jobs {
            concurrentJobs.append((try fixture.staged(Data("item \(plan.item.id)".utf8)), plan))
        }

        for (file, plan) in jobs { _ = try await sequential.store(file, as: plan) }
        try await withThrowingTaskGroup(of: String.self) { group in
            for (file, plan) in concurrentJobs.reversed() {
                group.addTask { try await concurrent.store(file, as: plan) }
            }
            for try await _ in group {}
        }

        let expected = try fixture.tree(sequentialRoot)
        #expect(expected.count == 200)
        #expect(try fixture.tree(concurrentRoot) == expected)
        #expect(try fixture.tree(fixture.stage).isEmpty)
    }

    @Test(.enabled(if: crossDeviceStage() != nil, "needs /dev/shm on another filesystem"))
    func storesAcrossFilesystemsByCopying() async throws {
        let fixture = try Fixture()
        guard let otherDevice = crossDeviceStage() else { return }
        let folder = otherDevice.appendingPathComponent("mediafetch-sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let sink = try fixture.sink()
        let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let staged = try fixture.staged(bytes, in: folder)
        let plan = try await sink.plan(song("1", title: "Song"), asset: .preview)

        _ = try await sink.store(staged, as: plan)

        #expect(try fixture.tree(fixture.root) == [plan.relativePath: bytes])
        #expect(fixture.kind(staged.url) == .missing)
        // The copy carries the mark a rename would have kept.
        #expect(ownerMark(at: fixture.url(plan.relativePath)) == "preview:1")
    }

    @Test func factoryReadsOptionsAndRejectsABadLayout() throws {
        let location = SourceLocation(file: "demo.yaml", line: 12, column: 11)
        let bad = PluginOptions(
            section: "sink",
            values: ["path": .path("/tmp/x"), "layout": .string("{artist}/{titel}.{ext}")],
            locations: ["layout": location]
        )
        #expect {
            _ = try DirectorySink.descriptor.make(bad, PluginContext(stateDirectory: URL(fileURLWithPath: "/tmp")))
        } throws: { error in
            let text = (error as? ConfigError)?.description ?? ""
            return text.hasPrefix("demo.yaml:12:11: sink.layout: unknown placeholder {titel}")
                && text.contains("{title}")
        }

        let good = PluginOptions(
            section: "sink",
            values: ["path": .path("/srv/music"), "layout": .string("{title}.{ext}")]
        )
        let sink = try DirectorySink(options: good)
        #expect(sink.root.path == "/srv/music")
        #expect(sink.layout.text == "{title}.{ext}")
    }

    @Test func descriptorDocumentsItsOptions() {
        let info = DirectorySink.descriptor.info
        #expect(info.name == "directory")
        #expect(info.kind == .sink)
        #expect(info.option("path")?.defaultValue == .path("downloads"))
        #expect(info.option("layout")?.defaultValue == .string(LayoutTemplate.defaultLayout))
        for placeholder in LayoutTemplate.Placeholder.allCases {
            #expect(info.option("layout")?.doc.contains("{\(placeholder.rawValue)}") == true)
        }
    }
}

/// `/dev/shm` when it is on another filesystem than the temporary folder (so a rename gives EXDEV).
func crossDeviceStage() -> URL? {
    var shm = stat()
    var temporary = stat()
    guard stat("/dev/shm", &shm) == 0, stat(FileManager.default.temporaryDirectory.path, &temporary) == 0,
        shm.st_dev != temporary.st_dev, access("/dev/shm", W_OK) == 0
    else { return nil }
    return URL(fileURLWithPath: "/dev/shm")
}
