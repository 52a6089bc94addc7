#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An open file descriptor that closes itself: every early exit in the store path (and there are many)
/// releases it without a `defer` per call site.
///
/// Non-copyable so that exactly one owner closes it.
public struct FileDescriptor: ~Copyable {
    /// The descriptor, for system calls.
    public let raw: Int32

    /// Takes ownership of `raw`: it is closed when this value goes.
    public init(_ raw: Int32) {
        self.raw = raw
    }

    /// Closes now and reports the outcome: for a file just written, `close` is the last chance to hear
    /// of a write error (on NFS, for one).
    /// - Returns: 0, or the `errno` of a failed close.
    public consuming func closeChecked() -> Int32 {
        let result = close(raw)
        discard self
        return result == 0 ? 0 : errno
    }

    /// Gives up ownership: the descriptor stays open, and closing it is the caller's.
    public consuming func release() -> Int32 {
        let descriptor = raw
        discard self
        return descriptor
    }

    deinit {
        // Only descriptors whose data is already fsynced (or never written) reach here, so a failing
        // close cannot lose data; there is nothing useful to do with its error.
        _ = close(raw)
    }
}

/// The system's words for an `errno` value, e.g. "Permission denied", for messages.
public func errorText(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "error \(code)" }
    return String(cString: text)
}
