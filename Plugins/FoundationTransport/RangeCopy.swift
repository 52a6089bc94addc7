import Foundation
import CLinux
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// A range of a file as a file of its own, for FoundationNetworking, which can upload a whole file with its
/// `Content-Length` but gives a body stream none (it goes out chunked, which object stores refuse).
///
/// The copy is made by the kernel (`copy_file_range`: no bytes pass through this process, and a filesystem that
/// shares extents shares them), beside the original so that it lands on the same disk, as `.upload-range-PID-XXXXXX`.
/// It holds one part's bytes on disk for as long as the upload lasts and goes when the value does; one that a
/// killed process left is removed by the next copy made in that folder. (An unnamed file reached through
/// `/proc/self/fd` would leave nothing at all, but FoundationNetworking takes the size of that path's link rather
/// than of the file, and then waits for bytes that never come.)
struct RangeCopy: ~Copyable {
    /// The copy's path.
    let url: URL

    /// Copies `length` bytes of `file` from `offset`.
    /// - Throws: ``TransportError`` (`.other`) naming the file and what failed.
    init(of file: URL, offset: Int64, length: Int64, for requestURL: URL) throws {
        func failure(_ what: String, code: Int32? = errno) -> TransportError {
            TransportError(
                .other, url: requestURL,
                detail: "cannot copy bytes \(offset)..<\(offset + length) of \(file.path) to upload them: \(what)"
                    + (code.map { ": " + String(cString: strerror($0)) } ?? ""))
        }
        let source = open(file.path, O_RDONLY | O_CLOEXEC)
        guard source >= 0 else { throw failure("open") }
        defer { close(source) }
        // Beside the file; in a folder we cannot write in (a read-only staging copy), the temporary folder.
        guard
            let (target, path) = Self.temporaryFile(in: file.deletingLastPathComponent().path)
                ?? Self.temporaryFile(in: FileManager.default.temporaryDirectory.path)
        else { throw failure("create a temporary file beside it") }
        defer { close(target) }
        do {
            try Self.copy(from: source, offset: offset, length: length, to: target, failure: failure)
        } catch {
            _ = unlink(path)
            throw error
        }
        url = URL(fileURLWithPath: path, isDirectory: false)
    }

    deinit { _ = unlink(url.path) }

    /// `length` bytes of `source` from `offset` to the start of `target`: by `copy_file_range`, or where the kernel
    /// will not between these two files (another filesystem, an old kernel), through a 1 MiB buffer.
    private static func copy(
        from source: Int32, offset: Int64, length: Int64, to target: Int32,
        failure: (String, Int32?) -> TransportError
    ) throws {
        var from = offset
        var left = length
        var inKernel = true
        var buffer: [UInt8] = []
        while left > 0 {
            let chunk = Int(min(left, 1 << 30))
            let copied: Int
            if inKernel {
                copied = copy_file_range(source, &from, target, nil, UInt(chunk), 0)
                if copied < 0 && [EXDEV, ENOSYS, EOPNOTSUPP, EINVAL].contains(errno) {
                    inKernel = false
                    buffer = [UInt8](repeating: 0, count: 1 << 20)
                    continue
                }
            } else {
                copied = buffer.withUnsafeMutableBytes { bytes in
                    let read = pread(source, bytes.baseAddress, min(chunk, bytes.count), off_t(from))
                    guard read > 0 else { return read }
                    return write(target, bytes.baseAddress, read) == read ? read : -1
                }
                if copied > 0 { from += Int64(copied) }
            }
            if copied < 0 && errno == EINTR { continue }
            guard copied > 0 else {
                throw copied == 0 ? failure("the file ended early", nil) : failure("copy", errno)
            }
            left -= Int64(copied)
        }
    }

    static let namePrefix = ".upload-range-"

    /// A new file in `folder`, named for this process, and its path; copies that processes no longer running
    /// left there go first.
    private static func temporaryFile(in folder: String) -> (Int32, String)? {
        removeLeftovers(in: folder)
        var template = Array((folder + "/" + namePrefix + "\(getpid())-XXXXXX").utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress.map { mkstemp($0) } ?? -1
        }
        guard descriptor >= 0 else { return nil }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        let path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return (descriptor, path)
    }

    /// Removes the copies in `folder` whose process has ended (killed in the middle of an upload).
    private static func removeLeftovers(in folder: String) {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return }
        for name in names where name.hasPrefix(namePrefix) {
            guard let pid = Int32(name.dropFirst(namePrefix.count).prefix { $0 != "-" }),
                kill(pid, 0) != 0 && errno == ESRCH
            else { continue }
            _ = unlink(folder + "/" + name)
        }
    }
}
