import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Keeps two runs off one state directory: they would resume each other's partial files and race on
/// the ledger. An advisory `flock` on `state/lock`, released when the process ends, however it ends.
public final class StateLock: Sendable {
    private let descriptor: Int32

    /// Takes the lock, or says who holds it.
    /// - Throws: ``LedgerError`` naming the directory and the other run's process id.
    public init(directory: URL) throws {
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("lock").path
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw LedgerError("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            var buffer = [UInt8](repeating: 0, count: 32)
            let count = read(descriptor, &buffer, buffer.count)
            close(descriptor)
            let pid = count > 0 ? String(decoding: buffer.prefix(count), as: UTF8.self) : "?"
            throw LedgerError(
                "another mediafetch (process \(pid.trimmingCharacters(in: .whitespacesAndNewlines))) is using the "
                    + "state directory \(directory.path); wait for it to finish, or give this run its own state:")
        }
        let pid = Array("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pwrite(descriptor, pid, pid.count, 0)
        self.descriptor = descriptor
    }

    deinit {
        close(descriptor)
    }
}
