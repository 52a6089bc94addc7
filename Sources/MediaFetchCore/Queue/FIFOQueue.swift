/// Elements in the order they came, taken from the front without moving the rest each time: taken ones are dropped
/// in one move once they are half the array (or all of it), not one by one; a taken slot lets go of its element at
/// once, so that the queue keeps nothing it handed out alive. The pipeline's ``JobQueue`` and the curl
/// transport's transfers waiting for their server's ramp use it (`package`: shared by this package's modules, not
/// public API).
package struct FIFOQueue<Element> {
    /// Taken slots, before `head`, are nil.
    private var elements: [Element?] = []
    /// The oldest element not yet taken.
    private var head = 0

    package init() {}

    /// Elements not yet taken.
    package var count: Int { elements.count - head }

    package mutating func append(_ element: Element) {
        elements.append(element)
    }

    /// Takes the oldest element.
    package mutating func popFirst() -> Element? {
        guard head < elements.count else { return nil }
        let element = elements[head].take()
        head += 1
        if head == elements.count {
            elements.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32 && head * 2 >= elements.count {
            elements.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Takes the oldest element that `matches`, wherever it is.
    package mutating func remove(where matches: (Element) -> Bool) -> Element? {
        guard let index = elements[head...].firstIndex(where: { $0.map(matches) ?? false }) else { return nil }
        return elements.remove(at: index)
    }

    /// Takes every element, oldest first.
    package mutating func removeAll() -> [Element] {
        defer {
            elements.removeAll(keepingCapacity: true)
            head = 0
        }
        return elements[head...].compactMap { $0 }
    }
}
