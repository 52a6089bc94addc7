import Foundation
import MediaFetchCore

extension StagedFile {
    /// A finished download holding `bytes`, as the pipeline hands one to a sink: written under a fresh name
    /// in `folder`, with its size and SHA-256.
    public static func written(
        _ bytes: Data, in folder: URL, sourceURL: URL, downloadedAt: Date = Date()
    ) throws -> StagedFile {
        let url = folder.appendingPathComponent(UUID().uuidString + ".download")
        try bytes.write(to: url)
        return StagedFile(
            url: url, size: Int64(bytes.count), sha256: SHA256.hex(of: bytes), sourceURL: sourceURL,
            downloadedAt: downloadedAt)
    }
}
