import Foundation
import MediaFetchCore
import Testing

/// Public errors can gain kinds without breaking a caller: codes compare and answer questions, and the error
/// underneath stays reachable.
struct ErrorTests {
    @Test func transportCodesCompareAndAnswer() {
        let status = TransportError(.httpStatus(503), url: nil, headers: ["Retry-After": "2"])
        #expect(status.code == .httpStatus(503) && status.code != .httpStatus(500))
        #expect(status.status == 503 && status.code.statusCode == 503)
        #expect(TransportError.Code.unsupportedScheme("ftp").refusedScheme == "ftp")
        #expect(TransportError.Code.tooManyRedirects(3).redirectLimit == 3)
        #expect(TransportError.Code.truncated(expected: 10, received: 4).truncation?.received == 4)
        #expect(TransportError.Code.bodyTooLarge(limit: 9).sizeLimit == 9)
        #expect(TransportError.Code.timedOut.statusCode == nil && TransportError.Code.timedOut.refusedScheme == nil)
        #expect(DownloadPolicy.isRetryable(status) && !DownloadPolicy.isRetryable(TransportError(.cancelled, url: nil)))
    }

    @Test func descriptionsSayWhatHappenedToWhat() throws {
        let url = try #require(URL(string: "https://audio.example/a.m4a"))
        #expect(
            String(describing: TransportError(.unsupportedScheme("file"), url: url))
                == "https://audio.example/a.m4a: refused scheme \"file\": only http and https are fetched, "
                + "redirects included")
        #expect(String(describing: TransportError(.timedOut, url: nil, detail: "after 30 s")).hasSuffix("(after 30 s)"))
    }

    @Test func theCauseIsKept() {
        let underneath = TransportError(.connectionFailed, url: nil)
        for error in [
            SourceError("the API could not be reached", cause: underneath) as any Error,
            SinkError("cannot store", cause: underneath), LedgerError("cannot open", cause: underneath),
            ConfigError("cannot read", at: nil, cause: underneath),
        ] {
            let cause: (any Error)? =
                (error as? SourceError)?.cause ?? (error as? SinkError)?.cause ?? (error as? LedgerError)?.cause
                ?? (error as? ConfigError)?.cause
            #expect((cause as? TransportError)?.code == .connectionFailed, "\(type(of: error))")
        }
        #expect(SourceError("plain").cause == nil)
    }
}
