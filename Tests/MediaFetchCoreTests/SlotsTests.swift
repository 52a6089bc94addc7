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

    @Test func partialFilesOfAnEarlierLayoutMoveIntoTheirSubfolder() throws {
        let staging = FileManager.default.temporaryDirectory.appendingPathComponent("staging-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: staging) }
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        let name = Pipeline.stagingName(source: "itunes", itemID: "1440857781", asset: .preview)
        try Data("kept bytes".utf8).write(to: staging.appendingPathComponent(name))

        try Pipeline.prepareStaging(staging)

        let file = Pipeline.stagingFile(in: staging, source: "itunes", itemID: "1440857781", asset: .preview)
        #expect(file.deletingLastPathComponent().deletingLastPathComponent().path == staging.path)
        #expect(try Data(contentsOf: file) == Data("kept bytes".utf8))
        #expect(Pipeline.partialFiles(in: staging) == [file])
    }
}
