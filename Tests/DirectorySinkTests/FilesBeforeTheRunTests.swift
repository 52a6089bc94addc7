import CLinux
import DirectorySink
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A folder that held files before the run: what the run does not know is numbered around, never replaced.
@Suite("DirectorySink: files already in the folder")
struct FilesBeforeTheRunTests {
    struct ListSource: Source {
        var items: [MediaItem]
        func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
            for item in items { try await emit(.item(item)) }
        }
    }

    @Sendable static func bytes(_ id: String) -> Data { Data("the preview of item \(id)".utf8) }

    /// Runs `ids` (every one titled "Same Title") into the fixture's root with the ledger in `state`.
    static func run(
        _ ids: [String], _ fixture: borrowing Fixture, state: URL
    ) async throws -> (summary: RunSummary, fetched: [String]) {
        let transport = ScriptedTransport(download: { request in
            ScriptedTransport.File(bytes: Array(bytes(request.url.pathComponents[1])))
        })
        let summary = await Pipeline(
            source: ListSource(items: ids.map { song($0, title: "Same Title", artist: "Dup") }),
            transport: transport, sink: try fixture.sink("{artist}/{title}.{ext}"),
            options: .init(
                concurrency: 2, stagingDirectory: state.appendingPathComponent("staging"), sourceName: "list",
                ledger: try Ledger(directory: state))
        ).run()
        return (summary, transport.requests.map { $0.url.pathComponents[1] })
    }

    /// The state folder is lost (deleted, or a new one named) and the catalog answers in another order with fewer
    /// items: before, the first item took the name of a file another item had stored and replaced it.
    @Test func aRunWithANewLedgerReplacesNoFileAnEarlierRunStored() async throws {
        let fixture = try Fixture()
        let first = try await Self.run(["1", "2", "3"], fixture, state: fixture.base.appendingPathComponent("one"))
        #expect(first.summary.stored == 3)
        let tree = try fixture.tree(fixture.root)
        #expect(tree["Dup/Same Title.m4a"] == Self.bytes("1"))
        #expect(tree["Dup/Same Title (3).m4a"] == Self.bytes("3"))

        let fresh = fixture.base.appendingPathComponent("two")
        let second = try await Self.run(["3", "4"], fixture, state: fresh)
        #expect(second.summary.stored == 2 && second.summary.failed == 0)
        var expected = tree
        expected["Dup/Same Title (4).m4a"] = Self.bytes("4")
        // Item 3 found its own file (by its mark) and kept its name; item 4 was numbered around 1 and 2.
        #expect(try fixture.tree(fixture.root) == expected)

        let again = try await Self.run(["3", "4"], fixture, state: fresh)
        #expect(again.fetched.isEmpty && again.summary.alreadyStored == 2)
        #expect(try fixture.tree(fixture.root) == expected)
    }

    @Test func aFileAPersonPutThereIsNumberedAroundAndKept() async throws {
        let fixture = try Fixture()
        let theirs = fixture.url("Dup/Same Title.m4a")
        try FileManager.default.createDirectory(at: theirs.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("my own recording".utf8).write(to: theirs)
        // A folder where a file would go is numbered around too, rather than failing the item.
        try FileManager.default.createDirectory(
            at: fixture.url("Dup/Same Title (2).m4a"), withIntermediateDirectories: true)

        let state = fixture.base.appendingPathComponent("state")
        let run = try await Self.run(["1", "2"], fixture, state: state)
        #expect(run.summary.stored == 2 && run.summary.failed == 0)
        #expect(
            try fixture.tree(fixture.root) == [
                "Dup/Same Title.m4a": Data("my own recording".utf8),
                "Dup/Same Title (3).m4a": Self.bytes("1"),
                "Dup/Same Title (4).m4a": Self.bytes("2"),
            ])
        let again = try await Self.run(["1", "2"], fixture, state: state)
        #expect(again.fetched.isEmpty && again.summary.alreadyStored == 2)
    }

    /// Files stored before stored files carried a mark, or on a filesystem that keeps none: the ledger says whose
    /// they are, so a re-run fetches nothing and numbers nothing.
    @Test func aStoredFileWithoutItsMarkIsKnownByTheLedger() async throws {
        let fixture = try Fixture()
        let state = fixture.base.appendingPathComponent("state")
        _ = try await Self.run(["1", "2"], fixture, state: state)
        let tree = try fixture.tree(fixture.root)
        for name in tree.keys {
            #expect(removexattr(fixture.url(name).path, DirectorySink.ownerAttribute) == 0, "\(name)")
        }
        let again = try await Self.run(["2", "1"], fixture, state: state)
        #expect(again.fetched.isEmpty && again.summary.alreadyStored == 2)
        #expect(try fixture.tree(fixture.root) == tree)
    }

    /// A ledger row from before names were kept (schema 7), or from a ledger that keeps none (PostgreSQL), beside
    /// a file without a mark: the row's location says whose it is, so the item keeps it and nothing is fetched.
    @Test func aStoredRowWithoutANameStillOwnsItsFile() async throws {
        let fixture = try Fixture()
        let state = fixture.base.appendingPathComponent("state")
        let file = fixture.url("Dup/Same Title.m4a")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Self.bytes("1").write(to: file)
        do {
            let ledger = try Ledger(directory: state)
            let key = LedgerKey(source: "list", itemID: "1", asset: .preview)
            ledger.begin(key, title: "Same Title", url: URL(fileURLWithPath: "/1/preview.m4a"))
            // Stored without a planned path: the row holds no name, as rows from before schema 7 do.
            ledger.stored(
                key, StoredRecord(location: "Dup/Same Title.m4a", size: Int64(Self.bytes("1").count), sha256: nil))
            try ledger.flush()
        }
        let run = try await Self.run(["2", "1"], fixture, state: state)
        #expect(run.fetched == ["2"] && run.summary.alreadyStored == 1, "\(run.fetched) \(run.summary) \((try? fixture.tree(fixture.root))?.keys.sorted() ?? [])")
        #expect(
            try fixture.tree(fixture.root) == [
                "Dup/Same Title.m4a": Self.bytes("1"), "Dup/Same Title (2).m4a": Self.bytes("2"),
            ])
    }

    /// A path that cannot be looked at (a link looping on itself where a folder should be) is no name held on
    /// disk: planning ends (it once numbered for ever), and the store reports the link.
    @Test func aPathThatCannotBeLookedAtEndsThePlanning() async throws {
        let fixture = try Fixture()
        try FileManager.default.createDirectory(at: fixture.root, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: fixture.url("Dup").path, withDestinationPath: fixture.url("Dup").path)
        let run = try await Self.run(["1"], fixture, state: fixture.base.appendingPathComponent("state"))
        #expect(run.summary.failed == 1 && run.summary.stored == 0)
    }

    /// The mark of a URL list's item is the one earlier builds wrote (`sha256sum` of `preview:` and the URL, its
    /// first 32 digits), so that their files stay their items' own.
    @Test func aLongIdsMarkIsTheDigestEarlierBuildsWrote() async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink("{title}.{ext}")
        let id = "http://127.0.0.1:18771/small-10/d0000/f0000000.bin"
        let plan = try await sink.plan(song(id, title: "Same Title", artist: "Dup"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Self.bytes(id)), as: plan)
        #expect(ownerMark(at: fixture.url(plan.relativePath)) == "sha256:5ab4ef990fae170a4e7cc0d56c48856e")
    }

    /// A file a killed run put in place but did not record: the next run's item finds its own mark and stores under
    /// the same name, so no item is ever stored twice. An id too long for the mark (a URL list's) is marked by its
    /// digest, short enough to live in the inode, and found the same way. (`preview:` and 40 bytes is the longest
    /// mark written as it is.)
    @Test(arguments: [
        "1", String(repeating: "b", count: 40), String(repeating: "b", count: 41),
        "long-" + String(repeating: "x", count: 60),
    ])
    func aFileAKilledRunDidNotRecordKeepsItsNameForItsItem(id: String) async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink("{artist}/{title}.{ext}")
        let plan = try await sink.plan(song(id, title: "Same Title", artist: "Dup"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Self.bytes(id)), as: plan)
        let mark = ownerMark(at: fixture.url(plan.relativePath))
        if id.utf8.count <= 40 {
            #expect(mark == "preview:" + id)
        } else {
            let digest = SHA256.hex(of: Data("preview:\(id)".utf8))
            #expect(mark == "sha256:" + digest.prefix(32))
            #expect((mark?.utf8.count ?? .max) <= DirectorySink.ownerMarkLimit)
        }

        let run = try await Self.run(["2", id], fixture, state: fixture.base.appendingPathComponent("state"))
        #expect(run.summary.stored == 2)
        #expect(
            try fixture.tree(fixture.root) == [
                "Dup/Same Title.m4a": Self.bytes(id), "Dup/Same Title (2).m4a": Self.bytes("2"),
            ])
    }

    /// The marks of the first builds that wrote them (`asset:id` whatever its length up to 200 bytes of id, then
    /// `asset:sha256:` and the id's whole digest) still say whose a file is, so an upgrade stores nothing twice.
    @Test(arguments: [String(repeating: "y", count: 60), String(repeating: "z", count: 201)])
    func aMarkOfTheEarlierLongerFormIsStillTheItemsOwn(id: String) async throws {
        let fixture = try Fixture()
        let sink = try fixture.sink("{artist}/{title}.{ext}")
        let plan = try await sink.plan(song(id, title: "Same Title", artist: "Dup"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Self.bytes(id)), as: plan)
        let earlier = "preview:" + (id.utf8.count > 200 ? "sha256:" + SHA256.hex(of: Data(id.utf8)) : id)
        let path = fixture.url(plan.relativePath).path
        #expect(setxattr(path, DirectorySink.ownerAttribute, earlier, earlier.utf8.count, 0) == 0)
        #expect(ownerMark(at: fixture.url(plan.relativePath)) == earlier)

        let run = try await Self.run(["2", id], fixture, state: fixture.base.appendingPathComponent("state"))
        #expect(run.summary.stored == 2)
        #expect(
            try fixture.tree(fixture.root) == [
                "Dup/Same Title.m4a": Self.bytes(id), "Dup/Same Title (2).m4a": Self.bytes("2"),
            ])
    }
}

/// The file's ``DirectorySink/ownerAttribute``, nil when it has none.
func ownerMark(at url: URL) -> String? {
    var mark = [UInt8](repeating: 0, count: 512)
    let length = mark.withUnsafeMutableBytes {
        getxattr(url.path, DirectorySink.ownerAttribute, $0.baseAddress, $0.count)
    }
    return length < 0 ? nil : String(decoding: mark.prefix(length), as: UTF8.self)
}
