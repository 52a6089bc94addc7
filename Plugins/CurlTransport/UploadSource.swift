import Foundation
import MediaFetchCore

#if canImport(Glibc)
    import Glibc
#endif

/// An upload's body as libcurl's read callback asks for it: `pread(2)` from a file range, or a copy from a small
/// buffer. Only the engine's thread reads it once the transfer runs.
final class UploadSource {
    private let url: URL
    private let data: Data?
    private var descriptor: Int32 = -1
    private let offset: Int64
    /// Body bytes in all.
    let length: Int64
    /// Body bytes handed to libcurl so far.
    private(set) var sent: Int64 = 0

    /// Opens the file of a ``UploadRequest/Body/file(_:offset:length:)`` body.
    init(_ body: UploadRequest.Body, for url: URL) throws(TransportError) {
        self.url = url
        length = body.length
        switch body {
        case .bytes(let bytes):
            data = bytes
            offset = 0
        case .file(let file, let start, _):
            data = nil
            offset = start
            descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                throw TransportError(
                    .fileError, url: url, detail: "cannot open \(file.path): \(String(cString: strerror(errno)))")
            }
        }
    }

    deinit {
        if descriptor >= 0 { close(descriptor) }
    }

    /// Fills `buffer` with the next body bytes; 0 at the end. Throws when the file cannot be read or ends early.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws(TransportError) -> Int {
        let wanted = Int(min(Int64(buffer.count), length - sent))
        guard wanted > 0, let base = buffer.baseAddress else { return 0 }
        if let data {
            let start = Int(sent)
            data.withUnsafeBytes { bytes in
                guard let source = bytes.baseAddress else { return }
                base.copyMemory(from: source + start, byteCount: wanted)
            }
            sent += Int64(wanted)
            return wanted
        }
        while true {
            let count = pread(descriptor, base, wanted, off_t(offset + sent))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                let reason = count < 0 ? String(cString: strerror(errno)) : "the file ended early"
                throw TransportError(.fileError, url: url, detail: "cannot read the upload's body: \(reason)")
            }
            sent += Int64(count)
            return count
        }
    }
}
