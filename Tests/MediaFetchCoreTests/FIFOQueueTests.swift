import Testing

@testable import MediaFetchCore

@Suite("FIFO queue")
struct FIFOQueueTests {
    /// Elements come out in the order they went in, across the moves that drop taken slots, and whatever is removed
    /// from the middle or taken all at once.
    @Test func elementsComeOutInTheOrderTheyWentIn() {
        var queue = FIFOQueue<Int>()
        var expected: [Int] = []
        var taken: [Int] = []
        for value in 0..<200 {
            queue.append(value)
            expected.append(value)
            // Two in, one out: the taken slots pass 32 and half the array many times.
            if value % 2 == 1, let first = queue.popFirst() { taken.append(first) }
        }
        #expect(queue.remove { $0 == 150 } == 150)
        #expect(queue.remove { $0 == 150 } == nil)
        expected.removeAll { $0 == 150 }
        taken += queue.removeAll()
        #expect(taken == expected)
        #expect(queue.count == 0)
        #expect(queue.popFirst() == nil)
    }

    /// A queue keeps nothing it handed out alive: a waiting transfer or job that was taken is freed when its taker is
    /// done with it, not when the queue next drops its taken slots.
    @Test func aTakenElementIsNotKeptAlive() {
        final class Box {}
        var queue = FIFOQueue<Box>()
        weak var first: Box?
        do {
            let box = Box()
            first = box
            queue.append(box)
        }
        for _ in 0..<3 { queue.append(Box()) }
        _ = queue.popFirst()
        #expect(first == nil)
        #expect(queue.count == 3)
    }
}
