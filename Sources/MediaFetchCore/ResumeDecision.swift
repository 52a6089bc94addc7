import Foundation

/// What the answer to a download means for the destination file: the one decision every ``Transport`` makes
/// from a response's status and headers before it writes a byte of the body, written once here.
///
/// * 206 to a request with `resumeFrom > 0`: the body goes after the kept bytes, if its `Content-Range` starts
///   exactly there (anything else is an error, never a splice) and its validator does not contradict the one
///   the kept bytes were fetched under (``TransportError/Code/changedDuringResume``).
/// * 200: the whole file, from byte zero; a resume that gets one ``restarts``.
/// * Any other status: ``TransportError/Code/httpStatus(_:)`` with the headers, the kept bytes untouched.
/// * A whole file larger than `request.maxBytes` is ``TransportError/Code/bodyTooLarge(limit:)`` before the
///   file is touched, so a resume's kept bytes survive a file that grew too big.
public struct ResumeDecision: Sendable, Hashable {
    /// The HTTP status of the answer: 200 or 206.
    public var status: Int
    /// Where the body starts in the file: the kept bytes on 206, zero on 200.
    public var base: Int64
    /// The whole file's size, when the answer tells it (`Content-Range`'s total, else base plus the length).
    public var expectedSize: Int64?
    /// True when the kept bytes are dropped and the whole file comes again (a 200 to a resume).
    public var restarts: Bool
    /// The answer's validator (its ETag or Last-Modified), for the next resume; nil when it has none.
    public var validator: Validator?

    /// Decides, or throws why the answer cannot be written.
    /// - Parameters:
    ///   - status: the final status, after redirects.
    ///   - headers: the final response's headers.
    ///   - contentLength: the body's length, when the answer gave one.
    ///   - request: the download asked for.
    ///   - url: where the answer came from, for errors.
    /// - Throws: ``TransportError``, as listed above.
    public init(
        status: Int, headers: HTTPHeaders, contentLength: Int64?, request: DownloadRequest, url: URL
    ) throws(TransportError) {
        self.status = status
        validator = Validator(headers: headers)
        switch status {
        case 206 where request.resumeFrom > 0:
            let header = headers["Content-Range"]
            guard let range = header.flatMap(ContentRange.init), range.start == request.resumeFrom else {
                throw TransportError(
                    .other, url: url,
                    detail: "the server sent a range that does not start at byte \(request.resumeFrom) "
                        + "(Content-Range: \(header ?? "none"))")
            }
            if request.validator?.isContradicted(by: validator) == true {
                throw TransportError(.changedDuringResume, url: url)
            }
            base = request.resumeFrom
            expectedSize = range.total ?? contentLength.map { request.resumeFrom + $0 }
            restarts = false
        case 200:
            base = 0
            expectedSize = contentLength
            restarts = request.resumeFrom > 0
        default:
            throw TransportError(.httpStatus(status), url: url, headers: headers)
        }
        if let limit = request.maxBytes, let expectedSize, expectedSize > limit {
            throw TransportError(.bodyTooLarge(limit: limit), url: url)
        }
    }

    /// What `request.onResponse` is told once the file is cut to ``base``.
    public var response: DownloadResponse {
        DownloadResponse(status: status, validator: validator, expectedSize: expectedSize, restarts: restarts)
    }
}
