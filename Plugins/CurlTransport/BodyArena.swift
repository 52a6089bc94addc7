import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The memory for download bodies kept in memory (``DownloadRequest/keepInMemory``): one mapping made once, from
/// which each body takes a piece and to which it gives it back.
///
/// Not `malloc`: freed on another thread than the one that made them, buffers of a megabyte stayed in `malloc`'s
/// per-thread arenas, and a run's peak memory grew by nearly twice what it kept in memory. Not a mapping a body
/// either: the kernel's zeroing of fresh pages took back 1.2 s of the 2.8 s of CPU that keeping 2,000 files off the
/// disk saved. Pages of
/// the mapping are made when first written, so a run that keeps nothing in memory costs nothing.
///
/// `@unchecked Sendable`: the mapping's address never changes, and the free pieces are behind a lock.
final class BodyArena: @unchecked Sendable {
    /// Bytes in all: 8 MiB, ten preview-sized files at once.
    static let defaultSize = 8 << 20
    /// Pieces start on cache lines.
    private static let alignment = 64

    private let start: UnsafeMutableRawPointer?
    let size: Int
    /// The free pieces, by offset, without two adjacent (merged when given back).
    private let free: Mutex<[Range<Int>]>

    init(size: Int = BodyArena.defaultSize) {
        let address = mmap(nil, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
        if let address, address != MAP_FAILED {
            start = address
            self.size = size
        } else {
            start = nil
            self.size = 0
        }
        free = Mutex(self.size > 0 ? [0..<self.size] : [])
    }

    deinit {
        if let start { munmap(start, size) }
    }

    /// A piece of at least `count` bytes (the first free one that fits), or nil when none does (or `count` is not a
    /// size: an announced length is the server's word).
    func take(_ count: Int64) -> UnsafeMutableRawBufferPointer? {
        guard let start, count >= 0, count <= Int64(size) else { return nil }
        let count = Int(count)
        let length = max(Self.alignment, (count + Self.alignment - 1) / Self.alignment * Self.alignment)
        let offset: Int? = free.withLock { pieces in
            guard let index = pieces.firstIndex(where: { $0.count >= length }) else { return nil }
            let piece = pieces[index]
            if piece.count == length {
                pieces.remove(at: index)
            } else {
                pieces[index] = piece.lowerBound + length..<piece.upperBound
            }
            return piece.lowerBound
        }
        guard let offset else { return nil }
        return UnsafeMutableRawBufferPointer(start: start + offset, count: length)
    }

    /// Gives back a piece ``take(_:)`` handed out.
    func give(_ piece: UnsafeMutableRawBufferPointer) {
        guard let start, let address = piece.baseAddress else { return }
        let range = (address - start)..<(address - start + piece.count)
        free.withLock { pieces in
            let index = pieces.firstIndex { $0.lowerBound > range.lowerBound } ?? pieces.endIndex
            var merged = range
            if index < pieces.endIndex, pieces[index].lowerBound == merged.upperBound {
                merged = merged.lowerBound..<pieces[index].upperBound
                pieces.remove(at: index)
            }
            if index > 0, pieces[index - 1].upperBound == merged.lowerBound {
                pieces[index - 1] = pieces[index - 1].lowerBound..<merged.upperBound
            } else {
                pieces.insert(merged, at: index)
            }
        }
    }

    /// Bytes free, in all (for tests).
    var freeBytes: Int { free.withLock { $0.reduce(0) { $0 + $1.count } } }
}
