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

    @Test func aFailedFlushIsAnErrorNamingTheFolder() async throws {
        let fixture = try Fixture()
        let folder = fixture.base
        let fake = FakeFlush(failingWith: EIO)
        let group = try GroupFlush(root: folder, flush: { fake($0) })
        defer { group.close() }
        await #expect {
            try await group.barrier()
        } throws: { error in
            let text = String(describing: error)
            return text.contains(folder.path) && text.contains("Input/output error")
        }
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
