import CArchive
import Foundation

/// Owns a libarchive write handle that writes to a file descriptor it does not own.
///
/// Not `Sendable`: it lives on the archive owner's thread (``ArchiveOwner``), the only place that may touch
/// it. Every libarchive call goes through ``check(_:_:)``. A handle that is freed without ``close()``
/// (an abandoned run) may leave a truncated stream behind; the caller deletes that file.
final class ArchiveWriter {
    private let handle: OpaquePointer
    private let entry: OpaquePointer

    /// Sets up `format` with `compression` at `level` and opens the stream on `descriptor`.
    init(
        format: ArchiveFormat, compression: ArchiveCompression, level: Int?, descriptor: Int32
    )
        throws(ArchiveError)
    {
        guard let handle = archive_write_new() else { throw ArchiveError("libarchive could not allocate a writer") }
        guard let entry = archive_entry_new() else {
            archive_write_free(handle)
            throw ArchiveError("libarchive could not allocate an entry")
        }
        self.handle = handle
        self.entry = entry
        try format.configure(handle, check: check)
        try compression.configure(handle, level: level, check: check)
        if compression == .none {
            // No 10 KiB records: each chunk goes from our buffer to the file as it is, without a copy into
            // libarchive's own (the archive then ends with its two zero blocks, not padded to a record).
            try check(archive_write_set_bytes_per_block(handle, 0), "write without blocking")
        }
        try check(archive_write_open_fd(handle, descriptor), "open the archive for writing")
    }

    deinit {
        archive_entry_free(entry)
        archive_write_free(handle)
    }

    /// Writes one regular-file entry: the header with `size`, then exactly `size` bytes from `body`, which
    /// is handed a function to write each chunk with.
    /// - Throws: ``ArchiveError`` when libarchive refuses the header or data, or `body` delivers a different
    ///   number of bytes than `size`; the archive must then be given up (the entry is incomplete).
    func writeEntry(
        name: String,
        size: Int64,
        modified: Int,
        _ body: ((UnsafeRawBufferPointer) throws(ArchiveError) -> Void) throws(ArchiveError) -> Void
    ) throws(ArchiveError) {
        archive_entry_clear(entry)
        // The _utf8 setter takes the name as UTF-8 whatever the process locale is.
        archive_entry_set_pathname_utf8(entry, name)
        archive_entry_set_filetype(entry, carchive_regular_file)
        archive_entry_set_perm(entry, 0o644)
        archive_entry_set_size(entry, size)
        archive_entry_set_mtime(entry, time_t(modified), 0)
        try check(archive_write_header(handle, entry), "write the header of \(name)")
        var written: Int64 = 0
        try body { (chunk: UnsafeRawBufferPointer) throws(ArchiveError) in
            guard let base = chunk.baseAddress, !chunk.isEmpty else { return }
            guard written + Int64(chunk.count) <= size else {
                throw ArchiveError("\(name) grew past the \(size) bytes its header announced")
            }
            var offset = 0
            while offset < chunk.count {
                let result = archive_write_data(handle, base + offset, chunk.count - offset)
                guard result > 0 else {
                    throw ArchiveError("cannot write the data of \(name): \(errorText())")
                }
                offset += result
            }
            written += Int64(chunk.count)
        }
        guard written == size else {
            throw ArchiveError("\(name) ended after \(written) of the \(size) bytes its header announced")
        }
        try check(archive_write_finish_entry(handle), "finish \(name)")
    }

    /// Writes the end of the archive and flushes the filters; the descriptor stays open.
    func close() throws(ArchiveError) {
        try check(archive_write_close(handle), "close the archive")
    }

    /// Turns a libarchive return code into an error naming what we tried. A warning counts as a failure: a
    /// name libarchive had to alter is not the name we asked for.
    func check(_ code: Int32, _ action: String) throws(ArchiveError) {
        guard code != ARCHIVE_OK else { return }
        throw ArchiveError("cannot \(action): \(errorText())")
    }

    private func errorText() -> String {
        archive_error_string(handle).map { String(cString: $0) } ?? "libarchive gave no reason"
    }
}
