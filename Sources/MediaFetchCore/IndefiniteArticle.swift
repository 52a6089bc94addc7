/// "a" or "an" before a word, for messages that name a kind they only learn at run time: "an artist record",
/// "a podcast", "an ebook", "an audiobook".
///
/// Decided by how the word is said, as far as its spelling tells: a vowel letter takes "an", except a "u" said
/// "you" (a user, a unit) and "one"; a silent "h" (an hour, an honest) takes "an" too.
public enum IndefiniteArticle {
    /// `word` with its article: `before("artist")` is "an artist".
    public static func before(_ word: String) -> String {
        "\(article(for: word)) \(word)"
    }

    /// "a" or "an" for `word`.
    public static func article(for word: String) -> String {
        let lower = word.lowercased()
        let saidAsConsonant = ["uni", "use", "usi", "usu", "ura", "ure", "uti", "one", "once", "eu"]
        if saidAsConsonant.contains(where: { lower.hasPrefix($0) }) { return "a" }
        let silentH = ["hour", "honest", "honor", "honour", "heir"]
        if silentH.contains(where: { lower.hasPrefix($0) }) { return "an" }
        guard let first = lower.unicodeScalars.first else { return "a" }
        return "aeiou".unicodeScalars.contains(first) ? "an" : "a"
    }
}
