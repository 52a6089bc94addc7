import Foundation
import MediaFetchTesting
import Synchronization
import Testing

@testable import MediaFetchCore

/// A batch writes a whole download (begun, answered, stored) as one statement: the rows must come out
/// exactly as when every write is committed on its own.
@Suite("Ledger batches", .removesScratch)
struct LedgerTests {
    /// A fresh ledger in a folder of its own.
    static func ledger() throws -> Ledger {
        try Ledger(directory: scratchFolder("ledger"))
    }

    /// One write, chosen at random, for one of a few keys.
    enum Step {
        case begin(LedgerKey, title: String, url: URL)
        case responded(LedgerKey, Validator?, Int64?)
        case verified(LedgerKey, Int64, String?)
        case stored(LedgerKey, StoredRecord)
        case failed(LedgerKey, String, Int64)
        case paused(LedgerKey, Int64)

        func apply(to ledger: Ledger) {
            switch self {
            case .begin(let key, let title, let url): ledger.begin(key, title: title, url: url)
            case .responded(let key, let validator, let expected):
                ledger.responded(key, validator: validator, expectedBytes: expected)
            case .verified(let key, let size, let sha256): ledger.verified(key, size: size, sha256: sha256)
            case .stored(let key, let record): ledger.stored(key, record)
            case .failed(let key, let reason, let received): ledger.failed(key, reason: reason, receivedBytes: received)
            case .paused(let key, let received): ledger.paused(key, receivedBytes: received)
            }
        }
    }

    /// Mostly whole downloads (some verified first, as for an archive), interleaved across keys, with retries,
    /// failures and pauses mixed in.
    static func steps(seed: UInt64, count: Int) -> [Step] {
        var random = SplitMix64(seed: seed)
        let keys = (0..<6).map { LedgerKey(source: "urls", itemID: "item-\($0)", asset: .preview) }
        var steps: [Step] = []
        while steps.count < count {
            let key = keys.randomElement(using: &random) ?? keys[0]
            let n = Int.random(in: 0..<1000, using: &random)
            let validator: Validator? =
                switch n % 4 {
                case 0: nil
                case 1: Validator(etag: "\"e\(n)\"")
                case 2: Validator(lastModified: "Sun, 29 Nov 2026 20:\(n % 60):00 GMT")
                default: Validator(etag: "\"e\(n)\"", lastModified: "Sun, 29 Nov 2026 21:00:00 GMT")
                }
            switch Int.random(in: 0..<11, using: &random) {
            case 0..<5:
                // The common whole download, sometimes answered twice.
                steps.append(.begin(key, title: "Song \(n)", url: URL(string: "http://127.0.0.1/\(n).m4a")!))
                steps.append(.responded(key, validator, Int64(n * 10)))
                if n % 5 == 0 { steps.append(.responded(key, nil, nil)) }
                // An archive's download: verified, then stored when the archive is committed (or, cut off, never).
                if n % 3 == 0 { steps.append(.verified(key, Int64(n), n % 2 == 0 ? "ab\(n)" : nil)) }
                if n % 9 != 0 {
                    steps.append(
                        .stored(
                            key,
                            StoredRecord(
                                location: "Song \(n).m4a", size: Int64(n), sha256: n % 2 == 0 ? "ab\(n)" : nil)))
                }
            case 5: steps.append(.begin(key, title: "Song \(n)", url: URL(string: "http://127.0.0.1/\(n)")!))
            case 6: steps.append(.responded(key, validator, n % 3 == 0 ? nil : Int64(n)))
            case 7: steps.append(.stored(key, StoredRecord(location: "\(n).m4a", size: Int64(n), sha256: nil)))
            case 8: steps.append(.failed(key, "failed \(n)", Int64(n)))
            case 9: steps.append(.verified(key, Int64(n), nil))
            default: steps.append(.paused(key, Int64(n)))
            }
        }
        return steps
    }

    /// The rows, without the time of their last write.
    static func rows(_ ledger: Ledger) throws -> [LedgerEntry] {
        try ledger.entries().map { entry in
            var entry = entry
            entry.updatedAt = Date(timeIntervalSince1970: 0)
            return entry
        }
    }

    @Test(arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func batchedWritesLeaveTheRowsThatSingleWritesLeave(seed: UInt64) throws {
        let single = try Self.ledger()
        let batched = try Self.ledger()
        let steps = Self.steps(seed: seed, count: 120)
        for (index, step) in steps.enumerated() {
            step.apply(to: single)
            try single.flush()
            step.apply(to: batched)
            // Batches of varied length, so that downloads are cut at every point.
            if index % (Int(seed) + 4) == 0 { try batched.flush() }
        }
        let expected = try Self.rows(single)
        #expect(expected.count == 6)
        #expect(try Self.rows(batched) == expected)
    }

    @Test func aWholeDownloadInOneBatchIsRecordedStored() throws {
        let ledger = try Self.ledger()
        let key = LedgerKey(source: "urls", itemID: "1", asset: .preview)
        let url = URL(string: "http://127.0.0.1/1.m4a")!
        for attempt in 1...2 {
            ledger.begin(key, title: "One", url: url)
            ledger.responded(key, validator: Validator(etag: "\"v\(attempt)\""), expectedBytes: 99)
            ledger.stored(key, StoredRecord(location: "One.m4a", size: 100, sha256: nil))
            try ledger.flush()
        }
        let entry = try #require(try ledger.entry(key))
        #expect(entry.status == .stored)
        // Attempts count the latest run's tries: that run stored it at its first.
        #expect(entry.attempts == 1)
        #expect(entry.validator == Validator(etag: "\"v2\""))
        #expect(entry.expectedBytes == 100)
        #expect(entry.receivedBytes == 100)
        #expect(entry.location == "One.m4a")
        #expect(entry.title == "One")
        #expect(entry.url == url.absoluteString)
    }

    /// `mediafetch status` walks the ledger a page at a time: every entry once, in key order across sources and
    /// pages, or only one status's; the counts by status match; a body that says stop ends the walk.
    @Test func walksEveryEntryAPageAtATimeAndCountsByStatus() throws {
        let ledger = try Self.ledger()
        let url = URL(string: "http://127.0.0.1/a.m4a")!
        var keys: [LedgerKey] = []
        for source in ["b-src", "a-src"] {
            for index in 0..<700 {
                let key = LedgerKey(source: source, itemID: String(format: "%04d", index), asset: .preview)
                keys.append(key)
                ledger.begin(key, title: "t", url: url)
                if index % 7 == 0 {
                    ledger.failed(key, reason: "404", receivedBytes: 0)
                } else {
                    ledger.stored(key, StoredRecord(location: "\(source)/\(index)", size: 1, sha256: nil))
                }
            }
        }
        try ledger.flush()
        let sorted = keys.sorted { ($0.source, $0.itemID) < ($1.source, $1.itemID) }
        var walked: [LedgerKey] = []
        try ledger.forEachEntry { walked.append($0.key); return true }
        #expect(walked == sorted)
        var failed: [LedgerKey] = []
        try ledger.forEachEntry(status: .failed) { failed.append($0.key); return true }
        #expect(failed == sorted.filter { Int($0.itemID)! % 7 == 0 })
        #expect(try ledger.statusCounts() == [.failed: 200, .stored: 1200])
        var seen = 0
        try ledger.forEachEntry { _ in seen += 1; return seen < 600 }
        #expect(seen == 600)
    }

    @Test func recordingNeverWaitsForABatchBeingWritten() throws {
        let ledger = try Self.ledger()
        let key = LedgerKey(source: "urls", itemID: "held", asset: .preview)
        let url = URL(string: "http://127.0.0.1/held.m4a")!
        // While the connection is held (as a commit holds it), another thread records an answer and finds a
        // batch due, as a curl engine's thread does: it must neither wait nor fail.
        let done = DispatchSemaphore(value: 0)
        let waited = ledger.whileHoldingTheConnection {
            Thread.detachNewThread {
                ledger.begin(key, title: "Held", url: url)
                for _ in 0..<300 { ledger.responded(key, validator: nil, expectedBytes: 1) }
                try? ledger.flushIfDue()
                done.signal()
            }
            // Generous: the writes take microseconds; only a thread stuck on the lock takes this long.
            return done.wait(timeout: .now() + 30)
        }
        if waited == .timedOut { done.wait() }
        #expect(waited == .success)
        #expect(try ledger.entry(key)?.status == .partial)
    }

    @Test func aFirstRunsLookupsNeedNeitherTheConnectionNorAQueryAndMissNothing() throws {
        let folder = try scratchFolder("ledger")
        let url = URL(string: "http://127.0.0.1/a.m4a")!
        let earlier = LedgerKey(source: "urls", itemID: "earlier", asset: .preview)
        do {
            let ledger = try Ledger(directory: folder)
            ledger.begin(earlier, title: "Earlier", url: url)
            ledger.stored(earlier, StoredRecord(location: "earlier.m4a", size: 1, sha256: nil))
            try ledger.flush()
        }
        let ledger = try Ledger(directory: folder)
        // What an earlier run left is found: a source with entries on disk is looked up a query an item.
        #expect(try ledger.committedEntry(earlier)?.status == .stored)
        #expect(try ledger.committedEntry(LedgerKey(source: "urls", itemID: "earlier", asset: .artwork)) == nil)
        // Written by this run, then committed: found.
        let later = LedgerKey(source: "urls", itemID: "later", asset: .preview)
        ledger.begin(later, title: "Later", url: url)
        #expect(try ledger.committedEntry(later) == nil)
        try ledger.flush()
        #expect(try ledger.committedEntry(later)?.status == .pending)
        // A source without entries (a first run's): its first lookup finds that out under the connection; after
        // it, a lookup of an item this ledger never wrote answers at once, even while another thread holds the
        // connection (as the commit of a batch does).
        let fresh = LedgerKey(source: "other", itemID: "new", asset: .preview)
        #expect(try ledger.committedEntry(fresh) == nil)
        let done = DispatchSemaphore(value: 0)
        let answers = Mutex<[Result<LedgerEntry?, any Error>]>([])
        let waited = ledger.whileHoldingTheConnection {
            Thread.detachNewThread {
                for index in 0..<1000 {
                    let key = LedgerKey(source: "other", itemID: "\(index)", asset: .preview)
                    let answer = Result { try ledger.committedEntry(key) }
                    answers.withLock { $0.append(answer) }
                }
                done.signal()
            }
            // Generous: the lookups take microseconds; only a thread stuck on the lock takes this long.
            return done.wait(timeout: .now() + 30)
        }
        if waited == .timedOut { done.wait() }
        #expect(waited == .success)
        #expect(answers.withLock { $0.count == 1000 && $0.allSatisfy { (try? $0.get()) == .some(nil) } })
        // And one of them, written and committed now, is found.
        let written = LedgerKey(source: "other", itemID: "7", asset: .preview)
        ledger.begin(written, title: "Seven", url: url)
        ledger.failed(written, reason: "404", receivedBytes: 0)
        try ledger.flush()
        #expect(try ledger.committedEntry(written)?.status == .failed)
        // A write queued before its source's first lookup, committed after it, is found.
        let queuedFirst = LedgerKey(source: "third", itemID: "early", asset: .preview)
        ledger.begin(queuedFirst, title: "Early", url: url)
        #expect(try ledger.committedEntry(LedgerKey(source: "third", itemID: "none", asset: .preview)) == nil)
        try ledger.flush()
        #expect(try ledger.committedEntry(queuedFirst)?.status == .pending)
    }

    @Test func writesABatchCouldNotCommitWaitForTheNextCommit() throws {
        let ledger = try Self.ledger()
        let key = LedgerKey(source: "urls", itemID: "kept", asset: .preview)
        ledger.begin(key, title: "Kept", url: URL(string: "http://127.0.0.1/kept.m4a")!)
        ledger.stored(key, StoredRecord(location: "kept.m4a", size: 3, sha256: nil))
        // Another connection takes the table away for a moment: the batch cannot be written.
        let other = try SQLiteDatabase(path: ledger.url.path)
        try other.execute("ALTER TABLE items RENAME TO items_away")
        #expect(throws: LedgerError.self) { try ledger.flush() }
        try other.execute("ALTER TABLE items_away RENAME TO items")
        try ledger.flush()
        let entry = try ledger.entry(key)
        #expect(entry?.status == .stored)
        #expect(entry?.location == "kept.m4a")
    }

    @Test func anIDWithANULIsKeptWholeNotCutAtIt() throws {
        let folder = try scratchFolder("ledger")
        let whole = LedgerKey(source: "exec", itemID: "x\u{0}y", asset: .preview)
        do {
            let ledger = try Ledger(directory: folder)
            ledger.begin(whole, title: "Nul\u{0}title", url: URL(string: "http://127.0.0.1/n.m4a")!)
            try ledger.flush()
        }
        let ledger = try Ledger(directory: folder)
        let entry = try ledger.committedEntry(whole)
        #expect(entry?.key == whole)
        #expect(entry?.title == "Nul\u{0}title")
        #expect(try ledger.committedEntry(LedgerKey(source: "exec", itemID: "x", asset: .preview)) == nil)
    }

    /// Texts are bound from a buffer each statement keeps and grows, which SQLite reads in place: every text of a
    /// batch comes back whole, long ones (past the buffer's first size) and empty ones, beside short ones written after
    /// them by the same statement.
    @Test func textsOfEveryLengthComeBackWhole() throws {
        let ledger = try Self.ledger()
        let url = URL(string: "http://127.0.0.1/long.m4a")!
        let long = String(repeating: "Lange Nacht \u{0} \u{1F3B5} ", count: 400)
        let titles = ["", long, "short", String(long.prefix(300)), "x"]
        let keys = titles.indices.map { LedgerKey(source: "urls", itemID: "item-\($0)", asset: .preview) }
        for (key, title) in zip(keys, titles) {
            ledger.begin(key, title: title, url: url)
            ledger.failed(key, reason: title + "!", receivedBytes: 0)
        }
        try ledger.flush()
        for (key, title) in zip(keys, titles) {
            let entry = try #require(try ledger.entry(key))
            #expect(entry.title == title)
            #expect(entry.reason == title + "!")
            #expect(entry.url == url.absoluteString)
        }
    }

    /// Item ids are told apart by their bytes, as SQLite tells them apart: two spellings of one accented id (Swift's
    /// `==` takes them for one) are two rows, each with its own writes, in one batch as in two.
    @Test func twoSpellingsOfOneIDAreTwoEntries() throws {
        let ledger = try Self.ledger()
        let precomposed = LedgerKey(source: "exec", itemID: "caf\u{E9}", asset: .preview)
        let combining = LedgerKey(source: "exec", itemID: "cafe\u{301}", asset: .preview)
        #expect(precomposed == combining)
        let url = URL(string: "http://127.0.0.1/cafe.m4a")!
        ledger.begin(precomposed, title: "One", url: url)
        ledger.begin(combining, title: "Two", url: url)
        ledger.responded(precomposed, validator: Validator(etag: "\"1\""), expectedBytes: 1)
        ledger.responded(combining, validator: Validator(etag: "\"2\""), expectedBytes: 2)
        ledger.stored(precomposed, StoredRecord(location: "one.m4a", size: 1, sha256: nil))
        try ledger.flush()
        let entries = try ledger.entries()
        #expect(entries.count == 2)
        func entry(_ key: LedgerKey) -> LedgerEntry? {
            entries.first { $0.key.itemID.unicodeScalars.elementsEqual(key.itemID.unicodeScalars) }
        }
        let one = try #require(entry(precomposed))
        let two = try #require(entry(combining))
        #expect(one.title == "One")
        #expect(one.status == .stored)
        #expect(one.validator == Validator(etag: "\"1\""))
        #expect(two.title == "Two")
        #expect(two.status == .partial)
        #expect(two.validator == Validator(etag: "\"2\""))
    }

    /// A stored file's name, as later runs see it: taken for every item but its own, its directories with their
    /// spelling; rows from before names were kept (schema 6) hold none.
    @Test func storedNamesAreTakenForOtherItems() throws {
        let (folder, _) = try Self.oldLedger(
            version: Ledger.migrations.count - 1,
            row: "INSERT INTO items (source, item_id, asset, url, status, location, updated_at) "
                + "VALUES ('urls', 'old', 'preview', 'http://127.0.0.1/old', 'stored', 'Old/x.m4a', 0)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let ledger = try Ledger(directory: folder)
        let mine = LedgerKey(source: "urls", itemID: "1", asset: .preview)
        let other = LedgerKey(source: "urls", itemID: "2", asset: .preview)
        try ledger.resetRunKeys()
        #expect(try ledger.storedName("/old/x.m4a", except: other) == nil)
        ledger.begin(mine, title: "t", url: URL(fileURLWithPath: "/1"))
        ledger.stored(mine, StoredRecord(location: "s3://b/Ab/Cd/Song.m4a", size: 1, sha256: nil), plannedPath: "Ab/Cd/Song.m4a")
        try ledger.flush()
        try ledger.resetRunKeys()
        #expect(try ledger.storedName("/ab/cd/song.m4a", except: other) == TakenName(directory: nil))
        #expect(try ledger.storedName("/ab/cd/song.m4a", except: nil) == TakenName(directory: nil))
        #expect(try ledger.storedName("/ab/cd/song.m4a", except: mine) == nil)
        #expect(try ledger.storedName("/ab", except: other) == TakenName(directory: "Ab"))
        #expect(try ledger.storedName("/ab/cd", except: mine) == TakenName(directory: "Cd"))
        #expect(try ledger.storedName("/ab/c", except: other) == nil)
        #expect(try ledger.storedName("/a", except: other) == nil)
        // A new download of the item keeps its name: another item must not take it while the file may be there.
        ledger.begin(mine, title: "t", url: URL(fileURLWithPath: "/1"))
        ledger.failed(mine, reason: "gone", receivedBytes: 0)
        try ledger.flush()
        #expect(try ledger.storedName("/ab/cd/song.m4a", except: other) == TakenName(directory: nil))
    }

    /// A folder holding a ledger left at schema `version`, with `row` inserted; the ledger's path comes along.
    static func oldLedger(version: Int, row: String) throws -> (folder: URL, path: String) {
        let folder = try scratchFolder("ledger")
        let path = folder.appendingPathComponent(Ledger.fileName).path
        let old = try SQLiteDatabase(path: path)
        for migration in Ledger.migrations.prefix(version) { try old.execute(migration) }
        try old.execute("PRAGMA user_version = \(version)")
        try old.execute(row)
        return (folder, path)
    }

    @Test func aLedgerOfTheFirstSchemaIsMigratedWithItsRows() throws {
        let (folder, path) = try Self.oldLedger(
            version: 1,
            row: "INSERT INTO items (source, item_id, asset, url, status, updated_at) "
                + "VALUES ('urls', '7', 'preview', 'http://127.0.0.1/7', 'stored', 0)")
        let ledger = try Ledger(directory: folder)
        #expect(try ledger.entry(LedgerKey(source: "urls", itemID: "7", asset: .preview))?.status == .stored)
        let database = try SQLiteDatabase(path: path)
        #expect(try database.userVersion == Ledger.migrations.count)
        let indexes = try database.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND name = ?")
            .rows([.text("items_by_status")]) { $0.text(0) }
        #expect(indexes.isEmpty)
        // The rebuilt table still refuses a status the ledger does not know, with a check SQLite evaluates
        // without an ephemeral index (what made schema 3).
        #expect(throws: LedgerError.self) {
            try database.execute(
                "INSERT INTO items (source, item_id, asset, url, status, updated_at) "
                    + "VALUES ('urls', '8', 'preview', 'http://127.0.0.1/8', 'bogus', 0)")
        }
        let schema = try database.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'items'")
            .rows { $0.text(0) ?? "" }
        #expect(schema.count == 1 && schema.allSatisfy { $0.contains("status = 'failed'") && !$0.contains(" IN (") })
        let plan = try database.prepare(
            "EXPLAIN INSERT INTO items (source, item_id, asset, url, status, updated_at) VALUES (?, ?, ?, ?, 'pending', 0) "
                + "ON CONFLICT (source, item_id, asset) DO UPDATE SET status = 'stored'"
        ).rows { $0.text(1) ?? "" }
        #expect(!plan.isEmpty && !plan.contains("OpenEphemeral"))
    }

    /// A ledger at schema 2 or 3 with every column set comes through the rebuilds of schemas 3 and 4 column for
    /// column.
    @Test(arguments: [2, 3])
    func aFullRowOfAnOlderSchemaSurvivesTheRebuilds(version: Int) throws {
        let (folder, _) = try Self.oldLedger(
            version: version,
            row: """
                INSERT INTO items (source, item_id, asset, title, url, etag, last_modified, expected_bytes,
                    received_bytes, sha256, status, reason, attempts, location, updated_at)
                VALUES ('itunes', '42', 'artwork', 'Title', 'http://127.0.0.1/42.jpg', '"e42"',
                    'Sun, 29 Nov 2026 20:00:00 GMT', 4242, 4141, 'ab42', 'failed', 'a reason', 7, 'A/B.jpg', 1234.5)
                """)
        let entry = try #require(
            try Ledger(directory: folder).entry(LedgerKey(source: "itunes", itemID: "42", asset: .artwork)))
        #expect(entry.title == "Title")
        #expect(entry.url == "http://127.0.0.1/42.jpg")
        #expect(entry.validator == Validator(etag: "\"e42\"", lastModified: "Sun, 29 Nov 2026 20:00:00 GMT"))
        #expect(entry.expectedBytes == 4242)
        #expect(entry.receivedBytes == 4141)
        #expect(entry.sha256 == "ab42")
        #expect(entry.status == .failed)
        #expect(entry.reason == "a reason")
        #expect(entry.attempts == 7)
        #expect(entry.location == "A/B.jpg")
        #expect(entry.updatedAt == Date(timeIntervalSince1970: 1234.5))
    }

    /// Schema 4's status: a migrated ledger takes it, and a new download of the item puts it back to pending.
    @Test func aMigratedLedgerRecordsAVerifiedFileUntilItIsFetchedAgain() throws {
        let (folder, _) = try Self.oldLedger(
            version: 3,
            row: "INSERT INTO items (source, item_id, asset, url, status, updated_at) "
                + "VALUES ('itunes', '9', 'preview', 'http://127.0.0.1/9.m4a', 'partial', 0)")
        let ledger = try Ledger(directory: folder)
        let key = LedgerKey(source: "itunes", itemID: "9", asset: .preview)
        ledger.verified(key, size: 900, sha256: "cd9")
        let verified = try #require(try ledger.entry(key))
        #expect(verified.status == .verified)
        #expect(verified.receivedBytes == 900)
        #expect(verified.expectedBytes == 900)
        #expect(verified.sha256 == "cd9")
        // Not stored yet: nothing for a sink to keep.
        #expect(verified.storedRecord == nil)
        ledger.paused(key, receivedBytes: 10)
        #expect(try ledger.entry(key)?.status == .verified)
        ledger.begin(key, title: "Nine", url: URL(string: "http://127.0.0.1/9.m4a")!)
        #expect(try ledger.entry(key)?.status == .pending)
    }

    /// Each shape a batch merges, over a row that knows a validator and a size and over no row at all (where an
    /// answer alone updates nothing), with an answer that brings neither: the merged statement must clear what
    /// the separate writes clear.
    @Test(
        arguments: [
            "begun, answered", "answered, stored", "begun, answered, stored", "answered, verified",
            "begun, answered, verified",
        ], [true, false])
    func mergedShapesWithoutAValidatorLeaveTheRowsSingleWritesLeave(shape: String, rowExists: Bool) throws {
        let single = try Self.ledger()
        let batched = try Self.ledger()
        let key = LedgerKey(source: "urls", itemID: "x", asset: .preview)
        let url = URL(string: "http://127.0.0.1/x.m4a")!
        var steps: [Step] = []
        if rowExists {
            steps += [
                .begin(key, title: "Old", url: URL(string: "http://127.0.0.1/old.m4a")!),
                .responded(key, Validator(etag: "\"old\"", lastModified: "Sat, 28 Nov 2026 10:00:00 GMT"), 1234),
                .paused(key, 600),
            ]
        }
        let prepared = steps.count
        if shape.hasPrefix("begun") { steps.append(.begin(key, title: "New", url: url)) }
        steps.append(.responded(key, nil, nil))
        if shape.hasSuffix("stored") {
            steps.append(.stored(key, StoredRecord(location: "New.m4a", size: 99, sha256: nil)))
        }
        if shape.hasSuffix("verified") { steps.append(.verified(key, 99, "ef99")) }

        for (index, step) in steps.enumerated() {
            step.apply(to: single)
            try single.flush()
            step.apply(to: batched)
            if index == prepared - 1 { try batched.flush() }
        }
        try batched.flush()
        #expect(try Self.rows(batched) == Self.rows(single))
    }
}
