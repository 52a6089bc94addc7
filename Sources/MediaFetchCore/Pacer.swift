/// Spaces calls out evenly: at most `requestsPerMinute` a minute, none faster than the interval.
///
/// Shared by everything that calls one API, so that paging and retries together stay polite.
public actor Pacer {
    private let interval: Duration?
    private var nextSlot: ContinuousClock.Instant?

    /// - Parameter requestsPerMinute: 0 means unpaced.
    public init(requestsPerMinute: Int) {
        interval = requestsPerMinute > 0 ? .seconds(60) / requestsPerMinute : nil
    }

    /// Waits for the next free slot and takes it.
    /// - Throws: `CancellationError` when the task is cancelled while waiting.
    public func wait() async throws {
        guard let interval else { return }
        let now = ContinuousClock.now
        // The slot is taken before sleeping, so callers that arrive while one sleeps queue up behind it.
        let slot = max(now, nextSlot ?? now)
        nextSlot = slot + interval
        if slot > now { try await Task.sleep(until: slot, clock: .continuous) }
    }
}
