import Foundation
import Synchronization

/// The `max-rate` of a transport: a token bucket that every download of the transport draws from, so the
/// limit holds for all of them together, across engine threads.
///
/// libcurl's own `CURLOPT_MAX_RECV_SPEED_LARGE` (7.88) let whole files through at full speed on a fast link:
/// it reads up to a second's worth before it looks at the rate, and the socket buffer holds that much. Here
/// each piece of body is paid for when it arrives. The bucket may go into debt: a transfer whose piece put
/// it there is paused (`CURL_WRITEFUNC_PAUSE`) until the debt is repaid, and takes that piece, already paid
/// for, when it goes on. Whoever pays later waits longer, so paused transfers take turns instead of the
/// first one woken taking every refill.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    /// Bytes a second.
    let rate: Double
    /// The most that may arrive at once after a quiet spell: a tenth of a second's worth, and at least two of
    /// libcurl's pieces (16 KiB each).
    let burst: Double
    private let bucket: Mutex<Bucket>

    init(bytesPerSecond: Int64) {
        rate = Double(max(1, bytesPerSecond))
        burst = max(rate / 10, 32_768)
        bucket = Mutex(Bucket(tokens: burst, refilled: .now))
    }

    /// Pays for `count` bytes: nil when the bucket covered them, or how long until the debt they left is repaid.
    func pay(_ count: Int) -> Duration? {
        let now = ContinuousClock.now
        return bucket.withLock { bucket in
            bucket.tokens = min(burst, bucket.tokens + rate * (now - bucket.refilled).seconds)
            bucket.refilled = now
            bucket.tokens -= Double(count)
            guard bucket.tokens < 0 else { return nil }
            return .microseconds(Int64((-bucket.tokens / rate * 1_000_000).rounded(.up)))
        }
    }
}
