import CArchive
import Foundation

/// Owns a libarchive read handle over a file descriptor it does not own; reads any format and filter
/// libarchive knows, one entry after the other.
///
/// Not `Sendable`: used on one thread at a time (the archive owner's, or a test's).
final class ArchiveReader {
    /// What a header says about an entry.
    struct Entry: Sendable, Hashable {
        var name: String
        var size: Int64
        var isRegularFile: Bool
        var modified: Int
        var permissions: UInt32
    }

    private let handle: OpaquePointer

    /// Opens the archive on `descriptor` (reading starts at its current offset).
    init(descriptor: Int32) throws(ArchiveError) {
        guard let handle = archive_read_new() else { throw ArchiveError("libarchive could not allocate a reader") }
        self.handle = handle
        try check(archive_read_support_filter_all(handle), "enable every filter")
        try check(archive_read_support_format_all(handle), "enable every format")
        try check(archive_read_open_fd(handle, descriptor, 1 << 20), "open the archive for reading")
    }

    deinit {
        archive_read_free(handle)
    }

    /// The next entry's header, or nil at the end of the archive.
    func next() throws(ArchiveError) -> Entry? {
        try UTF8Locale.run { () throws(ArchiveError) -> Entry? in try readHeader() }
    }

    private func readHeader() throws(ArchiveError) -> Entry? {
        var entry: OpaquePointer?
        let code = archive_read_next_header(handle, &entry)
        if code == ARCHIVE_EOF { return nil }
        try check(code, "read the next header")
        guard let entry else { throw ArchiveError("libarchive returned a header without an entry") }
        guard let name = archive_entry_pathname_utf8(entry) else {
            throw ArchiveError("an entry's name is not valid UTF-8")
        }
        return Entry(
            name: String(cString: name),
            size: archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : -1,
            isRegularFile: archive_entry_filetype(entry) == carchive_regular_file,
            modified: Int(archive_entry_mtime(entry)),
            permissions: UInt32(archive_entry_perm(entry))
        )
    }

    /// Streams the current entry's data to `body` in chunks of at most `buffer.count` bytes.
    /// - Returns: the number of bytes read.
    @discardableResult
    func readData(
        into buffer: UnsafeMutableRawBufferPointer,
        _ body: (UnsafeRawBufferPointer) throws(ArchiveError) -> Void
    ) throws(ArchiveError) -> Int64 {
        var total: Int64 = 0
        while true {
            let count = archive_read_data(handle, buffer.baseAddress, buffer.count)
            if count == 0 { return total }
            guard count > 0 else { throw ArchiveError("cannot read an entry's data: \(errorText())") }
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
            total += Int64(count)
        }
    }

    private func check(_ code: Int32, _ action: String) throws(ArchiveError) {
        guard code != ARCHIVE_OK else { return }
        // A warning while reading (an unknown pax keyword, say) leaves the data intact.
        if code == ARCHIVE_WARN { return }
        throw ArchiveError("cannot \(action): \(errorText())")
    }

    private func errorText() -> String {
        archive_error_string(handle).map { String(cString: $0) } ?? "libarchive gave no reason"
    }
}
