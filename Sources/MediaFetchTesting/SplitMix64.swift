/// A tiny deterministic generator, so that randomized tests are the same on every run: SplitMix64, whose
/// finaliser ``MockRandom/mix(_:)`` the mock catalog uses too.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        // mix adds the step itself: the output is the finaliser of the advanced state.
        defer { state &+= 0x9E37_79B9_7F4A_7C15 }
        return MockRandom.mix(state)
    }
}

extension SplitMix64 {
    /// Text of `count` pieces (a number drawn from the range) drawn from `pieces`, joined: the inputs of the
    /// seeded tests that compare a fast path with the rule it stands for.
    public mutating func text(of pieces: [String], count: ClosedRange<Int>) -> String {
        (0..<Int.random(in: count, using: &self)).map { _ in pieces.randomElement(using: &self) ?? "" }.joined()
    }
}
