import Foundation
import MediaFetchCore
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

    @Test func barriersThatArriveDuringAFlushShareTheNextOne() async throws {
        let fixture = try Fixture()
        let folder = fixture.base
        let fake = FakeFlush(holdsFirst: true)
        let group = try GroupFlush(root: folder, flush: { fake($0) })
        defer { group.close() }

        // The first barrier starts a flush that stays in progress until the gate opens.
        let first = Task { try await group.barrier() }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                fake.entered.wait()
                done.resume()
            }
        }
        // Ten barriers arrive meanwhile: none may be served by the flush already running.
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            for _ in 0..<10 { tasks.addTask { try await group.barrier() } }
            let deadline = ContinuousClock.now + .seconds(30)
            while group.waiting < 10 && ContinuousClock.now < deadline { await Task.yield() }
            #expect(group.waiting == 10)
            #expect(fake.calls.withLock { $0 } == 1)
            fake.gate.signal()
            try await first.value
            try await tasks.waitForAll()
        }
        // One flush for the first barrier, one shared by the ten that came during it.
        #expect(fake.calls.withLock { $0 } == 2)
    }

    @Test func aFailedFlushFailsEveryLaterBarrierWithoutFlushingAgain() async throws {
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
        // Once the disk said no, nothing is flushed (or trusted) again.
        #expect(fake.calls.withLock { $0 } == 1)
    }

    // MARK: - Through the directory sink

    @Test func aSyncedStoreFlushesBeforeAndAfterItsRename() async throws {
        let fixture = try Fixture()
        let fake = FakeFlush()
        let sink = DirectorySink(
            root: fixture.root, layout: try LayoutTemplate("{title}.{ext}"), sync: true, flushCall: { fake($0) })
        let plan = try await sink.plan(song("1", title: "One"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Data("one".utf8)), as: plan)
        #expect(fake.calls.withLock { $0 } == 2)
        #expect(try fixture.tree(fixture.root) == ["One.m4a": Data("one".utf8)])
    }

    @Test func aFailedFlushFailsTheStoreNamingItAndKeepsTheOldFile() async throws {
        let fixture = try Fixture()
        let fake = FakeFlush(failingWith: EIO)
        let sink = DirectorySink(
            root: fixture.root, layout: try LayoutTemplate("{title}.{ext}"), sync: true, flushCall: { fake($0) })
        try FileManager.default.createDirectory(at: fixture.root, withIntermediateDirectories: true)
        try Data("old".utf8).write(to: fixture.root.appendingPathComponent("One.m4a"))
        let plan = try await sink.plan(song("1", title: "One"), asset: .preview)
        await #expect {
            _ = try await sink.store(try fixture.staged(Data("new".utf8)), as: plan)
        } throws: { error in
            let text = String(describing: error)
            return text.contains("One.m4a") && text.contains("could not be flushed")
                && text.contains("Input/output error")
        }
        #expect(try Data(contentsOf: fixture.root.appendingPathComponent("One.m4a")) == Data("old".utf8))
    }

    @Test(.enabled(if: crossDeviceStage() != nil, "needs /dev/shm on another filesystem"))
    func aFileFromAnotherFilesystemIsFlushedOnItsOwn() async throws {
        guard let otherDevice = crossDeviceStage() else { return }
        let fixture = try Fixture()
        let stage = otherDevice.appendingPathComponent("mediafetch-flush-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: stage, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: stage) }
        let fake = FakeFlush()
        let sink = DirectorySink(
            root: fixture.root, layout: try LayoutTemplate("{title}.{ext}"), sync: true, flushCall: { fake($0) })
        let plan = try await sink.plan(song("1", title: "One"), asset: .preview)
        _ = try await sink.store(try fixture.staged(Data("one".utf8), in: stage), as: plan)
        // The copy and its folder were fsynced; the group flush of the root's filesystem was not asked.
        #expect(fake.calls.withLock { $0 } == 0)
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
