import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// A download's destination, written with `pwrite(2)` on a raw descriptor: no buffering layer between
/// libcurl's buffer and the kernel, and an explicit offset so the kept bytes of a resume are never touched.
/// Or, when the request let the body stay in memory (``DownloadRequest/keepInMemory``), one buffer of the
/// announced length, written to the file only if the transfer fails, so that it resumes as a streamed one would.
final class DownloadFile {
    private var descriptor: Int32
    /// Where the body starts: the kept bytes on 206, zero on 200.
    let base: Int64
    private(set) var written: Int64 = 0
    /// The file's path: errors name it (a URL is made of it only for them).
    let path: String
    /// The body kept in memory, and its announced length; nil for a file.
    private var memory: UnsafeMutableRawBufferPointer?
    /// The announced length of a body kept in memory.
    private var capacity = 0

    /// The arena a body kept in memory came from, to give it back to.
    private let arena: BodyArena?

    /// A body of `length` bytes kept in memory, in `piece` (taken from `arena`, of at least `length` bytes, and
    /// given back to it when the body is done with); nothing is created at `path` unless ``spill()`` is called.
    init(path: String, length: Int64, in piece: UnsafeMutableRawBufferPointer, from arena: BodyArena) {
        self.path = path
        self.arena = arena
        base = 0
        descriptor = -1
        memory = piece
        capacity = Int(length)
    }

    /// Opens (creating when needed) and cuts the file to `base` bytes.
    init(path: String, keeping base: Int64) throws(TransportError) {
        self.path = path
        self.base = base
        arena = nil
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
        if let memory { arena?.give(memory) }
    }

    /// Appends the bytes after what is already written.
    func write(_ bytes: UnsafeRawBufferPointer) throws(TransportError) {
        if let memory {
            // libcurl stops at the announced length; a body longer than that is not this file's.
            guard Int(written) + bytes.count <= capacity else {
                throw TransportError(
                    .other, url: URL(fileURLWithPath: path), detail: "more body than the \(capacity) bytes announced")
            }
            if let source = bytes.baseAddress, let target = memory.baseAddress {
                (target + Int(written)).copyMemory(from: source, byteCount: bytes.count)
            }
            written += Int64(bytes.count)
            return
        }
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

    /// The body kept in memory, handed over without a copy; nil for a file (or once taken).
    func takeContents() -> Data? {
        guard let memory, let start = memory.baseAddress, let arena else { return nil }
        self.memory = nil
        return Data(bytesNoCopy: start, count: Int(written), deallocator: .custom { _, _ in arena.give(memory) })
    }

    /// Writes a body kept in memory to the file, after a transfer that failed: the bytes that arrived stay there, as
    /// a streamed download's do, for the next attempt to resume from. Best effort: a file that cannot be written only
    /// means that attempt starts over.
    func spill() {
        guard let memory, let start = memory.baseAddress else { return }
        self.memory = nil
        defer { arena?.give(memory) }
        guard written > 0, let file = try? DownloadFile(path: path, keeping: 0) else { return }
        let kept = UnsafeRawBufferPointer(start: start, count: Int(written))
        if (try? file.write(kept)) == nil || (try? file.close()) == nil { _ = unlink(path) }
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
