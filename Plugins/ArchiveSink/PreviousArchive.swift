import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The archive an earlier run left at the sink's path, opened once: an index of its regular entries, and
/// the same open file to copy from later, so a file swapped in at the path meanwhile cannot mix in.
///
/// An archive that is missing, unreadable or damaged anywhere in its headers gives an empty index: then
/// nothing is kept and everything is fetched again, which is slow but never wrong.
final class PreviousArchive {
    /// Entry name to size, for regular files.
    let index: [String: Int64]
    private let descriptor: Int32

    init(path: URL) {
        descriptor = open(path.path, O_RDONLY | O_CLOEXEC)
        var index: [String: Int64] = [:]
        if descriptor >= 0 {
            do throws(ArchiveError) {
                let reader = try ArchiveReader(descriptor: descriptor)
                while let entry = try reader.next() {
                    // Skipping the data seeks in an uncompressed archive, so the index costs one read of
                    // the headers.
                    if entry.isRegularFile && entry.size >= 0 { index[entry.name] = entry.size }
                }
            } catch {
                index = [:]
            }
        }
        self.index = index
    }

    deinit {
        if descriptor >= 0 { _ = close(descriptor) }
    }

    /// A reader from the start of the archive.
    func reopen() throws(ArchiveError) -> ArchiveReader {
        guard descriptor >= 0, lseek(descriptor, 0, SEEK_SET) == 0 else {
            throw ArchiveError("the previous archive cannot be read again")
        }
        return try ArchiveReader(descriptor: descriptor)
    }
}
