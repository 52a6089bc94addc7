/// How many terminal cells text takes, and cutting and padding by cells rather than by characters, so that a
/// table lines up in any script.
///
/// Measured per grapheme cluster (`Character`), the unit a terminal draws: East Asian wide and fullwidth
/// characters and emoji take two cells, a combining mark or a zero-width character adds nothing to the
/// character it belongs to, controls take none, everything else one. An emoji sequence (joined with ZWJ,
/// a flag, a keycap, anything with the emoji variation selector) is one picture, two cells wide.
enum DisplayWidth {
    /// The cells `text` takes.
    static func of(_ text: some StringProtocol) -> Int {
        text.reduce(0) { $0 + of($1) }
    }

    /// The cells one grapheme cluster takes.
    static func of(_ character: Character) -> Int {
        let scalars = character.unicodeScalars
        guard let first = scalars.first else { return 0 }
        if (0x1F1E6...0x1F1FF).contains(first.value) { return 2 }
        if scalars.count > 1, first.properties.isEmoji,
            scalars.contains(where: { $0.value == 0xFE0F || $0.value == 0x200D })
        {
            return 2
        }
        // Whatever follows the first scalar (combining marks, Hangul vowels and finals) draws on its cells.
        return of(scalar: first)
    }

    /// The cells a scalar takes on its own.
    static func of(scalar: Unicode.Scalar) -> Int {
        switch scalar.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format, .control, .lineSeparator, .paragraphSeparator:
            return 0
        default:
            break
        }
        // Hangul vowels and finals only ever join a preceding initial.
        if (0x1160...0x11FF).contains(scalar.value) { return 0 }
        return isWide(scalar.value) ? 2 : 1
    }

    /// `text` cut to at most `width` cells at a grapheme boundary, with "…" in place of what was left out.
    static func truncated(_ text: String, to width: Int) -> String {
        guard of(text) > width else { return text }
        guard width > 0 else { return "" }
        var kept = ""
        var used = 0
        for character in text {
            let cells = of(character)
            if used + cells > width - 1 { break }
            kept.append(character)
            used += cells
        }
        return kept + "…"
    }

    /// `text` followed by spaces up to `width` cells (as it is when already that wide or wider).
    static func padded(_ text: String, to width: Int) -> String {
        text + String(repeating: " ", count: max(0, width - of(text)))
    }

    /// Whether a code point is East Asian Wide or Fullwidth (Unicode's EastAsianWidth.txt, W and F), which
    /// takes in the emoji drawn as pictures by default.
    static func isWide(_ value: UInt32) -> Bool {
        var low = 0
        var high = wideRanges.count - 1
        while low <= high {
            let middle = (low + high) / 2
            let range = wideRanges[middle]
            if value < range.lowerBound {
                high = middle - 1
            } else if value > range.upperBound {
                low = middle + 1
            } else {
                return true
            }
        }
        return false
    }

    /// The W and F code points of Unicode 14 (Python's `unicodedata.east_asian_width`), combining marks left out,
    /// runs joined across unassigned gaps, and planes 2 and 3 whole, as the standard assigns them.
    static let wideRanges: [ClosedRange<UInt32>] = [
        0x1100...0x115F, 0x231A...0x231B, 0x2329...0x232A, 0x23E9...0x23EC, 0x23F0...0x23F0, 0x23F3...0x23F3,
        0x25FD...0x25FE, 0x2614...0x2615, 0x2648...0x2653, 0x267F...0x267F, 0x2693...0x2693, 0x26A1...0x26A1,
        0x26AA...0x26AB, 0x26BD...0x26BE, 0x26C4...0x26C5, 0x26CE...0x26CE, 0x26D4...0x26D4, 0x26EA...0x26EA,
        0x26F2...0x26F3, 0x26F5...0x26F5, 0x26FA...0x26FA, 0x26FD...0x26FD, 0x2705...0x2705, 0x270A...0x270B,
        0x2728...0x2728, 0x274C...0x274C, 0x274E...0x274E, 0x2753...0x2755, 0x2757...0x2757, 0x2795...0x2797,
        0x27B0...0x27B0, 0x27BF...0x27BF, 0x2B1B...0x2B1C, 0x2B50...0x2B50, 0x2B55...0x2B55, 0x2E80...0x3029,
        0x302E...0x303E, 0x3041...0x3096, 0x309B...0x3247, 0x3250...0x4DBF, 0x4E00...0xA4C6, 0xA960...0xA97C,
        0xAC00...0xD7A3, 0xF900...0xFAD9, 0xFE10...0xFE19, 0xFE30...0xFE6B, 0xFF01...0xFF60, 0xFFE0...0xFFE6,
        0x16FE0...0x16FE3, 0x16FF0...0x1B2FB, 0x1F004...0x1F004, 0x1F0CF...0x1F0CF, 0x1F18E...0x1F18E,
        0x1F191...0x1F19A, 0x1F200...0x1F320, 0x1F32D...0x1F335, 0x1F337...0x1F37C, 0x1F37E...0x1F393,
        0x1F3A0...0x1F3CA, 0x1F3CF...0x1F3D3, 0x1F3E0...0x1F3F0, 0x1F3F4...0x1F3F4, 0x1F3F8...0x1F43E,
        0x1F440...0x1F440, 0x1F442...0x1F4FC, 0x1F4FF...0x1F53D, 0x1F54B...0x1F54E, 0x1F550...0x1F567,
        0x1F57A...0x1F57A, 0x1F595...0x1F596, 0x1F5A4...0x1F5A4, 0x1F5FB...0x1F64F, 0x1F680...0x1F6C5,
        0x1F6CC...0x1F6CC, 0x1F6D0...0x1F6D2, 0x1F6D5...0x1F6DF, 0x1F6EB...0x1F6EC, 0x1F6F4...0x1F6FC,
        0x1F7E0...0x1F7F0, 0x1F90C...0x1F93A, 0x1F93C...0x1F945, 0x1F947...0x1F9FF, 0x1FA70...0x1FAF6,
        0x20000...0x3FFFD,
    ]
}
