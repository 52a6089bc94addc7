import Foundation
import Testing

@testable import MediaFetchCore

/// The pipeline's two decisions about kept bytes, on their own: where a download goes on from, and what follows
/// a failed attempt.
struct ResumePointTests {
    static let url = URL(fileURLWithPath: "/a.m4a")

    static func entry(etag: String? = "\"v1\"", url: URL = url, expected: Int64? = 1000) -> LedgerEntry {
        LedgerEntry(
            key: LedgerKey(source: "s", itemID: "1", asset: .preview), title: "A", url: url.absoluteString,
            validator: etag.map { Validator(etag: $0) }, expectedBytes: expected, receivedBytes: 0, sha256: nil,
            status: .partial, reason: nil, attempts: 1, location: nil, updatedAt: Date())
    }

    @Test func keptBytesUnderAKnownValidatorGoOn() {
        let point = ResumePoint.decide(kept: 400, entry: Self.entry(), url: Self.url, refetch: false)
        #expect(point == ResumePoint(offset: 400, validator: Validator(etag: "\"v1\"")))
    }

    @Test func anythingThatSpeaksAgainstTheKeptBytesStartsOver() throws {
        let other = try #require(URL(string: "https://elsewhere.example/a.m4a"))
        let cases: [(String, Int64, LedgerEntry?, Bool)] = [
            ("nothing kept", 0, Self.entry(), false),
            ("no ledger entry", 400, nil, false),
            ("no validator", 400, Self.entry(etag: nil), false),
            ("the URL changed", 400, Self.entry(url: other), false),
            ("more than the whole file", 1001, Self.entry(), false),
            ("refetch", 400, Self.entry(), true),
        ]
        for (what, kept, entry, refetch) in cases {
            #expect(ResumePoint.decide(kept: kept, entry: entry, url: Self.url, refetch: refetch) == .start, "\(what)")
        }
    }
}

struct RetryDecisionTests {
    static let policy = DownloadPolicy(retries: 2, retryMaxWait: .seconds(60), retryBudget: .seconds(30))

    static func decide(
        _ error: any Error, response: DownloadResponse? = nil, attempt: Int = 1, elapsed: Duration = .zero
    ) -> RetryDecision {
        RetryDecision(
            error: error, response: response, keptBytes: 500, attempt: attempt, elapsed: elapsed, policy: policy)
    }

    @Test func aDroppedConnectionKeepsItsBytesAndIsTriedAgain() {
        let decision = Self.decide(TransportError(.connectionFailed, url: nil))
        #expect(decision.kept == .unchanged)
        guard case .retry(let wait) = decision.next else {
            Issue.record("expected a retry, got \(decision.next)")
            return
        }
        // Full jitter: anywhere from nothing to the first step (0 ms comes up once in 500 draws, so `> .zero` failed
        // now and then on CI).
        #expect(wait >= .zero && wait <= Self.policy.retryBase)
    }

    @Test func bytesAnsweredUnderAValidatorAreResumedAndWithoutOneDiscarded() {
        let truncated = TransportError(.truncated(expected: 1000, received: 500), url: nil)
        let validated = DownloadResponse(
            status: 200, validator: Validator(etag: "\"v\""), expectedSize: 1000, restarts: false)
        #expect(
            Self.decide(truncated, response: validated).kept
                == .resume(offset: 500, validator: Validator(etag: "\"v\""), expectedSize: 1000))
        let bare = DownloadResponse(status: 200, validator: nil, expectedSize: 1000, restarts: false)
        #expect(Self.decide(truncated, response: bare).kept == .discard)
    }

    @Test func anotherVersionStartsOverAtOnce() {
        for error in [
            TransportError(.httpStatus(416), url: nil), TransportError(.changedDuringResume, url: nil),
        ] {
            let decision = Self.decide(error)
            #expect(decision.kept == .discard && decision.next == .retry(after: .zero), "\(error)")
        }
    }

    @Test func aServersRetryAfterIsTheWait() {
        let throttled = TransportError(.httpStatus(429), url: nil, headers: ["Retry-After": "7"])
        #expect(Self.decide(throttled).next == .retry(after: .seconds(7)))
    }

    @Test func finalErrorsUsedRetriesAndASpentBudgetEndIt() {
        #expect(Self.decide(TransportError(.httpStatus(404), url: nil)).next == .giveUp)
        #expect(Self.decide(PipelineError("served as text/html")).next == .giveUp)
        #expect(Self.decide(TransportError(.timedOut, url: nil), attempt: 3).next == .giveUp)
        #expect(Self.decide(TransportError(.timedOut, url: nil), elapsed: .seconds(31)).next == .outOfTime)
    }
}
