import Foundation

/// A parsed `Range` header against a file of known size (RFC 9110 14).
enum MockByteRange: Equatable {
    /// Malformed, multiple ranges, or not bytes: the server answers 200 with the whole file, as RFC 9110 allows.
    case ignored
    /// Well-formed but outside the file: 416.
    case unsatisfiable
    /// The bytes to send, clamped to the file.
    case satisfiable(Range<Int64>)

    static func parse(_ header: String, size: Int64) -> MockByteRange {
        let trimmed = header.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .ignored }
        let spec = trimmed.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return .ignored }
        let first = spec[spec.startIndex..<dash].trimmingCharacters(in: .whitespaces)
        let last = spec[spec.index(after: dash)...].trimmingCharacters(in: .whitespaces)
        let digits = { (text: String) in !text.isEmpty && text.utf8.allSatisfy { $0 >= 48 && $0 <= 57 } }
        if first.isEmpty {
            // Suffix range: the last N bytes.
            guard digits(last), let count = Int64(last) else { return .ignored }
            guard count > 0, size > 0 else { return .unsatisfiable }
            return .satisfiable(max(0, size - count)..<size)
        }
        guard digits(first), let start = Int64(first) else { return .ignored }
        var end = size - 1
        if !last.isEmpty {
            guard digits(last), let parsed = Int64(last) else { return .ignored }
            guard parsed >= start else { return .ignored }
            end = min(parsed, size - 1)
        }
        guard start < size else { return .unsatisfiable }
        return .satisfiable(start..<(end + 1))
    }
}
