import Foundation
import MediaFetchCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The multipart uploads a state folder's runs started, so that the next run (or `mediafetch clean`) aborts those a
/// killed run left open, and nothing else: in a bucket others write to, or with an empty prefix, an open upload the
/// sink did not start is not the sink's to abort, even at one of its own keys.
///
/// One JSON line a step: the start, flushed to disk before the upload is created, with the time; the upload's id
/// once the store has given it; the end. An upload is then known by its id. A start without an id (a kill between
/// the request and its answer) is matched by its key and the time the store says the upload began, within
/// ``startWindow`` of the start.
public final class UploadJournal: Sendable {
    /// How far from a start without an id an upload at its key may have begun to count as that start's: the store's
    /// clock may differ from this machine's, and the request may have waited.
    public static let startWindow: TimeInterval = 300

    /// What a killed run left unfinished at one key.
    public struct Unfinished: Sendable, Hashable {
        public var key: String
        /// Uploads the store named and that did not end.
        public var uploadIDs: [String]
        /// Starts that never learnt their upload's id (this machine's clock).
        public var startsWithoutID: [Date]

        public init(key: String, uploadIDs: [String], startsWithoutID: [Date]) {
            self.key = key
            self.uploadIDs = uploadIDs
            self.startsWithoutID = startsWithoutID
        }

        /// Whether `upload` (at this key) is one of these.
        public func owns(_ upload: S3Client.OpenUpload) -> Bool {
            if uploadIDs.contains(upload.uploadID) { return true }
            guard let initiated = upload.initiated else { return false }
            return startsWithoutID.contains { abs(initiated.timeIntervalSince($0)) <= UploadJournal.startWindow }
        }
    }

    public let path: String
    private let lock = Mutex(())

    public init(path: String) {
        self.path = path
    }

    /// Records that an upload of `key` is about to be created, on disk before it returns.
    /// - Throws: ``SinkError`` when the journal cannot be written: the upload then does not start.
    public func starting(_ key: String, at time: Date = Date()) throws {
        try append(["start": key, "at": String(time.timeIntervalSince1970)], flush: true)
    }

    /// Records the id the store gave the upload of `key` just started.
    public func created(_ key: String, uploadID: String) {
        try? append(["created": key, "id": uploadID], flush: false)
    }

    /// Records that the upload of `key` ended: completed or aborted (`uploadID`), or never created (nil).
    public func ended(_ key: String, uploadID: String?) {
        var record = ["end": key]
        record["id"] = uploadID
        try? append(record, flush: false)
    }

    /// What the journal holds unfinished, by key in the order first started.
    public func unfinished() -> [Unfinished] {
        lock.withLock { _ in
            guard let data = FileManager.default.contents(atPath: path) else { return [] }
            var pending: [String: (ids: [String], starts: [Date])] = [:]
            var order: [String] = []
            for line in data.split(separator: UInt8(ascii: "\n")) {
                // A line cut short by a kill in its write is skipped: its step had not happened yet.
                guard let record = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: String] else {
                    continue
                }
                if let key = record["start"] {
                    if pending[key] == nil { order.append(key) }
                    let time = record["at"].flatMap(TimeInterval.init).map(Date.init(timeIntervalSince1970:))
                    pending[key, default: ([], [])].starts.append(time ?? Date.distantPast)
                } else if let key = record["created"], let id = record["id"] {
                    // The oldest start of the key learnt its id.
                    if pending[key]?.starts.isEmpty == false { pending[key]?.starts.removeFirst() }
                    pending[key, default: ([], [])].ids.append(id)
                } else if let key = record["end"] {
                    if let id = record["id"] {
                        pending[key]?.ids.removeAll { $0 == id }
                    } else if pending[key]?.starts.isEmpty == false {
                        pending[key]?.starts.removeFirst()
                    }
                }
            }
            return order.compactMap { key in
                guard let entry = pending[key], !entry.ids.isEmpty || !entry.starts.isEmpty else { return nil }
                return Unfinished(key: key, uploadIDs: entry.ids, startsWithoutID: entry.starts)
            }
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
