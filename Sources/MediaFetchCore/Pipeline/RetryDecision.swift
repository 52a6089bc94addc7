import Foundation

/// What follows a failed attempt at a download: what becomes of the bytes it kept, and whether (and when) it
/// is tried again. Pure: the pipeline applies it.
struct RetryDecision: Sendable, Hashable {
    /// What the next attempt goes on from.
    enum KeptBytes: Sendable, Hashable {
        /// As they were: the attempt got no answer (a refused connection, a 5xx), so nothing changed them.
        case unchanged
        /// The attempt's answer came with a validator: go on from `offset` bytes under it.
        case resume(offset: Int64, validator: Validator?, expectedSize: Int64?)
        /// Start over: bytes without a validator cannot be resumed safely, and a 416 or a changed file says the
        /// kept bytes are not a prefix of what the server has.
        case discard
    }

    /// Whether to try again.
    enum Next: Sendable, Hashable {
        case retry(after: Duration)
        /// Worth another attempt, but the item's retry budget would be spent before it began.
        case outOfTime
        /// Not worth another attempt (a 404, a refused scheme), or every retry is used.
        case giveUp
    }

    var kept: KeptBytes
    var next: Next

    /// - Parameters:
    ///   - error: what the attempt threw.
    ///   - response: the head of the answer the attempt got, if one came before it failed.
    ///   - keptBytes: the staging file's size now.
    ///   - attempt: how many attempts have failed, this one included (1 after the first).
    ///   - elapsed: the time since the item's first attempt began.
    ///   - policy: retries, delays and the retry budget.
    init(
        error: any Error, response: DownloadResponse?, keptBytes: Int64, attempt: Int, elapsed: Duration,
        policy: DownloadPolicy
    ) {
        let transportError = error as? TransportError
        let otherVersion = transportError?.status == 416 || transportError?.code == .changedDuringResume
        if let response {
            kept =
                response.validator?.ifRangeValue != nil
                ? .resume(offset: keptBytes, validator: response.validator, expectedSize: response.expectedSize)
                : .discard
        } else {
            kept = otherVersion ? .discard : .unchanged
        }
        let retryable = transportError.map { DownloadPolicy.isRetryable($0) || $0.status == 416 } ?? false
        guard retryable, attempt <= policy.retries else {
            next = .giveUp
            return
        }
        // Starting over after a 416 or a changed file needs no delay: the server answered at once.
        let wait =
            otherVersion ? .zero : policy.delay(attempt: attempt, retryAfter: transportError?.headers?["Retry-After"])
        next = elapsed + wait <= policy.retryBudget ? .retry(after: wait) : .outOfTime
    }
}
