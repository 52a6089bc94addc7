import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// A download's destination, written with `pwrite(2)` on a raw descriptor: no buffering layer between
/// libcurl's buffer and the kernel, and an explicit offset so the kept bytes of a resume are never touched.
final class DownloadFile {
    private var descriptor: Int32
    /// Where the body starts: the kept bytes on 206, zero on 200.
    let base: Int64
    private(set) var written: Int64 = 0
    /// The file's path: errors name it (a URL is made of it only for them).
    let path: String

    /// Opens (creating when needed) and cuts the file to `base` bytes.
    init(path: String, keeping base: Int64) throws(TransportError) {
        self.path = path
        self.base = base
        if base == 0 {
            // A new file is empty already: no `fstat` to learn its size (one of a small file's system calls).
            descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            if descriptor >= 0 { return }
            guard errno == EEXIST else { throw Self.error(path, "cannot open") }
        }
        descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Self.error(path, "cannot open") }
        // Only cut when the size is wrong: ext4 flushes a file truncated to zero when it is closed (its
        // replace-by-truncate safeguard), which made a fresh 512 MiB download wait on the disk.
        var status = stat()
        guard fstat(descriptor, &status) == 0 else {
            let error = Self.error(path, "cannot stat")
            Glibc.close(descriptor)
            descriptor = -1
            throw error
        }
        guard Int64(status.st_size) == base || ftruncate(descriptor, off_t(base)) == 0 else {
            let error = Self.error(path, "cannot cut to \(base) bytes")
            Glibc.close(descriptor)
            descriptor = -1
            throw error
        }
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    /// Appends the bytes after what is already written.
    func write(_ bytes: UnsafeRawBufferPointer) throws(TransportError) {
        guard let start = bytes.baseAddress else { return }
        var done = 0
        while done < bytes.count {
            let count = pwrite(descriptor, start + done, bytes.count - done, off_t(base + written + Int64(done)))
            if count < 0 {
                if errno == EINTR { continue }
                throw Self.error(path, "cannot write")
            }
            done += count
        }
        written += Int64(done)
    }

    /// Closes the descriptor; a failed close can mean lost data (NFS, quotas), so it is an error.
    func close() throws(TransportError) {
        guard descriptor >= 0 else { return }
        let result = Glibc.close(descriptor)
        descriptor = -1
        if result != 0 { throw Self.error(path, "cannot close") }
    }

    private static func error(_ path: String, _ what: String) -> TransportError {
        let reason = String(cString: strerror(errno))
        return TransportError(.fileError, url: URL(fileURLWithPath: path), detail: "\(what) \(path): \(reason)")
    }
}
