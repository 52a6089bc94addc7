import Glibc

/// The mock server could not start, or was given something it cannot serve (a recorded answer that is not one).
public struct MockServerError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    /// An error naming the failed call and the system's reason, e.g. `cannot bind 127.0.0.1:8080: Address in use`.
    static func system(_ what: String, errno code: Int32) -> MockServerError {
        MockServerError("\(what): \(String(cString: strerror(code))) (errno \(code))")
    }

    public var description: String { message }
}
