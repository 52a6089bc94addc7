import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import DirectorySink

#if canImport(Glibc)
    import Glibc
#endif

@Suite("GroupFlush")
struct GroupFlushTests {
    /// A flush that counts its calls and, while `held`, waits to be let go.
    final class FakeFlush: Sendable {
        let calls = Mutex(0)
        let gate = DispatchSemaphore(value: 0)
        let entered = DispatchSemaphore(value: 0)
        let holdsFirst: Bool
        /// The errno every call fails with; nil succeeds.
        let failure: Int32?

        init(holdsFirst: Bool = false, failingWith failure: Int32? = nil) {
            self.holdsFirst = holdsFirst
            self.failure = failure
        }

        func callAsFunction(_ descriptor: Int32) -> Int32 {
            let call = calls.withLock { count in
                count += 1
                return count
            }
            if holdsFirst && call == 1 {
                entered.signal()
                gate.wait()
            }
            guard let failure else { return 0 }
            errno = failure
            return -1
        }
    }

    /// Starts a barrier whose flush `held` keeps in progress, makes `count` requests while it runs, checks
    /// that they all wait for the next flush, then lets the held one end and waits for everything.
    static func duringAHeldFlush(
        of group: GroupFlush, held: FakeFlush, count: Int, _ request: @escaping @Sendable () async throws -> Void
    ) async throws {
        let first = Task { try await group.barrier() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                held.entered.wait()
                done.resume()
            }
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<count { tasks.addTask { try await request() } }
            await yield(until: { group.waiting >= count })
            #expect(group.waiting == count)
            #expect(held.calls.withLock { $0 } == 1)
            held.gate.signal()
            try await first.value
            try await tasks.waitForAll()
        }
    }

    @Test func barriersThatArriveDuringAFlushShareTheNextOne() async throws {
        let fixture = try Fixture()
        let folder = fixture.base
        let fake = FakeFlush(holdsFirst: true)
        let group = try GroupFlush(root: folder, flush: { fake($0) })
        defer { group.close() }

        // Ten barriers arrive during a flush: none may be served by the flush already running.
        try await Self.duringAHeldFlush(of: group, held: fake, count: 10) { try await group.barrier() }
        // One flush for the first barrier, one shared by the ten that came during it.
        #expect(fake.calls.withLock { $0 } == 2)
    }

    /// A flush waits for more stores to share it, up to its target: five barriers that arrive one after the other
    /// go in one syncfs, and none waits out the (minute-long) window once the fifth has come.
    @Test func aFlushGathersStoresUpToItsTarget() async throws {
        let fixture = try Fixture()
        let fake = FakeFlush()
        let group = try GroupFlush(
            root: fixture.base, flush: { fake($0) }, gather: .seconds(60), gatherTarget: 5, settle: .seconds(60))
        defer { group.close() }
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<5 { tasks.addTask { try await group.barrier() } }
            try await tasks.waitForAll()
        }
        #expect(fake.calls.withLock { $0 } == 1)
        #expect(ContinuousClock.now - started < .seconds(30), "the flush waited out its window")
    }

    /// A run with fewer writers than the target stops sending stores when all of them wait: the flush starts
    /// once stores stop coming (the settle time), not at the end of its (minute-long) window.
    @Test func aFlushThatCannotReachItsTargetStartsOnceStoresStopComing() async throws {
        let fixture = try Fixture()
        let fake = FakeFlush()
        let group = try GroupFlush(
            root: fixture.base, flush: { fake($0) }, gather: .seconds(60), gatherTarget: 100,
            settle: .milliseconds(5))
        defer { group.close() }
        let started = ContinuousClock.now
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<3 { tasks.addTask { try await group.barrier() } }
            try await tasks.waitForAll()
        }
        // Each of the three was served by a flush that began after it asked (one, two or three flushes).
        #expect((1...3).contains(fake.calls.withLock { $0 }))
        #expect(ContinuousClock.now - started < .seconds(30), "the flush waited out its window")
        // And a lone store after them: it is not held for the window either.
        try await group.barrier()
        #expect(ContinuousClock.now - started < .seconds(30), "the flush waited out its window")
    }

    /// Closing the group serves a store that waits for a target and a settle time it would not see for a minute.
    @Test func closingServesAStoreThatWaitsForItsGroup() async throws {
        let fixture = try Fixture()
        let fake = FakeFlush()
        let group = try GroupFlush(
            root: fixture.base, flush: { fake($0) }, gather: .seconds(60), gatherTarget: 100, settle: .seconds(60))
        let started = ContinuousClock.now
        async let served: Void = group.barrier()
        // Closed once the store waits (the waiting count is the group's own, not a guess at time).
        while group.waiting == 0 { await Task.yield() }
        group.close()
        try await served
        #expect(fake.calls.withLock { $0 } == 1)
        #expect(ContinuousClock.now - started < .seconds(30), "the flush waited out its window")
    }

    /// Half the stores that can wait, 8 to 256 (and 256 outside a run).
    @Test func theDefaultTargetIsWhatTheWaitingStoresCanReach() {
        #expect(GroupFlush.defaultTarget(storesAtOnce: nil) == 256)
        #expect(GroupFlush.defaultTarget(storesAtOnce: 2000) == 256)
        #expect(GroupFlush.defaultTarget(storesAtOnce: 496) == 248)
        #expect(GroupFlush.defaultTarget(storesAtOnce: 124) == 62)
        #expect(GroupFlush.defaultTarget(storesAtOnce: 10) == 8)
        // Outside a run, 256; a run's download tasks see the run's figure.
        #expect(GroupFlush.defaultTarget() == 256)
        Pipeline.$storesAtOnce.withValue(20) {
            #expect(GroupFlush.defaultTarget() == 10)
        }
    }

    @Test func eachBarrierReportsItsOwnFlush() async throws {
        let fixture = try Fixture()
        let fake = FakeFlush(failingWith: EIO)
        let group = try GroupFlush(root: fixture.base, flush: { fake($0) })
        defer { group.close() }
        for _ in 0..<3 {
            await #expect {
                try await group.barrier()
            } throws: { error in
                String(describing: error).contains("Input/output error")
            }
        }
        #expect(fake.calls.withLock { $0 } == 3)
    }

    @Test func storesIntoOneFolderShareOneFsyncOfIt() async throws {
        let fixture = try Fixture()
        let held = FakeFlush(holdsFirst: true)
        let folders = FakeFlush()
        let group = try GroupFlush(root: fixture.base, flush: { held($0) }, flushFolder: { folders($0) })
        defer { group.close() }
        let folder = open(fixture.base.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(folder >= 0)
        defer { close(folder) }
        // A syncfs in progress holds the thread; meanwhile ten stores into one folder ask for it.
        try await Self.duringAHeldFlush(of: group, held: held, count: 10) { try await group.flushFolder(folder) }
        #expect(folders.calls.withLock { $0 } == 1)
        // No data barrier was among the ten: no second syncfs.
        #expect(held.calls.withLock { $0 } == 1)
    }

    // MARK: - Through the directory sink

    /// A sink whose group flushing calls the fakes, as if the folder were on ext4.
    static func sink(
        _ fixture: borrowing Fixture, syncfs: FakeFlush, fsync folders: FakeFlush
    ) throws -> DirectorySink {
        DirectorySink(
            root: fixture.root, layout: try LayoutTemplate("{title}.{ext}"), sync: true,
            calls: .init(
                syncFilesystem: { syncfs($0) }, syncFolder: { folders($0) }, filesystemType: { _ in 0xEF53 }))
    }

    @Test func aSyncedStoreFlushesBeforeAndAfterItsRename() async throws {
        let fixture = try Fixture()
        let (syncfs, folders) = (FakeFlush(), FakeFlush())
        let sink = try Self.sink(fixture, syncfs: syncfs, fsync: folders)
        let plan = try await sink.plan(song("1", title: "One"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Data("one".utf8)), as: plan)
        #expect(syncfs.calls.withLock { $0 } == 1)
        #expect(folders.calls.withLock { $0 } == 1)
        #expect(try fixture.tree(fixture.root) == ["One.m4a": Data("one".utf8)])
    }

    @Test func aFailedSyncfsFallsBackToAnFsyncPerFile() async throws {
        let fixture = try Fixture()
        let (syncfs, folders) = (FakeFlush(failingWith: EIO), FakeFlush())
        let sink = try Self.sink(fixture, syncfs: syncfs, fsync: folders)
        for (id, title) in [("1", "One"), ("2", "Two")] {
            let plan = try await sink.plan(song(id, title: title), asset: .preview)
            _ = try await sink.store(try fixture.staged(Data(title.utf8)), as: plan)
        }
        // The error may have been another program's file: both are stored, each fsynced on its own, and
        // the group is not asked again.
        #expect(try fixture.tree(fixture.root) == ["One.m4a": Data("One".utf8), "Two.m4a": Data("Two".utf8)])
        #expect(syncfs.calls.withLock { $0 } == 1)
        #expect(folders.calls.withLock { $0 } == 0)
    }

    @Test func aFailedGroupFsyncOfTheFolderIsTriedAgainByTheStore() async throws {
        let fixture = try Fixture()
        let (syncfs, folders) = (FakeFlush(), FakeFlush(failingWith: EIO))
        let sink = try Self.sink(fixture, syncfs: syncfs, fsync: folders)
        let plan = try await sink.plan(song("1", title: "One"), asset: .preview)
        // The group's fsync of the folder fails; the sink's own fsync of it (the real one) succeeds.
        _ = try await sink.store(try fixture.staged(Data("one".utf8)), as: plan)
        #expect(folders.calls.withLock { $0 } == 1)
        #expect(try fixture.tree(fixture.root) == ["One.m4a": Data("one".utf8)])
    }

    @Test func onAnotherKindOfFilesystemEachFileIsFsynced() async throws {
        let fixture = try Fixture()
        let (syncfs, folders) = (FakeFlush(), FakeFlush())
        let sink = DirectorySink(
            root: fixture.root, layout: try LayoutTemplate("{title}.{ext}"), sync: true,
            calls: .init(
                syncFilesystem: { syncfs($0) }, syncFolder: { folders($0) },
                filesystemType: { _ in 0x6573_5546 /* FUSE */ }))
        let plan = try await sink.plan(song("1", title: "One"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Data("one".utf8)), as: plan)
        #expect(syncfs.calls.withLock { $0 } == 0)
        #expect(folders.calls.withLock { $0 } == 0)
        #expect(try fixture.tree(fixture.root) == ["One.m4a": Data("one".utf8)])
    }

    @Test(.enabled(if: crossDeviceStage() != nil, "needs /dev/shm on another filesystem"))
    func aFileFromAnotherFilesystemIsFlushedOnItsOwn() async throws {
        guard let otherDevice = crossDeviceStage() else { return }
        let fixture = try Fixture()
        let stage = otherDevice.appendingPathComponent("mediafetch-flush-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: stage, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: stage) }
        let (syncfs, folders) = (FakeFlush(), FakeFlush())
        let sink = try Self.sink(fixture, syncfs: syncfs, fsync: folders)
        let plan = try await sink.plan(song("1", title: "One"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Data("one".utf8), in: stage), as: plan)
        // The copy and its folder were fsynced by the placement; the group was not asked.
        #expect(syncfs.calls.withLock { $0 } == 0)
        #expect(folders.calls.withLock { $0 } == 0)
        #expect(try fixture.tree(fixture.root) == ["One.m4a": Data("one".utf8)])
    }

    @Test func aBarrierAfterCloseIsRefused() async throws {
        let fixture = try Fixture()
        let folder = fixture.base
        let group = try GroupFlush(root: folder)
        group.close()
        await #expect(throws: SinkError.self) { try await group.barrier() }
    }

    @Test func aRealFlushReturns() async throws {
        let fixture = try Fixture()
        let folder = fixture.base
        let group = try GroupFlush(root: folder)
        defer { group.close() }
        try await group.barrier()
        #expect(group.waiting == 0)
    }
}
