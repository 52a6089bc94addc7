/// A run could not start: its sink's ``Sink/prepare()`` refused (an object store unreachable, the credentials
/// refused, the bucket missing). Nothing was fetched; `mediafetch` exits 2, as for a config error.
public struct StartupError: Error, Sendable, CustomStringConvertible {
    /// What the sink said, which says what to do.
    public var message: String
    /// The sink's own error.
    public var cause: (any Error & Sendable)?

    public init(_ message: String, cause: (any Error & Sendable)? = nil) {
        self.message = message
        self.cause = cause
    }

    public var description: String { message }
}
