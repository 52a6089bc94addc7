import Foundation
import Testing

@testable import MediaFetchCore

/// The names a sink plans, kept in the run's ledger instead of in memory: the same names, call for call.
@Suite("PathReserver", .removesScratch)
struct PathReserverTests {
    /// Clashes of every kind the numbering knows: case and normalization, a taken numbered name, a directory
    /// where a file is, a file where a directory is, the collection's own files, and long names.
    static let paths: [String] = {
        let long = SafeName.component(String(repeating: "é", count: 300) + ".m4a", keepingExtension: true)
        var paths = [
            "A/B/Title.m4a", "A/B/Title.m4a", "a/b/title.M4A", "A/C/Title.m4a",
            "Beyonc\u{E9}/Halo.m4a", "BEYONCE\u{301}/halo.M4A",
            "x (2).m4a", "x.m4a", "x.m4a",
            "D/E", "D/E/c.m4a", "d/e/d.m4a", "D",
            "manifest.json", "Playlist.m3u8",
        ]
        paths += Array(repeating: long, count: 4)
        paths += (0..<60).map { "Artist \($0 % 3)/Album/Track \($0 % 7).m4a" }
        return paths
    }()

    static func components(_ path: String) -> [String] { path.split(separator: "/").map(String.init) }

    /// What today's reserver answers, in memory.
    static func expected() -> [String] {
        var reserver = NameReserver.reservingCollectionFiles()
        return paths.map { reserver.reserve(Self.components($0)).joined(separator: "/") }
    }

    @Test func namesKeptInTheLedgerAreTheNamesKeptInMemory() throws {
        let folder = try scratchFolder("names")
        defer { try? FileManager.default.removeItem(at: folder) }
        // Small batches, so that some lookups find their names committed and others still queued.
        let ledger = try Ledger(directory: folder, batchSize: 3, batchAge: .zero)
        try ledger.resetRunKeys()
        let reserver = PathReserver.reservingCollectionFiles()
        try reserver.keep(in: ledger)
        var got: [String] = []
        for path in Self.paths {
            got.append(try reserver.reserve(Self.components(path)).joined(separator: "/"))
            try ledger.flushIfDue()
        }
        #expect(got == Self.expected())
        #expect(got.contains("A/B/title (3).M4A") && got.contains("Beyonc\u{E9}/halo (2).M4A"))
        #expect(got.contains("D (2)") && got.contains("D/E (2)/c.m4a") && got.contains("manifest (2).json"))
    }

    @Test func aReserverInMemoryAnswersTheSame() throws {
        let reserver = PathReserver.reservingCollectionFiles()
        let got = try Self.paths.map { try reserver.reserve(Self.components($0)).joined(separator: "/") }
        #expect(got == Self.expected())
    }

    @Test func theNextRunPlansTheSameNamesAgain() throws {
        let folder = try scratchFolder("names-again")
        defer { try? FileManager.default.removeItem(at: folder) }
        var runs: [[String]] = []
        for _ in 0..<2 {
            // As the pipeline starts a run: a ledger opened from disk, its run keys emptied, the reserver kept there.
            let ledger = try Ledger(directory: folder)
            try ledger.resetRunKeys()
            let reserver = PathReserver.reservingCollectionFiles()
            try reserver.keep(in: ledger)
            runs.append(try Self.paths.map { try reserver.reserve(Self.components($0)).joined(separator: "/") })
            try ledger.flush()
        }
        #expect(runs[0] == Self.expected())
        #expect(runs[1] == runs[0])
    }

    @Test func runKeysAreSeenBeforeAndAfterTheirCommit() throws {
        let folder = try scratchFolder("run-keys")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ledger = try Ledger(directory: folder)
        #expect(try ledger.runKey(scope: "s", key: "k") == nil)
        ledger.takeRunKey(scope: "s", key: "k", value: "7")
        ledger.takeRunKey(scope: "s", key: "file", value: nil)
        #expect(try ledger.runKey(scope: "s", key: "k") == .some("7"))
        #expect(try ledger.runKey(scope: "s", key: "file") == .some(nil))
        #expect(try ledger.runKey(scope: "other", key: "k") == nil)
        try ledger.flush()
        #expect(try ledger.runKey(scope: "s", key: "k") == .some("7"))
        #expect(try ledger.runKey(scope: "s", key: "file") == .some(nil))
        try ledger.resetRunKeys()
        #expect(try ledger.runKey(scope: "s", key: "k") == nil)
    }

    /// After a reset the ledger answers most lookups of keys never taken from its filter, without a query: every
    /// key taken is still found, committed or not, and one never taken is not.
    @Test func manyRunKeysAreFoundAfterAReset() throws {
        let folder = try scratchFolder("run-keys-many")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ledger = try Ledger(directory: folder, batchSize: 1000)
        try ledger.resetRunKeys()
        for index in 0..<5000 {
            ledger.takeRunKey(scope: index % 2 == 0 ? "names" : "seen", key: "key-\(index)", value: String(index))
            if index % 1000 == 999 { try ledger.flushIfDue() }
        }
        for index in 0..<5000 {
            #expect(try ledger.runKey(scope: index % 2 == 0 ? "names" : "seen", key: "key-\(index)") == .some(String(index)))
            // The same key in the other scope was never taken.
            #expect(try ledger.runKey(scope: index % 2 == 0 ? "seen" : "names", key: "key-\(index)") == nil)
        }
        #expect(try ledger.runKey(scope: "names", key: "key-5000") == nil)
        try ledger.resetRunKeys()
        #expect(try ledger.runKey(scope: "names", key: "key-0") == nil)
    }

    /// A batch writes its run keys up to 64 to a statement (64, 32, ... 1 rows): batches of every length keep each key,
    /// and a key taken again in the same batch keeps the value it was taken with last.
    @Test(arguments: [1, 2, 63, 64, 65, 127, 200])
    func runKeysOfABatchOfAnyLengthAreWrittenWithTheirLastValue(count: Int) throws {
        let folder = try scratchFolder("run-keys-batch")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ledger = try Ledger(directory: folder)
        try ledger.resetRunKeys()
        for index in 0..<count { ledger.takeRunKey(scope: "names", key: "key-\(index)", value: "first-\(index)") }
        for index in stride(from: 0, to: count, by: 7) {
            ledger.takeRunKey(scope: "names", key: "key-\(index)", value: "again-\(index)")
        }
        try ledger.flush()
        // Read from the table itself: after the commit nothing waits in memory.
        let database = try SQLiteDatabase(path: ledger.url.path)
        let rows = try database.prepare("SELECT key, value FROM run_keys WHERE scope = 'names'").rows { row in
            (row.text(0) ?? "", row.text(1) ?? "")
        }
        let values = Dictionary(rows, uniquingKeysWith: { first, _ in first })
        #expect(rows.count == count)
        for index in 0..<count {
            #expect(values["key-\(index)"] == (index % 7 == 0 ? "again-\(index)" : "first-\(index)"))
            #expect(try ledger.runKey(scope: "names", key: "key-\(index)") == .some(values["key-\(index)"]))
        }
    }

    /// Keys are told apart by their bytes, as SQLite tells them apart: a name spelled with a precomposed letter and
    /// the same name with a combining accent are two keys before their commit as after it (Swift's `==` takes them for
    /// one).
    @Test func runKeysOfTwoSpellingsOfOneNameAreTwoKeys() throws {
        let folder = try scratchFolder("run-keys-spellings")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ledger = try Ledger(directory: folder)
        try ledger.resetRunKeys()
        let precomposed = "caf\u{E9}.m4a"
        let combining = "cafe\u{301}.m4a"
        #expect(precomposed == combining)
        ledger.takeRunKey(scope: "names", key: precomposed, value: "1")
        ledger.takeRunKey(scope: "names", key: combining, value: "2")
        #expect(try ledger.runKey(scope: "names", key: precomposed) == .some("1"))
        #expect(try ledger.runKey(scope: "names", key: combining) == .some("2"))
        try ledger.flush()
        #expect(try ledger.runKey(scope: "names", key: precomposed) == .some("1"))
        #expect(try ledger.runKey(scope: "names", key: combining) == .some("2"))
    }

    /// Keys already in the table when the ledger is opened (no reset since) are found: the filter only answers for
    /// what it saw from a reset on.
    @Test func runKeysOnDiskBeforeAnyResetAreFound() throws {
        let folder = try scratchFolder("run-keys-before-reset")
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let earlier = try Ledger(directory: folder)
            try earlier.resetRunKeys()
            earlier.takeRunKey(scope: "names", key: "song.m4a", value: nil)
            try earlier.flush()
        }
        let ledger = try Ledger(directory: folder)
        #expect(try ledger.runKey(scope: "names", key: "song.m4a") == .some(nil))
        #expect(try ledger.runKey(scope: "names", key: "other.m4a") == nil)
    }

    @Test func runKeysALedgerCannotWriteStaySeen() throws {
        let folder = try scratchFolder("run-keys-refused")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ledger = try Ledger(directory: folder)
        ledger.takeRunKey(scope: "names", key: "/song.m4a", value: nil)
        // Another connection takes the table away: the batch cannot be written.
        try SQLiteDatabase(path: ledger.url.path).execute("DROP TABLE run_keys")
        #expect(throws: LedgerError.self) { try ledger.flush() }
        // The name is still taken, so it cannot be handed out twice.
        #expect(try ledger.runKey(scope: "names", key: "/song.m4a") == .some(nil))
    }

    /// A later run gives the same items in another order: each stored file's item gets its name back, and the
    /// others are numbered around the stored files; a stored file's directory keeps its spelling.
    @Test func storedNamesStayTheirItemsInAnyOrder() throws {
        let folder = try scratchFolder("names-stored")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ledger = try Ledger(directory: folder, batchSize: 2, batchAge: .zero)
        func key(_ id: String) -> LedgerKey { LedgerKey(source: "list", itemID: id, asset: .preview) }
        func plan(_ order: [(id: String, path: String)], store: Bool) throws -> [String: String] {
            try ledger.resetRunKeys()
            let reserver = PathReserver()
            try reserver.keep(in: ledger)
            var names: [String: String] = [:]
            for (id, path) in order {
                let name = try PathReserver.$planning.withValue(key(id)) {
                    try reserver.reserve(Self.components(path)).joined(separator: "/")
                }
                names[id] = name
                if store {
                    ledger.begin(key(id), title: id, url: URL(fileURLWithPath: "/x"))
                    ledger.stored(key(id), StoredRecord(location: name, size: 1, sha256: nil), plannedPath: name)
                }
                try ledger.flushIfDue()
            }
            try ledger.flush()
            return names
        }
        let first = try plan([("1", "Dup/Same.m4a"), ("2", "Dup/Same.m4a"), ("3", "dup/SAME.m4a")], store: true)
        #expect(first == ["1": "Dup/Same.m4a", "2": "Dup/Same (2).m4a", "3": "Dup/SAME (3).m4a"])
        // Reversed, with a new item first whose directory is spelled otherwise, and one that is not stored.
        let again = try plan(
            [("4", "DUP/Same.m4a"), ("3", "dup/SAME.m4a"), ("2", "Dup/Same.m4a"), ("1", "Dup/Same.m4a")],
            store: false)
        #expect(again == ["4": "Dup/Same (4).m4a", "3": "Dup/SAME (3).m4a", "2": "Dup/Same (2).m4a", "1": "Dup/Same.m4a"])
        // Without an item being planned (a sink used on its own), every stored name is taken.
        try ledger.resetRunKeys()
        let reserver = PathReserver()
        try reserver.keep(in: ledger)
        #expect(try reserver.reserve(["Dup", "Same.m4a"]) == ["Dup", "Same (4).m4a"])
        #expect(NameReserver.nameKey(of: ["Dup", "Same (2).m4a"]) == "/dup/same (2).m4a")
    }
}
