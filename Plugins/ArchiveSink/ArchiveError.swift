/// A libarchive call failed: what we tried and what libarchive said.
struct ArchiveError: Error, Sendable, CustomStringConvertible {
    var message: String

    init(_ message: String) {
        self.message = message
    }

    var description: String { message }
}
