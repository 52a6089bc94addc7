import Foundation
import Synchronization

/// The `max-rate` of a transport: a token bucket that every download of the transport draws from, so the
/// limit holds for all of them together, across engine threads.
///
/// libcurl's own `CURLOPT_MAX_RECV_SPEED_LARGE` (7.88) let whole files through at full speed on a fast link:
/// it reads up to a second's worth before it looks at the rate, and the socket buffer holds that much. Here
/// each piece of body is paid for before it is taken; a transfer that cannot pay is paused
/// (`CURL_WRITEFUNC_PAUSE`) until it can.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var refilled: ContinuousClock.Instant
    }

    /// Bytes a second.
    let rate: Double
    /// The most that may arrive at once after a quiet spell: a tenth of a second's worth, and at least two of
    /// libcurl's pieces (16 KiB each), so that any piece can be paid for.
    let burst: Double
    private let bucket: Mutex<Bucket>

    init(bytesPerSecond: Int64) {
        rate = Double(max(1, bytesPerSecond))
        burst = max(rate / 10, 32_768)
        bucket = Mutex(Bucket(tokens: burst, refilled: .now))
    }

    /// Pays for `count` bytes: nil when they may be taken now, or how long to wait before asking again.
    func take(_ count: Int) -> Duration? {
        let now = ContinuousClock.now
        return bucket.withLock { bucket in
            bucket.tokens = min(burst, bucket.tokens + rate * Self.seconds(now - bucket.refilled))
            bucket.refilled = now
            let cost = Double(count)
            // A piece bigger than the bucket is let through from a full one, leaving a debt.
            if bucket.tokens >= min(cost, burst) {
                bucket.tokens -= cost
                return nil
            }
            return .microseconds(Int64(((min(cost, burst) - bucket.tokens) / rate * 1_000_000).rounded(.up)))
        }
    }

    private static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) / 1e18
    }
}
