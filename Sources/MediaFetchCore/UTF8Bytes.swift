import Foundation

extension String {
    /// `body` over the string's UTF-8 bytes: in place when they are contiguous (a native string's always are),
    /// else over a copy. A loop over `utf8` itself took tens of instructions a byte in callgrind counts of the
    /// per-item path (80 in the ledger's key filter), one over the buffer a few. `package`: shared by this
    /// package's modules, not public API.
    package func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        return try Array(utf8).withUnsafeBufferPointer(body)
    }

    /// Whether the two strings are the same bytes, as SQLite compares text (Swift's `==` also takes two spellings of
    /// one accented letter for one), compared in place: `utf8.elementsEqual` took about 70 instructions a byte, and
    /// `elementsEqual` over the buffers 28 (callgrind, a batch's keys).
    package func hasSameUTF8Bytes(as other: String) -> Bool {
        withUTF8Bytes { bytes in
            other.withUTF8Bytes { otherBytes in
                guard bytes.count == otherBytes.count else { return false }
                // An empty buffer may have no address: two of them are equal.
                guard let first = bytes.baseAddress, let second = otherBytes.baseAddress else { return true }
                return memcmp(first, second, bytes.count) == 0
            }
        }
    }
}
