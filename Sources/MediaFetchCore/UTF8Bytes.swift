extension String {
    /// `body` over the string's UTF-8 bytes: in place when they are contiguous (a native string's always are),
    /// else over a copy. A loop over `utf8` itself took tens of instructions a byte in callgrind counts of the
    /// per-item path (80 in the ledger's key filter), one over the buffer a few. `package`: shared by this
    /// package's modules, not public API.
    package func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) throws -> Result) rethrows -> Result {
        if let result = try utf8.withContiguousStorageIfAvailable(body) { return result }
        return try Array(utf8).withUnsafeBufferPointer(body)
    }
}
