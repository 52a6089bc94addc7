import Foundation

/// `Content-Range: bytes START-END/TOTAL`.
public struct ContentRange: Sendable, Hashable {
    public var start: Int64
    public var end: Int64
    /// The whole file's size; nil for `*`.
    public var total: Int64?

    public init?(_ header: String) {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let parts = trimmed.dropFirst(6).split(separator: "/", maxSplits: 1)
        let bounds = parts.first?.split(separator: "-", maxSplits: 1) ?? []
        guard bounds.count == 2, let start = Int64(bounds[0]), let end = Int64(bounds[1]), start <= end else {
            return nil
        }
        self.start = start
        self.end = end
        total = parts.count == 2 ? Int64(parts[1]) : nil
    }

    /// The file's size from a 416's `Content-Range: bytes */SIZE`.
    public static func unsatisfiedLength(_ header: String) -> Int64? {
        let trimmed = header.trimmingCharacters(in: .whitespaces).lowercased()
        guard trimmed.hasPrefix("bytes */") else { return nil }
        return Int64(trimmed.dropFirst(8))
    }
}
