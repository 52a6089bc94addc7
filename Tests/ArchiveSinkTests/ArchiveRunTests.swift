import Foundation
import MediaFetchCore
import Testing

@testable import ArchiveSink

#if canImport(Glibc)
    import Glibc
#endif

/// Runs over time: interruption, kill, the ledger's keep, concurrency, size.
@Suite("ArchiveSink runs")
struct ArchiveRunTests {
    /// One run storing `items` (index into `bytes`) and keeping `kept` from the ledger; `interrupted` calls
    /// finish() from a cancelled task, as the pipeline does after Ctrl-C.
    func run(
        _ fixture: borrowing ArchiveFixture,
        store items: [Int],
        keep kept: [Int: StoredRecord] = [:],
        interrupted: Bool = false
    ) async throws -> [Int: StoredRecord] {
        let sink = try fixture.sink()
        var records: [Int: StoredRecord] = [:]
        for index in (items + kept.keys).sorted() {
            let plan = try await sink.plan(song("\(index)", title: "Song \(index)"), asset: .preview)
            if let record = kept[index] {
                #expect(try await sink.keep(plan, stored: record))
                records[index] = record
            } else {
                let data = bytes(index, count: 3000 + index)
                let location = try await sink.store(try fixture.staged(data), as: plan)
                records[index] = StoredRecord(location: location, size: Int64(data.count), sha256: SHA256.hex(of: data))
            }
        }
        if interrupted {
            // Cancelled before finish() begins, as after Ctrl-C: cancelling from outside raced the task's start.
            let task = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await sink.finish()
            }
            await #expect(throws: SinkError.self) { try await task.value }
        } else {
            try await sink.finish()
        }
        return records
    }

    func songEntries(_ fixture: borrowing ArchiveFixture) throws -> [String: Data] {
        try fixture.contents().filter { $0.key.hasPrefix("Artist/") }
    }

    @Test func interruptedRunLeavesThePreviousArchiveAndTheNextRunHasEveryItemOnce() async throws {
        let fixture = try ArchiveFixture()
        let first = try await run(fixture, store: [1, 2, 3])
        let before = try Data(contentsOf: fixture.archive)

        // Interrupted: keeps 1-3, stores 4-5, then Ctrl-C. The old archive stays byte for byte.
        _ = try await run(fixture, store: [4, 5], keep: first, interrupted: true)
        #expect(try Data(contentsOf: fixture.archive) == before)
        #expect(try fixture.leftovers().isEmpty)

        // The next run keeps what the ledger had committed (1-3) and fetches 4-6 again.
        _ = try await run(fixture, store: [4, 5, 6], keep: first)
        let entries = try fixture.entries()
        let names = entries.map(\.entry.name)
        #expect(names.count == Set(names).count)
        let songs = try songEntries(fixture)
        #expect(songs.count == 6)
        for index in 1...6 {
            #expect(songs["Artist/Album/01 Song \(index).m4a"] == bytes(index, count: 3000 + index))
        }
        #expect(try fixture.extract(with: .gnuTar).count == 8)
    }

    @Test func keepRefusesWhatThePreviousArchiveDoesNotHold() async throws {
        let fixture = try ArchiveFixture()
        let first = try await run(fixture, store: [1])
        let sink = try fixture.sink()
        let plan = try await sink.plan(song("1", title: "Song 1"), asset: .preview)
        let record = try #require(first[1])
        #expect(
            try await sink.keep(
                plan,
                stored: StoredRecord(
                    location: record.location, size: record.size + 1,
                    sha256: nil)) == false)
        #expect(
            try await sink.keep(
                plan,
                stored: StoredRecord(
                    location: "elsewhere.m4a", size: record.size,
                    sha256: nil)) == false)
        let other = try await sink.plan(song("2", title: "Song 2"), asset: .preview)
        #expect(
            try await sink.keep(
                other,
                stored: StoredRecord(
                    location: other.relativePath, size: 3002,
                    sha256: nil)) == false)
        try await sink.finish()
    }

    @Test func aKilledRunsPartialFileIsRemovedByTheNextRun() async throws {
        let fixture = try ArchiveFixture()
        _ = try await run(fixture, store: [1])
        let before = try Data(contentsOf: fixture.archive)
        // A process that has exited stands in for the killed run.
        let gone = Process()
        gone.executableURL = URL(fileURLWithPath: "/bin/true")
        try gone.run()
        gone.waitUntilExit()
        let stale = fixture.archive.deletingLastPathComponent()
            .appendingPathComponent(fixture.archive.lastPathComponent + ".partial-\(gone.processIdentifier)-1")
        try Data("half an archive".utf8).write(to: stale)
        #expect(try Data(contentsOf: fixture.archive) == before)

        _ = try await run(fixture, store: [2])
        #expect(try fixture.leftovers().isEmpty)
        #expect(try songEntries(fixture).count == 1)
    }

    @Test func aSinkDroppedWithoutFinishLeavesNoFile() async throws {
        let fixture = try ArchiveFixture()
        do {
            let sink = try fixture.sink()
            let plan = try await sink.plan(song("1", title: "A"), asset: .preview)
            _ = try await sink.store(try fixture.staged(bytes(1)), as: plan)
            #expect(try fixture.leftovers().count == 1)
        }
        // The owner thread deletes the partial file after the sink is gone; wait for that, bounded.
        var left = try fixture.leftovers()
        for _ in 0..<200 where !left.isEmpty {
            try await Task.sleep(for: .milliseconds(10))
            left = try fixture.leftovers()
        }
        #expect(left.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: fixture.archive.path))
    }

    /// The sink commits only at finish(), so the staged file stays the pipeline's: read, never moved or changed.
    @Test func aStoreLeavesTheStagedFileAsItWas() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink()
        #expect(sink.commitsEachStore == false)
        let plan = try await sink.plan(song("1", title: "Kept"), asset: .preview)
        let staged = try fixture.staged(bytes(1))
        _ = try await sink.store(staged, as: plan)
        try await sink.finish()
        #expect(try Data(contentsOf: staged.url) == bytes(1))
        #expect(try songEntries(fixture) == [plan.relativePath: bytes(1)])
    }

    @Test func aStagedFileOfTheWrongSizeIsRefusedAndTheArchiveStaysValid() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink()
        let bad = try await sink.plan(song("1", title: "Bad"), asset: .preview)
        var staged = try fixture.staged(bytes(1))
        staged.size += 10
        await #expect(throws: SinkError.self) { _ = try await sink.store(staged, as: bad) }
        let good = try await sink.plan(song("2", title: "Good"), asset: .preview)
        _ = try await sink.store(try fixture.staged(bytes(2)), as: good)
        try await sink.finish()
        #expect(try songEntries(fixture) == [good.relativePath: bytes(2)])
    }

    @Test func fiveHundredItemsFromSixteenWorkers() async throws {
        let fixture = try ArchiveFixture()
        let sink = try fixture.sink(compression: .zstd)
        var plans: [StoragePlan] = []
        for index in 0..<500 {
            plans.append(
                try await sink.plan(song("\(index)", title: "Track \(index)", track: index % 20), asset: .preview))
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<16 {
                let mine = stride(from: worker, to: 500, by: 16).map { ($0, plans[$0]) }
                let staged = try mine.map { try fixture.staged(bytes($0.0, count: 2000 + $0.0)) }
                group.addTask {
                    for ((_, plan), file) in zip(mine, staged) { _ = try await sink.store(file, as: plan) }
                }
            }
            try await group.waitForAll()
        }
        try await sink.finish()
        let entries = try fixture.entries()
        #expect(entries.count == 502)
        #expect(Set(entries.map(\.entry.name)).count == 502)
        let contents = try fixture.contents()
        for (index, plan) in plans.enumerated() {
            #expect(contents[plan.relativePath] == bytes(index, count: 2000 + index))
        }
    }

    /// A 1 GiB entry streams through with flat memory. The staged file is sparse (no disk or memory to
    /// make it). Run alone, peak resident memory grows by about 3 MiB (measured 2.8-3.1 MiB); the bound is
    /// 256 MiB because VmHWM is per process and other suites run in parallel in it (seen: up to 67 MiB).
    /// Holding the file, or a compressor buffering the stream, would add about 1 GiB.
    /// A 1 GiB entry is written whole and right. (Its memory is measured where nothing else runs beside it:
    /// MemoryTests runs mediafetch as a child process and reads its peak RSS; in this process other suites
    /// run in parallel and move the peak.)
    @Test func oneGibibyteEntry() async throws {
        let fixture = try ArchiveFixture()
        let size: Int64 = 1 << 30
        let url = fixture.stage.appendingPathComponent("big.download")
        #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
        #expect(truncate(url.path, off_t(size)) == 0)
        // sha256 of 1 GiB of zero bytes (`head -c 1G /dev/zero | sha256sum`).
        let zeros = "49bc20df15e412a64472421e13fe86ff1c5165e18b2afccf160d4dc19fe68a14"
        let staged = StagedFile(url: url, size: size, sha256: zeros, sourceURL: url)
        let sink = try fixture.sink(collection: CollectionOptions(writesManifest: false, writesPlaylist: false))
        let plan = try await sink.plan(song("big", title: "Big"), asset: .preview)
        _ = try await sink.store(staged, as: plan)
        try await sink.finish()

        let entries = try fixture.headers()
        #expect(entries.map(\.name) == [plan.relativePath])
        #expect(entries.first?.size == size)
        var info = stat()
        #expect(stat(fixture.archive.path, &info) == 0)
        #expect(Int64(info.st_size) > size)
    }
}
