import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Hashes a file while a transport is still writing it, so that a large download's digest is ready
/// when its last byte is: the hashing runs on another core beside the transfer instead of after it.
///
/// It reads only what the transport has reported written, through its own descriptor (`pread`), and
/// starts only after the first report, when the answer's head has settled whether kept bytes stay.
final class FileFollower {
    private let url: URL
    private var hasher: SHA256? = SHA256()
    private var descriptor: Int32 = -1
    private var hashed: Int64 = 0
    /// 64 KiB: reads from the page cache are cheap, and sixteen followers stay light.
    private var buffer = [UInt8](repeating: 0, count: 64 << 10)

    init(_ url: URL) {
        self.url = url
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Follows `written` (bytes in the file so far) until it ends, then hashes the rest of the file.
    static func digest(of url: URL, following written: AsyncStream<Int64>) async throws -> String {
        let follower = FileFollower(url)
        for await end in written {
            try Task.checkCancellation()
            try follower.advance(to: end)
        }
        try Task.checkCancellation()
        try follower.advance(to: try Pipeline.fileSize(url))
        return follower.finish()
    }

    /// The SHA-256 of the whole file as it is now (a download an earlier run kept).
    static func digest(of url: URL) throws -> String {
        let follower = FileFollower(url)
        try follower.advance(to: try Pipeline.fileSize(url))
        return follower.finish()
    }

    private func advance(to end: Int64) throws {
        guard end > hashed else { return }
        if descriptor < 0 {
            descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw PipelineError("cannot read \(url.path): \(String(cString: strerror(errno)))")
            }
        }
        while hashed < end {
            let want = Int(min(Int64(buffer.count), end - hashed))
            let count = buffer.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress, want, off_t(hashed)) }
            if count < 0 {
                if errno == EINTR { continue }
                throw PipelineError("cannot read \(url.path): \(String(cString: strerror(errno)))")
            }
            // Shorter than reported: the file was cut (a restart); the digest will not match the size check.
            if count == 0 { break }
            buffer.withUnsafeBytes { hasher?.update(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            hashed += Int64(count)
        }
    }

    private func finish() -> String {
        hasher.take()?.finalize() ?? ""
    }
}
