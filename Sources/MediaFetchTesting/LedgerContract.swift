import Foundation
import MediaFetchCore
import Synchronization

/// What every ``RunLedger`` must do, as a suite anyone can run on their own ledger: SQLite's ``Ledger`` and the
/// PostgreSQL ledger pass it through this same function.
///
/// ```swift
/// @Test func myLedgerKeepsTheContract() throws {
///     try LedgerContract.run { place in try MyLedger(name: place) }
/// }
/// ```
///
/// Each clause asks `open` for a ledger at a place of its own (a fresh name); opening the same place again must
/// give a ledger over the same rows (the next run). Throws a ``ContractFailure`` naming each clause that did not
/// hold and why, once all have run.
public enum LedgerContract {
    /// One promise of the ``RunLedger`` protocol, checked on its own.
    public struct Clause: Sendable, Hashable, CustomStringConvertible {
        public let name: String
        fileprivate let run: @Sendable (Context) throws -> Void

        fileprivate init(_ name: String, _ run: @escaping @Sendable (Context) throws -> Void) {
            self.name = name
            self.run = run
        }

        public var description: String { name }
        public static func == (lhs: Clause, rhs: Clause) -> Bool { lhs.name == rhs.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }

        /// Every clause, in order.
        public static var all: [Clause] {
            [
                wholeDownload, readsSeeQueuedWrites, beginAgainFetchesAgain, pauseKeepsStored, retriesAndFailures,
                listings, statusCounts, survivesReopening, forgetPartials, removeAll, sourceValues, concurrentWriters,
                batchingChangesNothing, committedAndWalked, runKeys,
            ]
        }
    }

    /// Runs `clauses` (every one, by default) on ledgers opened by `open`.
    /// - Parameter open: opens the ledger at a place (a name unique to the clause); the same place twice is the same
    ///   ledger's rows.
    /// - Throws: ``ContractFailure`` listing every clause that did not hold.
    public static func run(
        clauses: [Clause] = Clause.all, open: @escaping @Sendable (_ place: String) throws -> any RunLedger
    ) throws {
        var broken: [ContractFailure.Broken] = []
        let prefix = "contract-\(UUID().uuidString.prefix(8).lowercased())"
        for clause in clauses {
            let context = Context(place: "\(prefix)-\(clause.name)", open: open)
            do {
                try clause.run(context)
            } catch {
                broken.append(ContractFailure.Broken(clause: clause.name, reason: String(describing: error)))
            }
        }
        if !broken.isEmpty { throw ContractFailure(suite: "LedgerContract", broken: broken) }
    }

    struct Context: Sendable {
        let place: String
        let open: @Sendable (String) throws -> any RunLedger

        func ledger() throws -> any RunLedger { try open(place) }
    }

    struct Broken: Error, CustomStringConvertible {
        var description: String
    }

    static func expect(_ condition: Bool, _ message: @autoclosure () -> String) throws {
        if !condition { throw Broken(description: message()) }
    }

    static func key(_ id: String, source: String = "src", asset: AssetKind = .preview) -> LedgerKey {
        LedgerKey(source: source, itemID: id, asset: asset)
    }

    static let url = URL(string: "http://127.0.0.1:1/file.m4a")!

    /// Begun, answered and stored: the row says stored with the record, the validator and one attempt.
    static let wholeDownload = Clause("a whole download is recorded stored") { context in
        let ledger = try context.ledger()
        let item = key("1")
        ledger.begin(item, title: "Song é", url: url)
        ledger.responded(item, validator: Validator(etag: "\"v1\"", lastModified: nil), expectedBytes: 10)
        ledger.stored(item, StoredRecord(location: "a/b.m4a", size: 10, sha256: "ab"))
        try ledger.flush()
        let entry = try ledger.entry(item)
        try expect(entry?.status == .stored, "status \(String(describing: entry?.status)), not stored")
        try expect(
            entry?.storedRecord == StoredRecord(location: "a/b.m4a", size: 10, sha256: "ab"),
            "record \(String(describing: entry?.storedRecord))")
        try expect(entry?.validator?.etag == "\"v1\"", "validator \(String(describing: entry?.validator))")
        try expect(entry?.title == "Song é" && entry?.url == url.absoluteString, "title or URL changed")
        try expect(entry?.attempts == 1, "attempts \(String(describing: entry?.attempts)), not 1")
        try expect(try ledger.entry(key("other")) == nil, "an asset never written has an entry")
    }

    static let readsSeeQueuedWrites = Clause("reads see writes not yet flushed") { context in
        let ledger = try context.ledger()
        ledger.begin(key("1"), title: "t", url: url)
        ledger.responded(key("1"), validator: nil, expectedBytes: 5)
        let entry = try ledger.entry(key("1"))
        try expect(entry?.status == .partial, "status \(String(describing: entry?.status)), not partial")
        try expect(entry?.expectedBytes == 5, "expected bytes \(String(describing: entry?.expectedBytes))")
    }

    static let beginAgainFetchesAgain = Clause("begin makes a stored or verified asset pending") { context in
        let ledger = try context.ledger()
        for (id, verified) in [("s", false), ("v", true)] {
            ledger.begin(key(id), title: "t", url: url)
            ledger.responded(key(id), validator: nil, expectedBytes: 3)
            if verified {
                ledger.verified(key(id), size: 3, sha256: nil)
            } else {
                ledger.stored(key(id), StoredRecord(location: "x", size: 3, sha256: nil))
            }
            try ledger.flush()
            ledger.begin(key(id), title: "t", url: url)
            let status = try ledger.entry(key(id))?.status
            try expect(status == .pending, "\(id): status \(String(describing: status)) after begin, not pending")
        }
    }

    static let pauseKeepsStored = Clause("a pause never changes a stored or verified row") { context in
        let ledger = try context.ledger()
        ledger.begin(key("s"), title: "t", url: url)
        ledger.responded(key("s"), validator: nil, expectedBytes: 3)
        ledger.stored(key("s"), StoredRecord(location: "x", size: 3, sha256: nil))
        ledger.begin(key("v"), title: "t", url: url)
        ledger.responded(key("v"), validator: nil, expectedBytes: 3)
        ledger.verified(key("v"), size: 3, sha256: "cd")
        ledger.begin(key("p"), title: "t", url: url)
        ledger.responded(key("p"), validator: nil, expectedBytes: 9)
        try ledger.flush()
        for id in ["s", "v", "p"] { ledger.paused(key(id), receivedBytes: 1) }
        try expect(try ledger.entry(key("s"))?.status == .stored, "a pause changed a stored row")
        try expect(try ledger.entry(key("v"))?.status == .verified, "a pause changed a verified row")
        let paused = try ledger.entry(key("p"))
        try expect(
            paused?.status == .partial && paused?.receivedBytes == 1,
            "paused row: \(String(describing: paused?.status)) with \(String(describing: paused?.receivedBytes))")
    }

    static let retriesAndFailures = Clause("retries count attempts; a failure keeps its reason") { context in
        let ledger = try context.ledger()
        ledger.begin(key("1"), title: "t", url: url)
        ledger.retrying(key("1"))
        ledger.retrying(key("1"))
        ledger.failed(key("1"), reason: "503 (after 3 attempts)", receivedBytes: 7)
        let entry = try ledger.entry(key("1"))
        try expect(entry?.status == .failed, "status \(String(describing: entry?.status)), not failed")
        try expect(entry?.attempts == 3, "attempts \(String(describing: entry?.attempts)), not 3")
        try expect(entry?.reason == "503 (after 3 attempts)", "reason \(String(describing: entry?.reason))")
        try expect(entry?.receivedBytes == 7, "received \(String(describing: entry?.receivedBytes)), not 7")
    }

    static let listings = Clause("entries are listed by key, and by source") { context in
        let ledger = try context.ledger()
        let keys = [
            key("b"), key("a", asset: .artwork), key("a"), key("z", source: "other"), key("c", source: "aaa"),
        ]
        for item in keys { ledger.begin(item, title: item.itemID, url: url) }
        let listed = try ledger.entries().map(\.key)
        let sorted = keys.sorted {
            ($0.source, $0.itemID, $0.asset.rawValue) < ($1.source, $1.itemID, $1.asset.rawValue)
        }
        try expect(listed == sorted, "entries() listed \(listed), not \(sorted)")
        let bySource = try ledger.entries(source: "src")
        try expect(
            Set(bySource.keys) == Set([key("b"), key("a", asset: .artwork), key("a")]),
            "entries(source:) gave \(bySource.keys.sorted { $0.description < $1.description })")
    }

    static let statusCounts = Clause("statusCounts counts each status, queued writes included") { context in
        let ledger = try context.ledger()
        ledger.begin(key("pending"), title: "t", url: url)
        ledger.begin(key("partial"), title: "t", url: url)
        ledger.responded(key("partial"), validator: nil, expectedBytes: 9)
        ledger.paused(key("partial"), receivedBytes: 2)
        ledger.begin(key("verified"), title: "t", url: url)
        ledger.verified(key("verified"), size: 3, sha256: nil)
        ledger.begin(key("stored"), title: "t", url: url)
        ledger.stored(key("stored"), StoredRecord(location: "s", size: 3, sha256: nil))
        ledger.begin(key("failed", source: "other"), title: "t", url: url)
        ledger.failed(key("failed", source: "other"), reason: "404", receivedBytes: 0)
        try ledger.flush()
        // Queued and not flushed: a count commits first, as every read does.
        ledger.begin(key("stored 2"), title: "t", url: url)
        ledger.stored(key("stored 2"), StoredRecord(location: "s2", size: 3, sha256: nil))
        // A status without an entry may be left out or counted 0.
        let counts = try ledger.statusCounts().filter { $0.value != 0 }
        let expected: [LedgerStatus: Int] = [.pending: 1, .partial: 1, .verified: 1, .stored: 2, .failed: 1]
        let shown = LedgerStatus.allCases.map { "\(counts[$0] ?? 0) \($0)" }.joined(separator: ", ")
        try expect(
            counts == expected,
            "statusCounts() gave \(shown), not 1 pending, 1 partial, 1 verified, 2 stored, 1 failed")
    }

    static let survivesReopening = Clause("what was flushed is there when the ledger is opened again") { context in
        do {
            let ledger = try context.ledger()
            ledger.begin(key("1"), title: "t", url: url)
            ledger.responded(key("1"), validator: Validator(etag: nil, lastModified: "Mon"), expectedBytes: 4)
            ledger.paused(key("1"), receivedBytes: 2)
            try ledger.flush()
        }
        let again = try context.ledger()
        let entry = try again.entry(key("1"))
        try expect(
            entry?.status == .partial && entry?.receivedBytes == 2 && entry?.validator?.lastModified == "Mon",
            "reopened: \(String(describing: entry))")
    }

    static let forgetPartials = Clause("forgetPartials sends partial and verified rows back to pending") { context in
        let ledger = try context.ledger()
        ledger.begin(key("p"), title: "t", url: url)
        ledger.responded(key("p"), validator: nil, expectedBytes: 9)
        ledger.paused(key("p"), receivedBytes: 4)
        ledger.begin(key("v"), title: "t", url: url)
        ledger.verified(key("v"), size: 3, sha256: nil)
        ledger.begin(key("s"), title: "t", url: url)
        ledger.stored(key("s"), StoredRecord(location: "x", size: 3, sha256: nil))
        try ledger.forgetPartials()
        for id in ["p", "v"] {
            let entry = try ledger.entry(key(id))
            try expect(
                entry?.status == .pending && entry?.receivedBytes == 0, "\(id) after forgetPartials: \(String(describing: entry))")
        }
        try expect(try ledger.entry(key("s"))?.status == .stored, "forgetPartials touched a stored row")
    }

    static let removeAll = Clause("removeAll forgets rows and source values") { context in
        let ledger = try context.ledger()
        ledger.begin(key("1"), title: "t", url: url)
        try ledger.setSourceValues(source: "src", [("k", Data("v".utf8))])
        try ledger.removeAll()
        try expect(try ledger.entries().isEmpty, "rows left after removeAll")
        try expect(try ledger.sourceValue(source: "src", key: "k") == nil, "a source value left after removeAll")
    }

    static let sourceValues = Clause("source values are kept, replaced and removed") { context in
        let ledger = try context.ledger()
        let big = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        try ledger.setSourceValues(source: "feed", [("etag", Data("\"x\"".utf8)), ("body", big), ("empty", Data())])
        try expect(try ledger.sourceValue(source: "feed", key: "etag") == Data("\"x\"".utf8), "etag not read back")
        try expect(try ledger.sourceValue(source: "feed", key: "body") == big, "a 1 MiB value not read back whole")
        try expect(try ledger.sourceValue(source: "feed", key: "empty") == Data(), "an empty value is not empty")
        try expect(try ledger.sourceValue(source: "other", key: "etag") == nil, "a value leaked to another source")
        try ledger.setSourceValues(source: "feed", [("etag", Data("\"y\"".utf8)), ("body", nil)])
        try expect(try ledger.sourceValue(source: "feed", key: "etag") == Data("\"y\"".utf8), "etag not replaced")
        try expect(try ledger.sourceValue(source: "feed", key: "body") == nil, "a nil value did not remove its key")
    }

    static let concurrentWriters = Clause("writes from eight threads at once all land") { context in
        let ledger = try context.ledger()
        let group = DispatchGroup()
        let failures = Mutex<[String]>([])
        for thread in 0..<8 {
            group.enter()
            Thread {
                for index in 0..<50 {
                    let item = key("\(thread)-\(index)")
                    ledger.begin(item, title: "t", url: url)
                    ledger.responded(item, validator: nil, expectedBytes: Int64(index))
                    ledger.stored(item, StoredRecord(location: "\(thread)/\(index)", size: Int64(index), sha256: nil))
                    do { try ledger.flushIfDue() } catch { failures.withLock { $0.append("\(error)") } }
                }
                group.leave()
            }.start()
        }
        group.wait()
        try ledger.flush()
        try expect(failures.withLock { $0 }.isEmpty, "flushIfDue failed: \(failures.withLock { $0 })")
        let entries = try ledger.entries()
        try expect(entries.count == 400, "\(entries.count) rows, not 400")
        try expect(entries.allSatisfy { $0.status == .stored }, "not every row stored")
    }

    static let committedAndWalked = Clause("committedEntry sees only what is committed; a walk sees every row") {
        context in
        let ledger = try context.ledger()
        ledger.begin(key("q"), title: "t", url: url)
        try expect(try ledger.committedEntry(key("q")) == nil, "committedEntry saw a queued write")
        try ledger.flush()
        try expect(try ledger.committedEntry(key("q"))?.status == .pending, "committedEntry missed a flushed row")
        for index in 0..<1_100 {
            let item = key(String(format: "%05d", index))
            ledger.begin(item, title: "t", url: url)
            if index % 2 == 0 { ledger.stored(item, StoredRecord(location: "l\(index)", size: 1, sha256: nil)) }
        }
        var walked: [String] = []
        try ledger.forEachEntry(source: "src", status: .stored) { walked.append($0.key.itemID) }
        let expected = stride(from: 0, to: 1_100, by: 2).map { String(format: "%05d", $0) }
        try expect(walked == expected, "the walk saw \(walked.count) stored rows in order, not \(expected.count)")
    }

    static let runKeys = Clause("run keys are seen at once, kept, and forgotten by a reset") { context in
        let ledger = try context.ledger()
        try expect(try ledger.runKey(scope: "names", key: "a") == nil, "a key not taken is taken")
        ledger.takeRunKey(scope: "names", key: "a", value: "A.m4a")
        ledger.takeRunKey(scope: "names", key: "b", value: nil)
        try expect(try ledger.runKey(scope: "names", key: "a") == .some("A.m4a"), "a queued key not seen")
        try ledger.flush()
        try expect(try ledger.runKey(scope: "names", key: "a") == .some("A.m4a"), "a flushed key not seen")
        try expect(try ledger.runKey(scope: "names", key: "b") == .some(nil), "a key taken without a value not seen")
        try expect(try ledger.runKey(scope: "ids", key: "a") == nil, "a key leaked to another scope")
        ledger.takeRunKey(scope: "names", key: "a", value: "A (2).m4a")
        try expect(try ledger.runKey(scope: "names", key: "a") == .some("A (2).m4a"), "a key's value not replaced")
        try ledger.resetRunKeys()
        try expect(try ledger.runKey(scope: "names", key: "a") == nil, "a key survived resetRunKeys")
    }

    static let batchingChangesNothing = Clause("a batch leaves the rows as writes flushed one by one do") { context in
        var random = SplitMix64(seed: 7)
        var steps: [(Int, Int)] = []
        for _ in 0..<400 { steps.append((Int(random.next() % 6), Int(random.next() % 5))) }
        func apply(_ ledger: any RunLedger, eachFlushed: Bool) throws {
            for (kind, id) in steps {
                let item = key("\(id)")
                switch kind {
                case 0: ledger.begin(item, title: "t\(id)", url: url)
                case 1: ledger.responded(item, validator: Validator(etag: "e\(id)", lastModified: nil), expectedBytes: 9)
                case 2: ledger.verified(item, size: 9, sha256: "s")
                case 3: ledger.stored(item, StoredRecord(location: "l\(id)", size: 9, sha256: nil))
                case 4: ledger.failed(item, reason: "r", receivedBytes: 2)
                default: ledger.paused(item, receivedBytes: 3)
                }
                if eachFlushed { try ledger.flush() }
            }
            try ledger.flush()
        }
        let one = try context.open(context.place + "-each")
        let other = try context.open(context.place + "-batch")
        try apply(one, eachFlushed: true)
        try apply(other, eachFlushed: false)
        func shape(_ entries: [LedgerEntry]) -> [String] {
            entries.map {
                "\($0.key) \($0.status) \($0.receivedBytes) \(String(describing: $0.expectedBytes)) "
                    + "\(String(describing: $0.location)) \($0.attempts) \(String(describing: $0.validator))"
            }
        }
        let each = shape(try one.entries())
        let batch = shape(try other.entries())
        try expect(each == batch, "batched rows differ:\n\(batch)\nfrom rows flushed one by one:\n\(each)")
    }
}
