import Foundation
import Synchronization
import Testing

@testable import MediaFetchCore

/// Who got a slot, in order.
private final class OrderLog: Sendable {
    let entries = Mutex<[Int]>([])
}

@Suite("Slots")
struct SlotsTests {
    @Test func waitersAreServedInTheOrderTheyCame() async throws {
        let slots = Slots(limit: 1)
        try await slots.acquire()
        let order = OrderLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<5 {
                group.addTask {
                    try await slots.acquire()
                    order.entries.withLock { $0.append(index) }
                    slots.release()
                }
                // Each waiter is queued before the next one starts.
                let deadline = ContinuousClock.now + .seconds(30)
                while slots.waiters < index + 1 && ContinuousClock.now < deadline { await Task.yield() }
            }
            #expect(slots.waiters == 5)
            slots.release()
            try await group.waitForAll()
        }
        #expect(order.entries.withLock { $0 } == [0, 1, 2, 3, 4])
        #expect(slots.available == 1)
    }

    @Test func waitersAheadGoFirstInTheirOwnOrder() async throws {
        let slots = Slots(limit: 1)
        try await slots.acquire()
        let order = OrderLog()
        // 0, 2 and 4 wait as usual, 1 and 3 ask to go ahead (a retry): 1, 3, then 0, 2, 4.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<5 {
                group.addTask {
                    try await slots.acquire(ahead: index % 2 == 1)
                    order.entries.withLock { $0.append(index) }
                    slots.release()
                }
                let deadline = ContinuousClock.now + .seconds(30)
                while slots.waiters < index + 1 && ContinuousClock.now < deadline { await Task.yield() }
            }
            #expect(slots.waiters == 5)
            slots.release()
            try await group.waitForAll()
        }
        #expect(order.entries.withLock { $0 } == [1, 3, 0, 2, 4])
        #expect(slots.available == 1)
    }

    @Test func aCancelledWaiterTakesNoSlot() async throws {
        let slots = Slots(limit: 1)
        try await slots.acquire()
        let waiter = Task { try await slots.acquire() }
        let deadline = ContinuousClock.now + .seconds(30)
        while slots.waiters < 1 && ContinuousClock.now < deadline { await Task.yield() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(slots.waiters == 0)
        slots.release()
        #expect(slots.available == 1)
    }

    @Test func closingEndsEveryWaitNowAndLater() async throws {
        let slots = Slots(limit: 1)
        try await slots.acquire()
        let waiter = Task { try await slots.acquire() }
        let deadline = ContinuousClock.now + .seconds(30)
        while slots.waiters < 1 && ContinuousClock.now < deadline { await Task.yield() }
        slots.close()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        slots.release()
        await #expect(throws: CancellationError.self) { try await slots.acquire() }
    }
}
