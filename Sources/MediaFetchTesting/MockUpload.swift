import Foundation
import MediaFetchCore

/// What the mock server answers to a PUT or POST under ``pathPrefix`` (an upload; elsewhere those methods get 405):
/// it reads the body as it comes, never holding it,
/// and answers `200` with the body's length and SHA-256, in JSON and in the `X-Received-Bytes` and
/// `X-Received-SHA256` headers, so that a test checks the exact bytes arrived. ``MockRequest/uploadedBytes`` and
/// ``MockRequest/uploadedSHA256`` keep them in the request log.
///
/// Faults apply to the body as it is read: ``MockFault/stall(afterBytes:seconds:)`` stops reading after that many
/// bytes (the client's sends then block), ``MockFault/reset(afterBytes:)`` resets the connection there, and
/// ``MockFault/respond(status:headers:body:)`` answers that instead once the whole body is in.
public enum MockUpload {
    /// Uploads go to paths below this one: `/upload/object.bin`.
    public static let pathPrefix = "/upload/"

    /// The answer's headers and body for a body of `bytes` bytes with digest `sha256`.
    static func answer(bytes: Int64, sha256: String) -> (headers: [(String, String)], body: [UInt8]) {
        let body = Array("{\"bytes\":\(bytes),\"sha256\":\"\(sha256)\"}\n".utf8)
        return (
            [
                ("Content-Type", "application/json"), ("X-Received-Bytes", String(bytes)),
                ("X-Received-SHA256", sha256), ("Content-Length", String(body.count)),
            ], body
        )
    }
}
