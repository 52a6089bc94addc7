import Foundation
import MediaFetchCore
import Synchronization

/// What every ``Sink`` must do, as a suite anyone can run on their own sink: the bundled `directory` and `tar`
/// sinks pass it through this same function.
///
/// ```swift
/// @Test func mySinkKeepsTheContract() async throws {
///     try await SinkContract.run { root in try MySink(root: root) }
/// }
/// ```
///
/// Each clause gets a fresh, empty folder and asks `make` for sinks rooted there, as many as it needs (a second
/// one stands for the next run, after a crash or an interruption). It reads back what the collection holds
/// with an ``Inspector`` (by default: the files under the folder), and throws a ``ContractFailure`` naming each
/// clause that did not hold and why. No test framework is involved, so XCTest calls it the same way.
///
/// The clauses, in ``Clause/all``: stores are whole and answer their locations; a sink that commits only at
/// `finish` leaves the files it is given untouched until then; a collection is whole or
/// absent at every moment of a store (what a crash would leave), also when a sink is dropped without
/// `finish`; the same plan gives the same names at any concurrency; nothing lands outside the root through a
/// planted symbolic link or a hostile name; `keep` answers truthfully; `finish` after an interruption leaves a
/// valid collection; a hundred concurrent stores.
public enum SinkContract {
    /// How the suite reads back what a sink holds under its root.
    public struct Inspector: Sendable {
        /// Every file the collection at the root holds, by the location ``Sink/store(_:as:)`` answered for it,
        /// with its bytes. It must throw when the collection is not valid (a corrupt archive).
        public var contents: @Sendable (URL) async throws -> [String: Data]

        /// An inspector that reads files or archives on disk.
        public init(contents: @escaping @Sendable (URL) throws -> [String: Data]) {
            self.contents = contents
        }

        /// An inspector that reads over the network (an object store's listing and objects), without blocking a
        /// thread of the task pool while it waits.
        public init(reading: @escaping @Sendable (URL) async throws -> [String: Data]) {
            contents = reading
        }

        /// The regular files under the root by relative path, symbolic links not followed, leaving out names
        /// that begin with a dot (a sink's temporary files and state are not part of the collection).
        public static let directory = Inspector { root in
            var result: [String: Data] = [:]
            let base = root.standardizedFileURL.path
            guard let walker = FileManager.default.enumerator(atPath: base) else { return result }
            while let relative = walker.nextObject() as? String {
                let name = (relative as NSString).lastPathComponent
                if name.hasPrefix(".") {
                    walker.skipDescendants()
                    continue
                }
                var info = stat()
                guard lstat(base + "/" + relative, &info) == 0, info.st_mode & S_IFMT == S_IFREG else { continue }
                result[relative] = try Data(contentsOf: URL(fileURLWithPath: base + "/" + relative))
            }
            return result
        }
    }

    /// One promise of the ``Sink`` protocol, checked on its own.
    public struct Clause: Sendable, Hashable, CustomStringConvertible {
        /// A short name, as ``ContractFailure`` reports it.
        public let name: String
        fileprivate let run: @Sendable (Context) async throws -> Void

        fileprivate init(_ name: String, _ run: @escaping @Sendable (Context) async throws -> Void) {
            self.name = name
            self.run = run
        }

        public var description: String { name }

        public static func == (lhs: Clause, rhs: Clause) -> Bool { lhs.name == rhs.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }

    /// Runs `clauses` (every one, by default) against sinks made by `make`, each clause in a fresh folder.
    /// - Parameters:
    ///   - clauses: the clauses to run; a subset is for narrowing down a failure, not for passing.
    ///   - inspector: reads back what a collection holds; ``Inspector/directory`` by default.
    ///   - make: a new sink rooted at the folder it is given (it may put its collection anywhere below it).
    /// - Throws: ``ContractFailure`` listing every clause that did not hold.
    public static func run(
        clauses: [Clause] = Clause.all,
        inspector: Inspector = .directory,
        _ make: @escaping @Sendable (URL) async throws -> any Sink
    ) async throws {
        var runner = ClauseRunner(suite: "SinkContract")
        for clause in clauses {
            await runner.check(clause.name) {
                try await withScratchFolder("sink-contract") { folder in
                    let root = folder.appendingPathComponent("root", isDirectory: true)
                    let staging = folder.appendingPathComponent("staging", isDirectory: true)
                    let outside = folder.appendingPathComponent("outside", isDirectory: true)
                    for made in [root, staging, outside] {
                        try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true)
                    }
                    try await clause.run(
                        Context(root: root, staging: staging, outside: outside, inspector: inspector, make: make))
                }
            }
        }
        try runner.finish()
    }

    /// What a clause has at hand.
    fileprivate struct Context: Sendable {
        let root: URL
        let staging: URL
        /// A folder beside the root that nothing may ever be written into.
        let outside: URL
        let inspector: Inspector
        let make: @Sendable (URL) async throws -> any Sink

        func sink() async throws -> any Sink { try await make(root) }

        func contents(_ when: String) async throws -> [String: Data] {
            do {
                return try await inspector.contents(root)
            } catch {
                throw ClauseViolation("\(when), the collection cannot be read: \(error)")
            }
        }

        /// A staged download of `bytes`, as the pipeline hands one over.
        func staged(_ bytes: Data, for item: MediaItem) throws -> StagedFile {
            try StagedFile.written(bytes, in: staging, sourceURL: item.previewURL ?? root)
        }

        /// The planned files of `items` stored, in `order` of the items' indices, `width` at a time.
        func store(
            _ items: [MediaItem], into sink: any Sink, order: [Int]? = nil, width: Int = 1
        ) async throws -> [(plan: StoragePlan, location: String, bytes: Data)] {
            var plans: [StoragePlan] = []
            for item in items { plans.append(try await sink.plan(item, asset: .preview)) }
            let indices = order ?? Array(items.indices)
            let locations = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var done: [Int: String] = [:]
                var running = 0
                for index in indices {
                    if running >= width, let (finished, location) = try await group.next() {
                        done[finished] = location
                        running -= 1
                    }
                    running += 1
                    let plan = plans[index]
                    let file = try staged(SinkContract.bytes(for: items[index]), for: items[index])
                    group.addTask { (index, try await sink.store(file, as: plan)) }
                }
                for try await (finished, location) in group { done[finished] = location }
                return done
            }
            return items.indices.compactMap { index in
                locations[index].map {
                    (plan: plans[index], location: $0, bytes: SinkContract.bytes(for: items[index]))
                }
            }
        }
    }

    /// A song with the fields layouts use.
    static func song(_ id: Int, title: String? = nil, artist: String = "Artist", album: String = "Album") -> MediaItem {
        MediaItem(
            id: "\(id)", kind: "song", title: title ?? "Track \(id)", artist: artist, album: album,
            trackNumber: id % 20 + 1, discNumber: 1, durationMillis: 30_000,
            releaseDate: Date(timeIntervalSince1970: 1_000_000_000), genre: "Pop",
            previewURL: URL(string: "https://audio.example/\(id).m4a"),
            artworkURL: URL(string: "https://art.example/\(id)/100x100bb.jpg"))
    }

    /// The bytes an item's preview holds in these clauses: different for every item, sized by its id.
    static func bytes(for item: MediaItem, size: Int? = nil) -> Data {
        let seed = UInt64(Int(item.id) ?? 7)
        var generator = SplitMix64(seed: seed &* 0x9E37_79B9 | 1)
        let count = size ?? (1_000 + Int(seed) * 37 % 20_000)
        var data = Data(count: count)
        data.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                var word = generator.next()
                let length = min(8, buffer.count - offset)
                withUnsafeBytes(of: &word) { buffer[offset..<offset + length].copyBytes(from: $0.prefix(length)) }
                offset += length
            }
        }
        return data
    }
}

extension SinkContract.Clause {
    /// Every clause, in the order they run.
    public static var all: [Self] {
        [
            .storesWholeFiles, .stagedFilesUntouchedUntilCommit, .wholeOrAbsentDuringStores,
            .sameNamesAtAnyConcurrency, .nothingOutsideTheRoot, .keepAnswersTruthfully, .finishAfterInterruption,
            .hundredConcurrentStores,
        ]
    }

    /// Stored files come back whole under the locations `store` answered, once `finish` returns (and at once
    /// for a sink that ``Sink/commitsEachStore``); the locations are the plans' relative paths or say where.
    public static let storesWholeFiles = Self("stores are whole, under the locations answered") { context in
        let sink = try await context.sink()
        let items = (1...12).map { SinkContract.song($0) }
        let stored = try await context.store(items, into: sink)
        if sink.commitsEachStore {
            let now = try await context.contents("after the stores, before finish")
            for file in stored where now[file.location] != file.bytes {
                throw ClauseViolation(
                    "\(file.location) is not whole after store returned, though commitsEachStore is true")
            }
        }
        try await sink.finish()
        let contents = try await context.contents("after finish")
        try demand(Set(stored.map(\.location)).count == items.count, "two items were stored at one location")
        for file in stored {
            try demand(
                contents[file.location] == file.bytes,
                "\(file.location) holds \(contents[file.location].map { "\($0.count) other bytes" } ?? "nothing")"
                    + ", expected the \(file.bytes.count) bytes stored")
        }
    }

    /// A sink that does not ``Sink/commitsEachStore`` leaves every file it is given where it is and unchanged
    /// until its `finish` returns: the pipeline keeps those files so that a run interrupted before the commit
    /// stores them again without fetching them. (A sink that commits each store may take the file; nothing is
    /// asked of it here.)
    public static let stagedFilesUntouchedUntilCommit = Self("staged files untouched until the commit") { context in
        let sink = try await context.sink()
        guard !sink.commitsEachStore else { return }
        let items = (1...6).map { SinkContract.song($0) }
        var given: [(URL, Data)] = []
        for item in items {
            let plan = try await sink.plan(item, asset: .preview)
            let bytes = SinkContract.bytes(for: item)
            let file = try context.staged(bytes, for: item)
            _ = try await sink.store(file, as: plan)
            given.append((file.url, bytes))
        }
        for (url, bytes) in given {
            try demand(
                (try? Data(contentsOf: url)) == bytes,
                "\(url.lastPathComponent) was moved, deleted or changed by store, though commitsEachStore is false")
        }
        try await sink.finish()
    }

    /// Watched from outside while large files are stored, every planned name the collection shows is whole; a
    /// store that fails leaves nothing partial under its name; and a sink dropped without `finish` (a crash)
    /// leaves a collection that reads back, holding nothing partial, which the next run's sink completes.
    ///
    /// The watcher catches what it sees: a sink that copies onto the final name may still pass when the copy is
    /// quick. Rename a complete file into place (``SafePlacement`` does) rather than rely on this clause.
    public static let wholeOrAbsentDuringStores = Self("whole or absent at every moment, and after a crash") {
        context in
        let items = (1...8).map { SinkContract.song($0, title: "Large \($0)") }
        var wanted: [String: Data] = [:]
        let watch = Watch()
        do {
            let sink = try await context.sink()
            var plans: [StoragePlan] = []
            for item in items {
                let plan = try await sink.plan(item, asset: .preview)
                plans.append(plan)
                wanted[plan.relativePath] = SinkContract.bytes(for: item, size: 1 << 20)
            }
            let expected = wanted
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Reads the collection as often as it can until the stores end: what it sees is what a crash
                    // at that moment would leave.
                    while watch.isWatching {
                        let now = (try? await context.inspector.contents(context.root)) ?? [:]
                        for (name, bytes) in now where expected[name] != nil && expected[name] != bytes {
                            watch.saw("\(name) (\(bytes.count) bytes)")
                        }
                        await Task.yield()
                    }
                }
                try await withThrowingTaskGroup(of: Void.self) { stores in
                    for (item, plan) in zip(items, plans) {
                        let file = try context.staged(expected[plan.relativePath] ?? Data(), for: item)
                        // A store may fail (a full disk): then nothing may be under its name either.
                        stores.addTask { _ = try? await sink.store(file, as: plan) }
                    }
                    try await stores.waitForAll()
                }
                watch.stop()
                try await group.waitForAll()
            }
            // The sink goes without finish: the process died here.
        }
        let partial = watch.partial
        try demand(partial.isEmpty, "seen partial under a final name during stores: \(partial.prefix(3))")
        let afterCrash = try await context.contents("after a sink was dropped without finish")
        for (name, bytes) in afterCrash where wanted[name] != nil {
            try demand(bytes == wanted[name], "\(name) is partial after the crash")
        }
        let next = try await context.sink()
        try await next.finish()
        for (name, bytes) in try await context.contents("after the next run's finish") where wanted[name] != nil {
            try demand(bytes == wanted[name], "\(name) is partial after the next run finished")
        }
    }

    /// Two sinks given the same items in the same order plan the same names, clashes numbered alike, and
    /// storing one at a time or sixteen at once in another order gives the same collection.
    public static let sameNamesAtAnyConcurrency = Self("same plan, same names at any concurrency") { context in
        // Clashing names: the same title by the same artist on one album, and names equal but for case.
        let items = (1...40).map { index in
            SinkContract.song(
                index, title: index % 3 == 0 ? "Same" : (index % 3 == 1 ? "same" : "Track \(index)"),
                artist: "Band", album: "Album")
        }
        var collections: [[String: Data]] = []
        var plannings: [[String]] = []
        for (width, reversed) in [(1, false), (16, true)] {
            let sink = try await context.sink()
            let order = reversed ? Array(items.indices.reversed()) : Array(items.indices)
            let stored = try await context.store(items, into: sink, order: order, width: width)
            try await sink.finish()
            plannings.append(stored.map(\.plan.relativePath))
            collections.append(
                try await context.contents("after a run at concurrency \(width)").filter { name, _ in
                    stored.contains { $0.location == name }
                })
            // The next run starts from an empty root.
            for name in (try? FileManager.default.contentsOfDirectory(atPath: context.root.path)) ?? [] {
                try FileManager.default.removeItem(at: context.root.appendingPathComponent(name))
            }
        }
        try demand(Set(plannings[0]).count == items.count, "two items got one name: \(plannings[0])")
        try demand(plannings[0] == plannings[1], "plans differ between two runs: \(plannings[0]) \(plannings[1])")
        try demand(collections[0] == collections[1], "the collections differ between concurrency 1 and 16")
        try demand(collections[0].count == items.count, "\(collections[0].count) of \(items.count) files are there")
    }

    /// A symbolic link planted in the root toward another folder, and names made to escape (`..`, absolute
    /// paths, separators, control characters, device names, overlong names), never put a byte outside.
    public static let nothingOutsideTheRoot = Self("nothing outside the root, through links or hostile names") {
        context in
        let link = context.root.appendingPathComponent("Linked Artist")
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: context.outside)
        let hostile: [(title: String, artist: String, album: String)] = [
            ("Escape", "Linked Artist", "Album"),
            ("../../../outside/escape", "..", ".."),
            ("/etc/passwd", "/", "/tmp"),
            ("a/../../b", "x\\..\\..\\y", "."),
            ("CON", "NUL", "aux.txt"),
            ("bell\u{07}new\nline\u{202E}gpj.exe", "tab\tartist", "\u{0}nul"),
            (String(repeating: "ü", count: 300), String(repeating: "x", count: 300), "Album"),
        ]
        let items = hostile.enumerated().map { index, names in
            SinkContract.song(100 + index, title: names.title, artist: names.artist, album: names.album)
        }
        let sink = try await context.sink()
        for item in items {
            // A sink may refuse a name it cannot make safe, or refuse to follow the link: that is no failure.
            guard let plan = try? await sink.plan(item, asset: .preview) else { continue }
            let file = try context.staged(SinkContract.bytes(for: item), for: item)
            _ = try? await sink.store(file, as: plan)
        }
        try? await sink.finish()
        let escaped = (try? FileManager.default.subpathsOfDirectory(atPath: context.outside.path)) ?? []
        try demand(escaped.isEmpty, "files were written outside the root: \(escaped.prefix(5))")
        let folder = context.root.deletingLastPathComponent()
        let beside = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            .filter { !["outside", "root", "staging"].contains($0) }
        try demand(beside.isEmpty, "files were written beside the root (in \(folder.path)): \(beside)")
        var destination = stat()
        try demand(
            lstat(link.path, &destination) == 0 && destination.st_mode & S_IFMT == S_IFLNK,
            "the planted link was replaced or removed")
    }

    /// `keep` says yes to what an earlier run stored and the collection still holds with the recorded size, and
    /// no to a record whose size or location is not what is there.
    public static let keepAnswersTruthfully = Self("keep answers truthfully") { context in
        let items = (1...4).map { SinkContract.song($0) }
        let first = try await context.sink()
        let stored = try await context.store(items, into: first)
        try await first.finish()

        let next = try await context.sink()
        var plans: [StoragePlan] = []
        for item in items { plans.append(try await next.plan(item, asset: .preview)) }
        let unknown = try await next.plan(SinkContract.song(99, title: "Never Stored"), asset: .preview)
        for (index, file) in stored.enumerated() {
            let record = StoredRecord(location: file.location, size: Int64(file.bytes.count), sha256: nil)
            let wrongSize = StoredRecord(location: file.location, size: Int64(file.bytes.count) + 1, sha256: nil)
            if index == 0 {
                try demand(
                    try await next.keep(plans[index], stored: wrongSize) == false,
                    "keep said yes to \(file.location) with a size it does not have")
            } else {
                try demand(
                    try await next.keep(plans[index], stored: record),
                    "keep said no to \(file.location), which the collection holds whole")
            }
        }
        let made = StoredRecord(location: unknown.relativePath, size: 10, sha256: nil)
        try demand(
            try await next.keep(unknown, stored: made) == false,
            "keep said yes to \(unknown.relativePath), which was never stored")
        try await next.finish()
        // What was kept is still there, whole, after the next run's finish.
        let contents = try await context.contents("after a run that kept files")
        for file in stored.dropFirst() {
            try demand(contents[file.location] == file.bytes, "\(file.location) was kept but is gone or changed")
        }
    }

    /// `finish` called from a cancelled task, as after Ctrl-C, leaves a collection that reads back and still
    /// holds, whole, what an earlier completed run stored and this one kept.
    public static let finishAfterInterruption = Self("finish after an interruption leaves a valid collection") {
        context in
        let first = try await context.sink()
        let earlier = try await context.store((1...3).map { SinkContract.song($0) }, into: first)
        try await first.finish()

        let interrupted = try await context.sink()
        for (index, file) in earlier.enumerated() {
            let plan = try await interrupted.plan(SinkContract.song(index + 1), asset: .preview)
            let record = StoredRecord(location: file.location, size: Int64(file.bytes.count), sha256: nil)
            _ = try await interrupted.keep(plan, stored: record)
        }
        _ = try await context.store((4...6).map { SinkContract.song($0) }, into: interrupted)
        let finishing = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await interrupted.finish()
        }
        _ = await finishing.result
        let contents = try await context.contents("after finish from a cancelled task")
        for file in earlier {
            try demand(contents[file.location] == file.bytes, "\(file.location) of the earlier run is gone or partial")
        }
        for (name, bytes) in contents where name.hasSuffix(".m4a") {
            try demand(!bytes.isEmpty, "\(name) is empty")
        }
    }

    /// A hundred stores at once all land whole.
    public static let hundredConcurrentStores = Self("a hundred concurrent stores") { context in
        let sink = try await context.sink()
        let items = (1...100).map { SinkContract.song($0, title: "Song \($0)", album: "Album \($0 % 7)") }
        let stored = try await context.store(items, into: sink, width: 100)
        try await sink.finish()
        let contents = try await context.contents("after a hundred concurrent stores")
        let missing = stored.filter { contents[$0.location] != $0.bytes }.map(\.location)
        try demand(missing.isEmpty, "\(missing.count) of 100 are missing or partial, e.g. \(missing.prefix(3))")
    }
}

/// What the watcher of ``SinkContract/Clause/wholeOrAbsentDuringStores`` shares with the stores.
private final class Watch: Sendable {
    private let state = Mutex((watching: true, partial: [String]()))

    var isWatching: Bool { state.withLock { $0.watching } }
    var partial: [String] { state.withLock { $0.partial } }
    func stop() { state.withLock { $0.watching = false } }
    func saw(_ what: String) { state.withLock { $0.partial.append(what) } }
}
