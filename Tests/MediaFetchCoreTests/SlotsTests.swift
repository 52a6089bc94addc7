import Foundation
import MediaFetchTesting
import Synchronization
import Testing

@testable import MediaFetchCore

/// Who got a slot, in order.
private final class OrderLog: Sendable {
    let entries = Mutex<[Int]>([])
}

@Suite("Slots")
struct SlotsTests {
    /// Five waiters queue one after another behind a held slot (those `ahead` picks ask to go ahead), then the
    /// slot is given back: the order in which they got it.
    static func order(ahead: @escaping @Sendable (Int) -> Bool = { _ in false }) async throws -> [Int] {
        let slots = Slots(limit: 1)
        try await slots.acquire()
        let order = OrderLog()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<5 {
                group.addTask {
                    try await slots.acquire(ahead: ahead(index))
                    order.entries.withLock { $0.append(index) }
                    slots.release()
                }
                // Each waiter is queued before the next one starts.
                await yield(until: { slots.waiters >= index + 1 })
            }
            #expect(slots.waiters == 5)
            slots.release()
            try await group.waitForAll()
        }
        #expect(slots.available == 1)
        return order.entries.withLock { $0 }
    }

    @Test func waitersAreServedInTheOrderTheyCame() async throws {
        #expect(try await Self.order() == [0, 1, 2, 3, 4])
    }

    /// 0, 2 and 4 wait as usual, 1 and 3 ask to go ahead (a retry): 1, 3, then 0, 2, 4.
    @Test func waitersAheadGoFirstInTheirOwnOrder() async throws {
        #expect(try await Self.order(ahead: { $0 % 2 == 1 }) == [1, 3, 0, 2, 4])
    }

    /// One slot, taken, and a task queued for it.
    static func takenWithOneWaiter() async throws -> (Slots, Task<Void, any Error>) {
        let slots = Slots(limit: 1)
        try await slots.acquire()
        let waiter = Task { try await slots.acquire() }
        await yield(until: { slots.waiters >= 1 })
        return (slots, waiter)
    }

    @Test func aCancelledWaiterTakesNoSlot() async throws {
        let (slots, waiter) = try await Self.takenWithOneWaiter()
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(slots.waiters == 0)
        slots.release()
        #expect(slots.available == 1)
    }

    /// A count there can never be room for is an error at once, not a wait that never ends; nothing is taken.
    @Test func askingForMoreThanThereAreFailsAtOnce() async throws {
        let budget = Slots(limit: 10)
        let error = await #expect(throws: SlotsError.self) { try await budget.acquire(11) }
        #expect(error?.description == "asked for 11 slots of 10: at most 10 can ever be free at once")
        await #expect(throws: SlotsError.self) { try await budget.acquire(-1) }
        #expect(budget.available == 10 && budget.waiters == 0)
        try await budget.acquire(10)
        #expect(budget.available == 0)
    }

    @Test func closingEndsEveryWaitNowAndLater() async throws {
        let (slots, waiter) = try await Self.takenWithOneWaiter()
        slots.close()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        slots.release()
        await #expect(throws: CancellationError.self) { try await slots.acquire() }
    }

    /// Several slots at a time (the foundation transport's budget of bytes): first come first served, a large wait
    /// holds back a small one behind it, and a wait cancelled leaves the slots whole.
    @Test func weightedTakesWaitInOrderAndACancelledWaitLeavesTheSlotsWhole() async throws {
        let budget = Slots(limit: 10)
        try await budget.acquire(6)
        let order = OrderLog()
        let large = Task {
            try await budget.acquire(8)
            order.entries.withLock { $0.append(8) }
        }
        await yield(until: { budget.waiters == 1 })
        #expect(budget.waiters == 1)
        // Room for it now, but it came after the large one: it waits behind it.
        let small = Task {
            try await budget.acquire(2)
            order.entries.withLock { $0.append(2) }
        }
        await yield(until: { budget.waiters == 2 })
        #expect(budget.waiters == 2)
        let cancelled = Task { try await budget.acquire(1) }
        await yield(until: { budget.waiters == 3 })
        #expect(budget.waiters == 3)
        cancelled.cancel()
        await #expect(throws: CancellationError.self) { try await cancelled.value }
        #expect(budget.waiters == 2)
        // Room for the large one only: it goes, and the small one behind it still waits. (Released together, both
        // went at once, and the order of their log entries was the task pool's: a full run of the tests logged [2, 8].)
        budget.release(4)
        try await large.value
        #expect(order.entries.withLock { $0 } == [8])
        #expect(budget.waiters == 1)
        budget.release(2)
        try await small.value
        #expect(order.entries.withLock { $0 } == [8, 2])
        #expect(budget.waiters == 0)
        budget.release(10)
        // All ten are free again: a take of the whole budget goes at once.
        try await budget.acquire(10)
        #expect(budget.waiters == 0)
    }

    /// A large wait at the head that is cancelled lets in the smaller ones it held back.
    @Test func cancellingALargeWaitLetsTheSmallerOnesBehindIt() async throws {
        let slots = Slots(limit: 10)
        try await slots.acquire(6)
        let large = Task { try await slots.acquire(8) }
        await yield(until: { slots.waiters == 1 })
        #expect(slots.waiters == 1)
        let small = Task { try await slots.acquire(3) }
        await yield(until: { slots.waiters == 2 })
        #expect(slots.waiters == 2)
        large.cancel()
        await #expect(throws: CancellationError.self) { try await large.value }
        try await small.value
        #expect(slots.available == 1 && slots.waiters == 0)
    }
}
