import Foundation
import MediaFetchCore
import Testing

struct DownloadPolicyTests {
    @Test func retryAfterInSecondsAndAsAnHTTPDate() throws {
        let now = Date(timeIntervalSince1970: 1_764_400_000)
        #expect(DownloadPolicy.parseRetryAfter("7", now: now) == 7)
        #expect(DownloadPolicy.parseRetryAfter(" 0 ", now: now) == 0)
        let later = now.addingTimeInterval(42)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let seconds = try #require(DownloadPolicy.parseRetryAfter(formatter.string(from: later), now: now))
        #expect(abs(seconds - 42) < 1)
        // A date in the past means now; nonsense means no advice.
        #expect(DownloadPolicy.parseRetryAfter(formatter.string(from: now.addingTimeInterval(-60)), now: now) == 0)
        #expect(DownloadPolicy.parseRetryAfter("soon", now: now) == nil)
    }

    @Test func retryAfterIsCappedByRetryMaxWait() {
        let policy = DownloadPolicy(retryMaxWait: .seconds(5))
        #expect(policy.delay(attempt: 1, retryAfter: "3600") == .seconds(5))
        #expect(policy.delay(attempt: 1, retryAfter: "2") == .seconds(2))
        // A number far past what fits in an Int64 of milliseconds is capped, not a crash.
        #expect(policy.delay(attempt: 1, retryAfter: "10000000000000000") == .seconds(5))
    }

    @Test func aResumeAnsweredWithAnotherVersionIsCaught() {
        let sent = Validator(etag: "\"v1\"", lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(sent.isContradicted(by: Validator(etag: "\"v2\"")))
        #expect(!sent.isContradicted(by: Validator(etag: "\"v1\"")))
        #expect(!sent.isContradicted(by: nil))
        let dated = Validator(lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")
        #expect(dated.isContradicted(by: Validator(lastModified: "Tue, 02 Jan 2024 00:00:00 GMT")))
        #expect(!dated.isContradicted(by: Validator(lastModified: "Mon, 01 Jan 2024 00:00:00 GMT")))
    }

    /// Full jitter: a random wait up to the exponential step, never past the cap.
    @Test func backoffDoublesUpToTheCapWithFullJitter() {
        let policy = DownloadPolicy(retryMaxWait: .seconds(3), retryBase: .milliseconds(500))
        let top = { (attempt: Int) in policy.delay(attempt: attempt, retryAfter: nil, random: { $0 }) }
        #expect(top(1) == .milliseconds(500))
        #expect(top(2) == .seconds(1))
        #expect(top(3) == .seconds(2))
        #expect(top(4) == .seconds(3))
        #expect(top(10) == .seconds(3))
        #expect(policy.delay(attempt: 3, retryAfter: nil, random: { _ in 0 }) == .zero)
    }

    @Test(arguments: [
        ("audio/mp4", AssetKind.preview, true), ("audio/x-m4a; charset=binary", .preview, true),
        ("video/x-m4v", .preview, true), ("text/html; charset=utf-8", .preview, false),
        ("image/jpeg", .artwork, true), ("text/html", .artwork, false), ("application/octet-stream", .preview, true),
    ])
    func contentTypesPerAsset(type: String, asset: AssetKind, accepted: Bool) {
        #expect(DownloadPolicy().accepts(contentType: type, for: asset) == accepted)
    }

    @Test func whatIsWorthRetrying() {
        let url = URL(string: "http://127.0.0.1/x")
        for status in [408, 429, 500, 502, 503, 504] {
            #expect(DownloadPolicy.isRetryable(TransportError(.httpStatus(status), url: url)))
        }
        for status in [400, 401, 403, 404, 410, 416] {
            #expect(!DownloadPolicy.isRetryable(TransportError(.httpStatus(status), url: url)))
        }
        #expect(DownloadPolicy.isRetryable(TransportError(.truncated(expected: 10, received: 5), url: url)))
        #expect(!DownloadPolicy.isRetryable(TransportError(.unsupportedScheme("ftp"), url: url)))
    }
}

/// `max-size` keeps a preview run from pulling hours of audio: 50 MB unless the config says a size, and `none`
/// lifts it.
struct MaxSizeTests {
    static func policy(_ download: String?) throws -> DownloadPolicy {
        let section = download.map { "download:\n  max-size: \($0)\n" } ?? ""
        return try ConfigFixtures.load("source:\n  term: x\n" + section).downloadPolicy
    }

    @Test func leftOutItIsFiftyMegabytes() throws {
        #expect(try Self.policy(nil).maxSize == 50_000_000)
        #expect(DownloadPolicy.defaultMaxSize == 50_000_000)
        // A policy made in code and a spec made by hand (no defaults filled in) get the same limit.
        #expect(DownloadPolicy().maxSize == 50_000_000)
        #expect(DownloadPolicy(options: PluginOptions(section: "download")).maxSize == 50_000_000)
    }

    @Test(arguments: [("20MB", Int64(20_000_000)), ("1GiB", Int64(1 << 30)), ("1048576", Int64(1_048_576))])
    func aSizeIsTaken(text: String, bytes: Int64) throws {
        #expect(try Self.policy(text).maxSize == bytes)
    }

    @Test(arguments: ["none", "None", "NONE"])
    func noneLiftsTheLimit(text: String) throws {
        #expect(try Self.policy(text).maxSize == nil)
    }

    @Test func anythingElseIsAnErrorThatSaysNoneIsAllowed() throws {
        let error = #expect(throws: ConfigError.self) { try Self.policy("unlimited") }
        #expect(error?.description.contains("or none") == true)
        #expect(error?.description.contains("test.yaml:4:13") == true)
    }

    @Test func theLimitIsNamedWhenAFileIsTooLarge() {
        let error = TransportError(.bodyTooLarge(limit: 50_000_000), url: URL(string: "http://127.0.0.1/ep.mp3"))
        #expect(error.description.contains("50000000 bytes (50 MB, download.max-size"))
        #expect(error.description.contains("none for no limit"))
        #expect(TransportError(.bodyTooLarge(limit: 1_500_000), url: nil).description.contains("(1.5 MB,"))
    }
}
