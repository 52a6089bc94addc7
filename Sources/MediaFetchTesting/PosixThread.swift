import Glibc

/// Starts POSIX threads running Swift closures.
///
/// The server uses real threads with blocking sockets rather than Swift concurrency: a test that blocks the
/// cooperative pool (two cores here) must not be able to stall the server it is talking to.
enum PosixThread {
    private final class Box {
        let body: @Sendable () -> Void

        init(_ body: @escaping @Sendable () -> Void) {
            self.body = body
        }
    }

    /// Runs `body` on a new thread.
    /// - Parameter detached: a detached thread cleans up after itself; otherwise it must be joined.
    /// - Returns: the thread, or nil when it could not be created.
    static func spawn(
        stackSize: Int = 1 << 20,
        detached: Bool,
        _ body: @escaping @Sendable () -> Void
    ) -> pthread_t? {
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        pthread_attr_setstacksize(&attributes, stackSize)
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        let box = Unmanaged.passRetained(Box(body)).toOpaque()
        var thread = pthread_t()
        let result = pthread_create(
            &thread, &attributes,
            { argument in
                guard let argument else { return nil }
                Unmanaged<Box>.fromOpaque(argument).takeRetainedValue().body()
                return nil
            }, box)
        guard result == 0 else {
            Unmanaged<Box>.fromOpaque(box).release()
            return nil
        }
        return thread
    }
}
