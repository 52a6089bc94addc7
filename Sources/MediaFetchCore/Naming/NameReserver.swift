/// Hands out unique relative paths, in the order asked, so two items never share a file.
///
/// Names are compared by ``SafeName/collationKey(_:)`` (NFC, case-folded): on a case-insensitive
/// filesystem `Song.m4a` and `song.m4a` are one file, so the second becomes `song (2).m4a` everywhere,
/// and the tree is the same on every filesystem.
///
/// * The second path wanting `A/B/Title.m4a` gets `A/B/Title (2).m4a`, the third `(3)`, and so on; a
///   numbered name someone already took is skipped. Numbers go before the extension and the stem is cut
///   so the component stays within the byte budget.
/// * Directories are compared the same way: the first spelling of a directory wins, so `abba/` after
///   `ABBA/` lands in `ABBA/`. A directory that would clash with an earlier file is numbered.
///
/// The answer depends only on the paths reserved before, never on timing: call it in plan order.
/// A value type; a sink keeps one behind a lock.
public struct NameReserver: Sendable {
    /// The UTF-8 budget of one component.
    public let maxBytes: Int
    /// Directory key (parent's chosen key + "/" + wanted name's key) to the directory's chosen spelling.
    private var directories: [String: String] = [:]
    /// Keys of every path taken by a directory or a file, for clash checks.
    private var taken: Set<String> = []

    public init(maxBytes: Int = SafeName.maxComponentBytes) {
        self.maxBytes = maxBytes
    }

    /// Reserves a unique path for `components` (each already safe, the last one the file name) and
    /// returns it; the same number of components comes back.
    public mutating func reserve(_ components: [String]) -> [String] {
        guard let fileName = components.last else { return [] }
        var result: [String] = []
        var parentKey = ""
        for name in components.dropLast() {
            let wantedKey = parentKey + "/" + SafeName.collationKey(name)
            if let chosen = directories[wantedKey] {
                result.append(chosen)
                parentKey += "/" + SafeName.collationKey(chosen)
                continue
            }
            var chosen = name
            var number = 2
            // A directory may join an existing directory of the same key, but not a file.
            while true {
                let key = parentKey + "/" + SafeName.collationKey(chosen)
                if !taken.contains(key) || directories[key] != nil { break }
                chosen = SafeName.numbered(name, number, maxBytes: maxBytes)
                number += 1
            }
            let chosenKey = parentKey + "/" + SafeName.collationKey(chosen)
            if let existing = directories[chosenKey] { chosen = existing }
            directories[wantedKey] = chosen
            directories[chosenKey] = chosen
            taken.insert(chosenKey)
            result.append(chosen)
            parentKey = chosenKey
        }
        var chosen = fileName
        var number = 2
        while taken.contains(parentKey + "/" + SafeName.collationKey(chosen)) {
            chosen = SafeName.numbered(fileName, number, keepingExtension: true, maxBytes: maxBytes)
            number += 1
        }
        taken.insert(parentKey + "/" + SafeName.collationKey(chosen))
        result.append(chosen)
        return result
    }

    /// ``reserve(_:)`` for a `/`-separated path.
    public mutating func reserve(path: String) -> String {
        reserve(path.split(separator: "/").map(String.init)).joined(separator: "/")
    }
}
