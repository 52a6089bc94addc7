import Foundation

/// Turns arbitrary text (catalog metadata, a layout's output) into one path component that is safe
/// on every common filesystem: Linux, macOS (APFS, HFS+), Windows (NTFS, FAT) and inside archives.
///
/// The rules, applied in this order:
/// 1. Whitespace of any kind (tabs, newlines, no-break spaces) becomes a plain space.
/// 2. NUL, C0 controls, DEL, C1 controls and Unicode bidi controls (U+200E, U+200F, U+061C,
///    U+202A–U+202E, U+2066–U+2069) are removed: they are invisible and let a name pose as another.
/// 3. `/` and `\` (separators somewhere) and the Windows-reserved `<>:"|?*` become `_`.
/// 4. The text is NFC-normalized, so the same title from two catalogs is the same byte string.
/// 5. Runs of spaces collapse to one; leading dots and spaces are stripped (no `.`, `..` or hidden
///    files); trailing dots and spaces are stripped (Windows drops them silently).
/// 6. Windows device names (`CON`, `PRN`, `AUX`, `NUL`, `COM1`–`COM9`, `LPT1`–`LPT9`, any case, with or
///    without an extension) get a `_` prefix.
/// 7. The result is cut to at most ``maxComponentBytes`` bytes of UTF-8 at a `Character` boundary; with
///    `keepingExtension` the extension survives the cut.
/// 8. Nothing left becomes `_` (``component(_:keepingExtension:maxBytes:)``) or the empty string
///    (``cleaned(_:keepingExtension:maxBytes:)``, for callers that drop empty components).
///
/// Every function here is total and deterministic: any input, however hostile, gives a valid name.
public enum SafeName {
    /// The longest component most filesystems accept (ext4, APFS, NTFS count bytes or UTF-16 units;
    /// 255 bytes of UTF-8 is within all of them).
    public static let maxComponentBytes = 255

    /// Budgets below this make no sense (room for `_`, a number and an extension); smaller ones are raised.
    static let minimumBytes = 16

    /// The longest text after the last dot that counts as an extension ("m4a", "jpeg", "flac").
    static let maxExtensionBytes = 16

    /// A safe, non-empty component for `raw`.
    /// - Parameters:
    ///   - raw: the text to make a name of (a title, an artist), as the catalog gave it.
    ///   - keepingExtension: treat a short alphanumeric suffix after the last dot as an extension and keep it
    ///     when the name is cut (for file names; directory names pass false).
    ///   - maxBytes: the UTF-8 budget; at least 16.
    public static func component(
        _ raw: String,
        keepingExtension: Bool = false,
        maxBytes: Int = maxComponentBytes
    ) -> String {
        let name = cleaned(raw, keepingExtension: keepingExtension, maxBytes: maxBytes)
        return name.isEmpty ? "_" : name
    }

    /// Like ``component(_:keepingExtension:maxBytes:)`` but returns "" when nothing usable is left, so a
    /// layout can drop a directory level whose field was missing.
    public static func cleaned(
        _ raw: String,
        keepingExtension: Bool = false,
        maxBytes: Int = maxComponentBytes
    ) -> String {
        let budget = max(maxBytes, minimumBytes)
        if isUnchanged(raw, keepingExtension: keepingExtension, budget: budget) { return raw }
        return cleanedBySteps(raw, keepingExtension: keepingExtension, budget: budget)
    }

    /// ``cleaned(_:keepingExtension:maxBytes:)`` rule by rule, for a name some rule may change.
    static func cleanedBySteps(_ raw: String, keepingExtension: Bool, budget: Int) -> String {
        let text = normalized(raw)
        if keepingExtension, let (stem, ext) = splitExtension(text) {
            // An extension with nothing before it (an empty title) keeps a stand-in stem rather than
            // turning into a dot file or a bare "m4a".
            var base = stripEnds(stem)
            if base.isEmpty { base = "_" }
            return assemble(stem: base, suffix: "", ext: ext, budget: budget)
        }
        return assemble(stem: stripEnds(text), suffix: "", ext: nil, budget: budget)
    }

    /// Whether no rule changes `raw`: printable ASCII with none of the replaced characters and no run of spaces,
    /// no dot or space at either end (nor at the end of the stem before a kept extension), within `budget`, not
    /// a device name. Most names are, and the steps cost about 7,000 instructions a name to give them back as
    /// they came.
    static func isUnchanged(_ raw: String, keepingExtension: Bool, budget: Int) -> Bool {
        let plain = raw.withUTF8Bytes { bytes -> Bool in
            guard let first = bytes.first, let last = bytes.last, bytes.count <= budget,
                first != UInt8(ascii: "."), first != 0x20, last != UInt8(ascii: "."), last != 0x20
            else { return false }
            var previous: UInt8 = 0
            for byte in bytes {
                switch byte {
                case 0x00...0x1F, 0x7F...0xFF: return false
                case _ where isReplacedASCII(byte): return false
                case 0x20 where previous == 0x20: return false
                default: previous = byte
                }
            }
            // The stem before a kept extension (as ``splitExtension(_:)`` finds one, on bytes, with the same
            // ``maxExtensionBytes``) loses trailing dots and spaces of its own ("Song ..m4a").
            if keepingExtension, let dot = bytes.lastIndex(of: UInt8(ascii: ".")),
                (1...maxExtensionBytes).contains(bytes.count - dot - 1),
                bytes[(dot + 1)...].allSatisfy({ $0.isASCIILetterOrDigit })
            {
                return bytes[dot - 1] != UInt8(ascii: ".") && bytes[dot - 1] != 0x20
            }
            return true
        }
        return plain && !isASCIIDeviceName(raw)
    }

    /// `name` with ` (n)` inserted before its extension (when `keepingExtension`), cut to fit `maxBytes`.
    ///
    /// `name` should already be safe (from ``component(_:keepingExtension:maxBytes:)``); the result is too.
    public static func numbered(
        _ name: String,
        _ number: Int,
        keepingExtension: Bool = false,
        maxBytes: Int = maxComponentBytes
    ) -> String {
        let budget = max(maxBytes, minimumBytes)
        let suffix = " (\(number))"
        if keepingExtension, let (stem, ext) = splitExtension(name) {
            return assemble(stem: stem.isEmpty ? "_" : stem, suffix: suffix, ext: ext, budget: budget)
        }
        return assemble(stem: name.isEmpty ? "_" : name, suffix: suffix, ext: nil, budget: budget)
    }

    /// Splits `name` at its last dot when what follows is a plausible extension: 1 to 16 ASCII letters or
    /// digits. "Mr. Brightside" has none; "01 Song.m4a" has "m4a".
    public static func splitExtension(_ name: String) -> (stem: String, ext: String)? {
        guard let dot = name.lastIndex(of: ".") else { return nil }
        let ext = name[name.index(after: dot)...]
        guard !ext.isEmpty, ext.utf8.count <= maxExtensionBytes,
            ext.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) })
        else { return nil }
        return (String(name[..<dot]), String(ext))
    }

    /// The key two names are compared by on a case- and normalization-insensitive filesystem (APFS, NTFS):
    /// NFC, then case-folded (upper then lower, so "ß" and "SS" meet), then NFC again.
    public static func collationKey(_ name: String) -> String {
        // ASCII is already NFC, and its case folding is plain lowercasing (the common case, and Foundation's
        // normalization is slow).
        if isASCII(name) { return name.lowercased() }
        return unicodeCollationKey(name)
    }

    /// ``collationKey(_:)`` for any text.
    static func unicodeCollationKey(_ name: String) -> String {
        name.precomposedStringWithCanonicalMapping.uppercased().lowercased().precomposedStringWithCanonicalMapping
    }

    static func isASCII(_ text: String) -> Bool {
        text.withUTF8Bytes { $0.allSatisfy { $0 < 0x80 } }
    }

    // MARK: - Steps

    /// Rules 1–5 up to whitespace collapsing: the characters of the name, before its ends are trimmed.
    static func normalized(_ raw: String) -> String {
        isASCII(raw) ? normalizedASCII(raw) : normalizedScalars(raw)
    }

    /// ``normalized(_:)`` for any text, scalar by scalar.
    static func normalizedScalars(_ raw: String) -> String {
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            if scalar.properties.isWhitespace {
                scalars.append(" ")
            } else if isInvisibleControl(scalar) {
                continue
            } else if reservedCharacters.contains(scalar) {
                scalars.append("_")
            } else {
                scalars.append(scalar)
            }
        }
        // NFC after removing controls: a bidi mark between a letter and its accent would otherwise
        // keep them from composing.
        let nfc = String(scalars).precomposedStringWithCanonicalMapping
        var collapsed = ""
        collapsed.reserveCapacity(nfc.utf8.count)
        var lastWasSpace = false
        for scalar in nfc.unicodeScalars {
            let isSpace = scalar == " "
            if isSpace && lastWasSpace { continue }
            collapsed.unicodeScalars.append(scalar)
            lastWasSpace = isSpace
        }
        return collapsed
    }

    /// ``normalized(_:)`` for ASCII text, on bytes: the same rules (ASCII whitespace is tab to carriage
    /// return and space; the other controls are dropped), and no normalization is needed.
    static func normalizedASCII(_ raw: String) -> String {
        raw.withUTF8Bytes { raw in
            var bytes: [UInt8] = []
            bytes.reserveCapacity(raw.count)
            var lastWasSpace = false
            for byte in raw {
                var out = byte
                switch byte {
                case 0x09...0x0D, 0x20: out = 0x20
                case 0x00...0x08, 0x0E...0x1F, 0x7F: continue
                case _ where isReplacedASCII(byte): out = UInt8(ascii: "_")
                default: break
                }
                let isSpace = out == 0x20
                if isSpace && lastWasSpace { continue }
                bytes.append(out)
                lastWasSpace = isSpace
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    /// The characters rule 3 replaces with `_`, as ASCII bytes: `/`, `\` and `<>:"|?*`.
    static func isReplacedASCII(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "/"), UInt8(ascii: "\\"), UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: ":"),
            UInt8(ascii: "\""), UInt8(ascii: "|"), UInt8(ascii: "?"), UInt8(ascii: "*"):
            true
        default: false
        }
    }

    /// Strips leading dots and spaces and trailing dots and spaces.
    static func stripEnds(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { $0 != "." && $0 != " " }) else { return "" }
        guard let last = scalars.lastIndex(where: { $0 != "." && $0 != " " }) else { return "" }
        return String(scalars[first...last])
    }

    /// Strips trailing dots and spaces only (after a cut, the start is already clean).
    static func stripTrailing(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let last = scalars.lastIndex(where: { $0 != "." && $0 != " " }) else { return "" }
        return String(scalars[...last])
    }

    /// Rules 6–7: the device-name guard, then `stem + suffix + "." + ext` cut to `budget` bytes by
    /// shortening the stem.
    static func assemble(stem: String, suffix: String, ext: String?, budget: Int) -> String {
        guard !stem.isEmpty else { return "" }
        let tail = suffix + (ext.map { "." + $0 } ?? "")
        var stemBudget = budget - tail.utf8.count
        var extPart = tail
        if stemBudget < 1 {
            // Cannot happen with sane budgets; fall back to cutting the whole thing.
            extPart = ""
            stemBudget = budget
        }
        var base = stem
        if isDeviceName(base + (ext.map { "." + $0 } ?? "")) { base = "_" + base }
        if base.utf8.count > stemBudget {
            base = stripTrailing(prefix(base, maxBytes: stemBudget))
            if base.isEmpty { base = "_" }
        }
        return base + extPart
    }

    /// The longest prefix of `text` made of whole `Character`s and at most `maxBytes` bytes of UTF-8.
    static func prefix(_ text: String, maxBytes: Int) -> String {
        var used = 0
        var end = text.startIndex
        for index in text.indices {
            let size = text[index].utf8.count
            if used + size > maxBytes { break }
            used += size
            end = text.index(after: index)
        }
        return String(text[..<end])
    }

    /// Windows treats `CON`, `con.txt` and `Con .tar.gz` alike: the name up to its first dot, trailing
    /// spaces ignored, compared without case.
    static func isDeviceName(_ name: String) -> Bool {
        isASCII(name) ? isASCIIDeviceName(name) : isUnicodeDeviceName(name)
    }

    /// ``isDeviceName(_:)`` on the bytes of ASCII text: every store of a many-file run asks, and the
    /// Character-level answer cost 40,000 instructions a name.
    static func isASCIIDeviceName(_ name: String) -> Bool {
        var base = name.utf8.prefix { $0 != UInt8(ascii: ".") }
        while base.last == UInt8(ascii: " ") { base = base.dropLast() }
        guard (3...7).contains(base.count) else { return false }
        // ASCII upper case: a-z less 32.
        let upper = base.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }
        return deviceNames.contains(String(decoding: upper, as: UTF8.self))
    }

    /// ``isDeviceName(_:)`` for any text.
    static func isUnicodeDeviceName(_ name: String) -> Bool {
        let base = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        // Device names are a few bytes long (the longest, CONOUT$, is 7, and no spelling that uppercases to
        // one is over 16): most names are ruled out here, before the Unicode work below.
        let trailingSpaces = base.utf8.reversed().prefix { $0 == 0x20 }.count
        guard base.utf8.count - trailingSpaces <= 16 else { return false }
        let trimmed = base.reversed().drop { $0 == " " }.reversed()
        return deviceNames.contains(String(trimmed).uppercased())
    }

    static func isInvisibleControl(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F: true
        case 0x200E, 0x200F, 0x061C, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    static let reservedCharacters: Set<Unicode.Scalar> = ["/", "\\", "<", ">", ":", "\"", "|", "?", "*"]

    static let deviceNames: Set<String> = {
        var names: Set<String> = ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"]
        // Windows also reserves the superscript digits ¹²³ after COM and LPT.
        for digit in ["1", "2", "3", "4", "5", "6", "7", "8", "9", "\u{B9}", "\u{B2}", "\u{B3}"] {
            names.insert("COM" + digit)
            names.insert("LPT" + digit)
        }
        return names
    }()
}

extension UInt8 {
    /// Whether the byte is an ASCII letter or digit: the bytes that name-making keeps on its fast paths.
    public var isASCIILetterOrDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self)
    }

    /// The byte with an ASCII capital made lowercase, as `String.lowercased()` makes it; any other byte as it is.
    package var asciiLowercased: UInt8 { (0x41...0x5A).contains(self) ? self | 0x20 : self }
}
