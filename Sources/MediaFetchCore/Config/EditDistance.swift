/// Levenshtein distance, for "did you mean" suggestions.
enum EditDistance {
    /// The number of single-character insertions, deletions and substitutions that turn `a` into `b`,
    /// ignoring case. Stops early, returning `limit + 1`, once the distance must exceed `limit`, so a huge
    /// input costs no more than its length.
    static func distance(_ a: String, _ b: String, limit: Int = .max) -> Int {
        let a = Array(a.lowercased().unicodeScalars)
        let b = Array(b.lowercased().unicodeScalars)
        let cap = limit == .max ? limit : limit + 1
        if abs(a.count - b.count) > limit { return cap }
        if a.isEmpty { return min(b.count, cap) }
        if b.isEmpty { return min(a.count, cap) }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            var rowMinimum = i
            for j in 1...b.count {
                let substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)
                current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
                rowMinimum = min(rowMinimum, current[j])
            }
            // Every later row is at least this row's minimum, so nothing below the limit can follow.
            if rowMinimum > limit { return cap }
            swap(&previous, &current)
        }
        return min(previous[b.count], cap)
    }

    /// The candidate closest to `word`, when it is close enough to be a plausible typo: at most
    /// max(2, a third of the word) edits, and not a complete rewrite. Ties go to the earlier candidate.
    static func nearest(_ word: String, in candidates: [String]) -> String? {
        let length = word.unicodeScalars.count
        let threshold = max(2, length / 3)
        var best: (name: String, distance: Int)?
        for candidate in candidates {
            let distance = distance(word, candidate, limit: threshold)
            guard distance <= threshold else { continue }
            // "ab" is two edits from "xy" too; a suggestion must keep at least one character.
            guard distance < max(length, candidate.unicodeScalars.count) else { continue }
            if best.map({ distance < $0.distance }) ?? true { best = (candidate, distance) }
        }
        return best?.name
    }
}
