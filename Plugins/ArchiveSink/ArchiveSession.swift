import CLinux
import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// Everything one run does to its archive, in one place that only the owner thread touches: the temporary
/// file and its writer, the previous archive and what is carried from it.
///
/// Why one owner: a tar stream is strictly sequential, so entries must be written one after the other; the
/// owner thread does that (and the compression) off Swift's cooperative pool, so downloads keep running.
///
/// Failure rule: an entry is started only from a complete staged file of known size; once any byte of an
/// entry went out and something fails, the whole archive is marked failed, later stores are refused, and
/// ``close(extras:)`` deletes the temporary file and throws, so no corrupt archive ever reaches the path.
final class ArchiveSession {
    let configuration: ArchiveSinkConfiguration
    private var writer: ArchiveWriter?
    private var output: Int32 = -1
    private var temporary: URL?
    /// Why the archive was given up, once it was.
    private var failure: String?
    private var written: Set<String> = []
    private var previous: PreviousArchive?
    /// Entry names to copy from the previous archive, with the size `keep` checked.
    private var carried: [String: Int64] = [:]
    private var buffer: UnsafeMutableRawBufferPointer
    /// Entry bytes written since the archive's pages were last sent to the disk.
    private var unsent: Int64 = 0

    /// A process-wide counter, so two sinks in one process never pick the same temporary name.
    private static let counter = Counter()

    init(configuration: ArchiveSinkConfiguration) {
        self.configuration = configuration
        // 1 MiB: large enough that syscalls and libarchive calls do not dominate, small enough to not matter.
        self.buffer = .allocate(byteCount: 1 << 20, alignment: 16)
    }

    deinit {
        abandon()
        buffer.deallocate()
    }

    var path: URL { configuration.path }

    // MARK: - Commands

    /// Writes `file` as the entry `name`; the file stays (the pipeline keeps it until the archive is committed).
    func store(_ file: StagedFile, as name: String, modified: Date) throws(SinkError) {
        if let failure { throw SinkError("the archive \(path.path) was given up earlier: \(failure)") }
        guard !written.contains(name) else { throw SinkError("\(name) is already in the archive") }
        // Everything that can go wrong before the first byte leaves the archive intact.
        let source = open(file.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard source >= 0 else { throw SinkError("cannot read the downloaded file: \(errorText(errno))") }
        defer { _ = Glibc.close(source) }
        var info = stat()
        guard fstat(source, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw SinkError("the downloaded file \(file.path) is not a plain file")
        }
        guard Int64(info.st_size) == file.size else {
            throw SinkError("the downloaded file holds \(info.st_size) bytes, not the \(file.size) reported")
        }
        guard file.size <= configuration.format.maxEntrySize else {
            throw SinkError("\(file.size) bytes is more than \(configuration.format.rawValue) can hold in one entry")
        }
        let writer = try openWriter()
        do throws(ArchiveError) {
            try writer.writeEntry(name: name, size: file.size, modified: Self.seconds(modified)) {
                write throws(ArchiveError) in
                while true {
                    let count = read(source, buffer.baseAddress, buffer.count)
                    if count < 0 {
                        if errno == EINTR { continue }
                        throw ArchiveError("cannot read the downloaded file: \(errorText(errno))")
                    }
                    if count == 0 { return }
                    try write(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                }
            }
        } catch {
            throw giveUp(error.message)
        }
        written.insert(name)
        // Send the archive's pages to the disk as the run goes, so the fsync at the end has little left.
        unsent += file.size
        if unsent >= 64 << 20 {
            unsent = 0
            _ = mf_start_write_out(output)
        }
    }

    /// Whether the previous archive at ``path`` holds a regular entry `name` of `size` bytes; if so it is
    /// copied into the new archive by ``carry()``.
    func keep(_ name: String, size: Int64) -> Bool {
        if previous == nil { previous = PreviousArchive(path: path) }
        guard previous?.index[name] == size, !written.contains(name) else { return false }
        carried[name] = size
        return true
    }

    /// Copies every entry ``keep(_:size:)`` accepted from the previous archive, in one pass in that
    /// archive's order (a compressed stream cannot be read backwards), hashing each on the way.
    /// - Returns: entry name to the SHA-256 of the bytes copied.
    func carry() throws(SinkError) -> [String: String] {
        if let failure { throw SinkError("the archive \(path.path) was given up earlier: \(failure)") }
        guard !carried.isEmpty, let previous else { return [:] }
        let writer = try openWriter()
        var hashes: [String: String] = [:]
        do throws(ArchiveError) {
            let reader = try previous.reopen()
            while let entry = try reader.next() {
                guard entry.isRegularFile, let size = carried[entry.name], size == entry.size,
                    hashes[entry.name] == nil, !written.contains(entry.name)
                else { continue }
                var hasher = SHA256()
                try writer.writeEntry(name: entry.name, size: size, modified: entry.modified) {
                    write throws(ArchiveError) in
                    try reader.readData(into: buffer) { chunk throws(ArchiveError) in
                        hasher.update(chunk)
                        try write(chunk)
                    }
                }
                hashes[entry.name] = hasher.finalize()
                written.insert(entry.name)
            }
        } catch {
            throw giveUp("cannot copy from the previous archive: \(error.message)")
        }
        let missing = carried.keys.filter { hashes[$0] == nil }
        guard missing.isEmpty else {
            throw giveUp("the previous archive no longer holds \(missing.sorted().joined(separator: ", "))")
        }
        return hashes
    }

    /// Appends `extras` (the manifest and playlist), ends the archive, flushes it to disk and renames it
    /// over ``path``. An empty run still gives a valid (empty) archive.
    func close(extras: [(name: String, data: Data)]) throws(SinkError) {
        if let failure {
            abandon()
            throw SinkError("the archive \(path.path) was not written: \(failure); the previous one is unchanged")
        }
        let writer = try openWriter()
        let now = Self.seconds(Date())
        do throws(ArchiveError) {
            for extra in extras {
                try writer.writeEntry(name: extra.name, size: Int64(extra.data.count), modified: now) {
                    write throws(ArchiveError) in
                    // Data's withUnsafeBytes only rethrows untyped errors.
                    var failed: ArchiveError?
                    extra.data.withUnsafeBytes { bytes in
                        do throws(ArchiveError) { try write(bytes) } catch { failed = error }
                    }
                    if let failed { throw failed }
                }
            }
            try writer.close()
        } catch {
            _ = giveUp(error.message)
            abandon()
            throw SinkError("the archive \(path.path) was not written: \(error.message); the previous one is unchanged")
        }
        self.writer = nil
        guard let temporary else { throw SinkError("the archive \(path.path) lost its temporary file") }
        let descriptor = output
        output = -1
        guard Glibc.close(descriptor) == 0 else {
            let code = errno
            abandon()
            throw SinkError("cannot write \(temporary.path) to disk: \(errorText(code))")
        }
        // The core's durable placement, as for any stored file: flushed, renamed over the previous archive, the
        // folder flushed, never through a link.
        let placement = SafePlacement(
            rootPath: path.deletingLastPathComponent().path, relativePath: path.lastPathComponent,
            item: ItemRef(id: path.lastPathComponent, title: "the archive"))
        do {
            try placement.place(temporary.path)
        } catch {
            abandon()
            throw SinkError("cannot move the archive into place at \(path.path): \(error.message)", cause: error)
        }
        self.temporary = nil
    }

    /// Drops the temporary archive, leaving ``path`` as it was. Safe to call more than once.
    func abandon() {
        writer = nil
        if output >= 0 {
            _ = Glibc.close(output)
            output = -1
        }
        if let temporary {
            _ = unlink(temporary.path)
            self.temporary = nil
        }
    }

    // MARK: - Helpers

    /// Marks the archive failed and returns the error for the caller at hand.
    private func giveUp(_ reason: String) -> SinkError {
        failure = failure ?? reason
        return SinkError("the archive \(path.path) is given up, nothing of this run will be kept in it: \(reason)")
    }

    /// The writer, creating the temporary file on first use.
    private func openWriter() throws(SinkError) -> ArchiveWriter {
        if let writer { return writer }
        let folder = path.deletingLastPathComponent()
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            throw SinkError("cannot create the folder \(folder.path): \(error.localizedDescription)")
        }
        PartialFiles.removeStale(of: path)
        let url = PartialFiles.name(of: path, number: Self.counter.next())
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw SinkError("cannot create \(url.path): \(errorText(errno))") }
        output = descriptor
        temporary = url
        do {
            let writer = try ArchiveWriter(
                format: configuration.format, compression: configuration.compression, level: configuration.level,
                descriptor: descriptor
            )
            self.writer = writer
            return writer
        } catch {
            abandon()
            throw SinkError("cannot start the archive \(url.path): \(error.message)")
        }
    }

    /// Whole seconds since 1970, clamped to what every format stores (ustar has no negative times).
    static func seconds(_ date: Date) -> Int {
        let value = date.timeIntervalSince1970
        guard value.isFinite else { return 0 }
        return Int(min(max(value, 0), 8_589_934_591))
    }
}
