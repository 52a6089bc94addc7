import Foundation
import MediaFetchCore
import Testing

/// The decision both transports make from a download's answer, on its own.
struct ResumeDecisionTests {
    static let url = URL(fileURLWithPath: "/x")

    static func resume(from offset: Int64, etag: String? = "\"v1\"", maxBytes: Int64? = nil) -> DownloadRequest {
        DownloadRequest(
            url: url, destination: url, resumeFrom: offset, validator: etag.map { Validator(etag: $0) },
            maxBytes: maxBytes)
    }

    @Test func aRangeFromTheKeptBytesIsAppended() throws {
        let decision = try ResumeDecision(
            status: 206, headers: ["Content-Range": "bytes 100-999/1000", "ETag": "\"v1\""], contentLength: 900,
            request: Self.resume(from: 100), url: Self.url)
        #expect(decision.base == 100 && decision.expectedSize == 1000 && !decision.restarts)
        #expect(decision.response == DownloadResponse(
            status: 206, validator: Validator(etag: "\"v1\""), expectedSize: 1000, restarts: false))
    }

    @Test func aRangeWithoutATotalIsSizedByItsLength() throws {
        let decision = try ResumeDecision(
            status: 206, headers: ["Content-Range": "bytes 100-999/*"], contentLength: 900,
            request: Self.resume(from: 100), url: Self.url)
        #expect(decision.expectedSize == 1000)
    }

    @Test func aWholeFileToAResumeRestarts() throws {
        let decision = try ResumeDecision(
            status: 200, headers: ["ETag": "\"v2\""], contentLength: 1000, request: Self.resume(from: 100),
            url: Self.url)
        #expect(decision.base == 0 && decision.restarts && decision.expectedSize == 1000)
        let fresh = try ResumeDecision(
            status: 200, headers: [:], contentLength: nil, request: Self.resume(from: 0), url: Self.url)
        #expect(!fresh.restarts && fresh.expectedSize == nil && fresh.validator == nil)
    }

    @Test func aRangeElsewhereIsNeverSpliced() {
        for header in ["bytes 50-999/1000", "garbage", nil] {
            var headers = HTTPHeaders()
            headers.set("Content-Range", header)
            #expect(throws: TransportError.self, "\(header ?? "no Content-Range")") {
                try ResumeDecision(
                    status: 206, headers: headers, contentLength: 900, request: Self.resume(from: 100), url: Self.url)
            }
        }
    }

    @Test func aRangeOfAnotherVersionIsAChange() {
        let error = #expect(throws: TransportError.self) {
            try ResumeDecision(
                status: 206, headers: ["Content-Range": "bytes 100-999/1000", "ETag": "\"v2\""], contentLength: 900,
                request: Self.resume(from: 100), url: Self.url)
        }
        #expect(error?.code == .changedDuringResume)
    }

    @Test func otherStatusesCarryTheirHeaders() {
        let error = #expect(throws: TransportError.self) {
            try ResumeDecision(
                status: 429, headers: ["Retry-After": "5"], contentLength: 0, request: Self.resume(from: 0),
                url: Self.url)
        }
        #expect(error?.status == 429 && error?.headers?["Retry-After"] == "5")
        // A range nobody asked for is not a file either.
        #expect(throws: TransportError.self) {
            try ResumeDecision(
                status: 206, headers: ["Content-Range": "bytes 0-9/10"], contentLength: 10,
                request: Self.resume(from: 0), url: Self.url)
        }
    }

    @Test func aFileOverTheLimitIsRefusedBeforeItIsTouched() {
        let error = #expect(throws: TransportError.self) {
            try ResumeDecision(
                status: 206, headers: ["Content-Range": "bytes 100-1999/2000"], contentLength: 1900,
                request: Self.resume(from: 100, maxBytes: 1000), url: Self.url)
        }
        #expect(error?.code == .bodyTooLarge(limit: 1000))
    }
}
