import Foundation

/// Reads `itunes:duration` in each form feeds write it: seconds (`3579`, `3579.5`), `MM:SS`, `HH:MM:SS`
/// (`04:26:45`, `1:02:03`), minutes past 59 (`75:30`), and fractions of a second (`00:42:50.250`).
enum EpisodeDuration {
    /// The duration in milliseconds, or nil for an empty or unreadable value.
    static func milliseconds(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var seconds = 0.0
        for (index, part) in parts.enumerated() {
            let trimmed = FeedParser.trimmed(String(part))
            // Only the last part may have a fraction; every part is a plain, non-negative number.
            guard !trimmed.isEmpty, trimmed.allSatisfy({ $0.isASCII && ($0.isNumber || $0 == ".") }),
                index == parts.count - 1 || !trimmed.contains("."), let value = Double(trimmed)
            else { return nil }
            // The first part may run past 59 (`75:30`); minutes and seconds after it may not.
            if index > 0, value >= 60 { return nil }
            seconds = seconds * 60 + value
        }
        guard seconds.isFinite, seconds < 1e9 else { return nil }
        return Int((seconds * 1000).rounded())
    }
}
