import Testing

@testable import MediaFetchCLI

/// Terminal cells, as a terminal lays text out: the measure the search table is aligned by.
struct DisplayWidthTests {
    @Test(arguments: [
        ("abc", 3), ("", 0), ("日本語", 6), ("東京の夜 Night", 14), ("ＡＢ", 4), ("한국어", 6),
        // Combining marks take no cell of their own: e + U+0301 is one cell, however many marks are stacked.
        ("e\u{301}", 1), ("Ame\u{301}lie", 6), ("a\u{300}\u{301}\u{302}", 1), ("\u{301}", 0),
        // Emoji drawn as pictures take two; a ZWJ sequence, a flag and a keycap are one picture each.
        ("🎸", 2), ("👩\u{200D}👩\u{200D}👧", 2), ("🇯🇵", 2), ("1\u{FE0F}\u{20E3}", 2), ("👍🏽", 2),
        ("\u{2764}\u{FE0F}", 2), ("\u{2764}", 1),
        // Hangul from jamo: one syllable, two cells.
        ("\u{1100}\u{1161}\u{11A8}", 2),
        // Controls, zero-width and bidirectional characters take none; the replacement character one.
        ("\u{7}", 0), ("a\u{200B}b", 2), ("\u{202E}", 0), ("\u{FFFD}", 1), ("\u{FEFF}", 0),
    ])
    func cellsOfText(text: String, cells: Int) {
        #expect(DisplayWidth.of(text) == cells, "\(text.unicodeScalars.map { String($0.value, radix: 16) })")
    }

    @Test func anEmojiSequenceIsOneGrapheme() {
        let family = "👩\u{200D}👩\u{200D}👧"
        #expect(family.count == 1)
        #expect(family.unicodeScalars.count == 5)
        #expect(DisplayWidth.of(family + family) == 4)
    }

    @Test func cuttingKeepsWholeGraphemesAndEndsWithAnEllipsis() {
        // Wide characters: 5 cells hold two of them and the ellipsis; a third would not fit.
        #expect(DisplayWidth.truncated("日本語のタイトル", to: 5) == "日本…")
        #expect(DisplayWidth.truncated("日本語のタイトル", to: 6) == "日本…")
        #expect(DisplayWidth.truncated("日本語", to: 6) == "日本語")
        // A combining mark stays with its letter.
        let cut = DisplayWidth.truncated("e\u{301}e\u{301}e\u{301}", to: 2)
        #expect(cut == "e\u{301}…")
        #expect(cut.unicodeScalars.map(\.value) == [0x65, 0x301, 0x2026])
        // A ZWJ sequence is kept whole or left out whole.
        let family = "👩\u{200D}👩\u{200D}👧"
        #expect(DisplayWidth.truncated(family + family + family, to: 4) == family + "…")
        #expect(DisplayWidth.truncated("abc", to: 0) == "")
        let texts = ["日本語のタイトル", "Ame\u{301}lie Poulain", family + "abc" + family, "🇯🇵🇯🇵🇯🇵"]
        for text in texts {
            for width in 1...12 {
                #expect(DisplayWidth.of(DisplayWidth.truncated(text, to: width)) <= width)
            }
        }
    }

    @Test func paddingFillsToTheWidthInCells() {
        #expect(DisplayWidth.padded("日本", to: 6) == "日本  ")
        #expect(DisplayWidth.padded("e\u{301}", to: 3) == "e\u{301}  ")
        #expect(DisplayWidth.padded("toolong", to: 3) == "toolong")
    }
}
