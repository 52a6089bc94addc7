/// Yields until `condition` holds, or until `limit` has passed: a test waits for a state (waiters queued, a
/// flush entered), not for a time, and the limit only keeps a broken build from hanging. The caller then
/// checks the condition itself, so a limit that ran out fails the test.
public func yield(until condition: () -> Bool, atMost limit: Duration = .seconds(30)) async {
    let deadline = ContinuousClock.now + limit
    while !condition() && ContinuousClock.now < deadline { await Task.yield() }
}
