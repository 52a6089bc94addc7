import Foundation
import MediaFetchCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The keys of the multipart uploads a state folder's runs started, so that the next run (or `mediafetch clean`)
/// aborts the uploads a killed run left open under those keys, and nothing else: in a bucket others write to, or
/// with an empty prefix, an open upload the sink did not start is not the sink's to abort.
///
/// One JSON line a start, flushed to disk before the upload is created (a kill at any later moment leaves the key
/// on record), and one when it ended, not flushed (a lost one costs the next run a listing of that key).
public final class UploadJournal: Sendable {
    public let path: String
    private let lock = Mutex(())

    public init(path: String) {
        self.path = path
    }

    /// Records that an upload of `key` is about to be created, on disk before it returns.
    /// - Throws: ``SinkError`` when the journal cannot be written: the upload then does not start.
    public func starting(_ key: String) throws {
        try append(["start": key], flush: true)
    }

    /// Records that the upload of `key` was completed or aborted.
    public func ended(_ key: String) {
        try? append(["end": key], flush: false)
    }

    /// The keys with more uploads started than ended, in the order first started.
    public func unfinished() -> [String] {
        lock.withLock { _ in
            guard let data = FileManager.default.contents(atPath: path) else { return [] }
            var open: [String: Int] = [:]
            var order: [String] = []
            for line in data.split(separator: UInt8(ascii: "\n")) {
                // A line cut short by a kill in its write is skipped: its upload had not been created yet.
                guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: String] else {
                    continue
                }
                if let key = object["start"] {
                    if open[key] == nil { order.append(key) }
                    open[key, default: 0] += 1
                } else if let key = object["end"] {
                    open[key, default: 0] -= 1
                }
            }
            return order.filter { (open[$0] ?? 0) > 0 }
        }
    }

    /// Forgets every record, once the unfinished uploads are aborted.
    public func clear() throws {
        try lock.withLock { _ in
            guard unlink(path) == 0 || errno == ENOENT else {
                throw SinkError("cannot remove \(path): \(String(cString: strerror(errno)))")
            }
        }
    }

    private func append(_ record: [String: String], flush: Bool) throws {
        var line = try JSONSerialization.data(withJSONObject: record, options: [.sortedKeys])
        line.append(UInt8(ascii: "\n"))
        try lock.withLock { _ in
            let flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC
            var descriptor = open(path, flags, 0o600)
            if descriptor < 0 && errno == ENOENT {
                // The state folder is made by the run; a sink used on its own makes it here.
                let folder = (path as NSString).deletingLastPathComponent
                try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
                descriptor = open(path, flags, 0o600)
            }
            guard descriptor >= 0 else {
                throw SinkError("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            defer { close(descriptor) }
            // One write: O_APPEND puts the whole line at the end.
            let written = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            guard written == line.count, !flush || fsync(descriptor) == 0 else {
                throw SinkError("cannot write \(path): \(String(cString: strerror(errno)))")
            }
        }
    }
}
