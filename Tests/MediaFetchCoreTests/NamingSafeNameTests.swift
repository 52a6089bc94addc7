import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// One hostile input and the component it must become.
struct HostileName: Sendable, CustomTestStringConvertible {
    var label: String
    var input: String
    var expected: String
    var keepingExtension = false

    var testDescription: String { label }
}

@Suite("SafeName")
struct NamingSafeNameTests {
    static let table: [HostileName] = [
        HostileName(label: "plain", input: "Upside Down", expected: "Upside Down"),
        HostileName(label: "slash", input: "AC/DC", expected: "AC_DC"),
        HostileName(label: "backslash", input: "a\\b", expected: "a_b"),
        HostileName(label: "traversal", input: "../../etc/passwd", expected: "_.._etc_passwd"),
        HostileName(label: "absolute", input: "/abs/path", expected: "_abs_path"),
        HostileName(label: "dot", input: ".", expected: "_"),
        HostileName(label: "dot dot", input: "..", expected: "_"),
        HostileName(label: "hidden", input: ".hidden", expected: "hidden"),
        HostileName(label: "dots and spaces", input: " . .x. . ", expected: "x"),
        HostileName(label: "control chars", input: "a\u{1}b\u{1B}[31mc\u{7F}d\u{85}e\u{9F}", expected: "ab[31mcd e"),
        HostileName(label: "NUL", input: "a\u{0}b", expected: "ab"),
        HostileName(label: "newlines and tabs", input: "a\n\tb\r\nc", expected: "a b c"),
        HostileName(label: "RTL override", input: "evil\u{202E}3pm.exe", expected: "evil3pm.exe"),
        HostileName(label: "bidi isolates and marks", input: "\u{2066}a\u{2069}\u{200E}b\u{200F}", expected: "ab"),
        HostileName(label: "windows reserved", input: "a<b>c:d\"e|f?g*h", expected: "a_b_c_d_e_f_g_h"),
        HostileName(label: "device", input: "CON", expected: "_CON"),
        HostileName(label: "device lower with ext", input: "nul.txt", expected: "_nul.txt"),
        HostileName(label: "device double ext", input: "Com1.tar.gz", expected: "_Com1.tar.gz"),
        HostileName(label: "device LPT9", input: "lpt9", expected: "_lpt9"),
        HostileName(label: "not a device", input: "CONSOLE", expected: "CONSOLE"),
        HostileName(label: "not a device COM10", input: "COM10", expected: "COM10"),
        HostileName(label: "device with space", input: "AUX .m4a", expected: "_AUX.m4a", keepingExtension: true),
        HostileName(label: "trailing dots and spaces", input: "Vol. 2. . ", expected: "Vol. 2"),
        HostileName(label: "empty", input: "", expected: "_"),
        HostileName(label: "only spaces", input: "   \t ", expected: "_"),
        HostileName(label: "only controls", input: "\u{0}\u{202E}", expected: "_"),
        HostileName(label: "whitespace runs", input: "  a   b  ", expected: "a b"),
        HostileName(label: "emoji kept", input: "🎸 Rock 👩‍👩‍👧", expected: "🎸 Rock 👩‍👩‍👧"),
        HostileName(label: "combining to NFC", input: "Beyonce\u{301}", expected: "Beyonc\u{E9}"),
        HostileName(label: "NFC across removed mark", input: "e\u{200E}\u{301}", expected: "\u{E9}"),
        HostileName(label: "empty stem keeps ext", input: ".m4a", expected: "_.m4a", keepingExtension: true),
        HostileName(label: "hidden title, ext", input: ".hidden.m4a", expected: "hidden.m4a", keepingExtension: true),
        HostileName(label: "dot, no ext", input: "Mr. Brightside", expected: "Mr. Brightside", keepingExtension: true),
    ]

    @Test(arguments: table)
    func hostileName(_ row: HostileName) {
        #expect(SafeName.component(row.input, keepingExtension: row.keepingExtension) == row.expected)
    }

    @Test(arguments: table)
    func resultIsStable(_ row: HostileName) {
        // A safe name stays as it is: sanitizing twice changes nothing.
        let once = SafeName.component(row.input, keepingExtension: row.keepingExtension)
        #expect(SafeName.component(once, keepingExtension: row.keepingExtension) == once)
    }

    @Test func cleanedIsEmptyWhenNothingIsLeft() {
        #expect(SafeName.cleaned("  ..  ") == "")
        #expect(SafeName.cleaned("\u{202E}") == "")
        #expect(SafeName.cleaned("x") == "x")
    }

    @Test func tenKilobyteTitleKeepsExtension() {
        let title = String(repeating: "Lorem ipsum dolor sit amet ", count: 400) + ".m4a"
        let name = SafeName.component(title, keepingExtension: true)
        #expect(name.utf8.count <= 255)
        #expect(name.hasSuffix(".m4a"))
        #expect(name.hasPrefix("Lorem ipsum"))
        #expect(!name.dropLast(4).hasSuffix(" "))
        #expect(String(validating: Array(name.utf8), as: UTF8.self) == name)
    }

    @Test(arguments: ["日本語のタイトル", "🎸", "e\u{301}\u{302}", "한국어"])
    func longNamesAreCutAtCharacterBoundaries(_ unit: String) {
        let long = String(repeating: unit, count: 500)
        let name = SafeName.component(long + ".flac", keepingExtension: true)
        #expect(name.utf8.count <= 255)
        #expect(name.hasSuffix(".flac"))
        let stem = name.dropLast(5)
        // Whole characters only: the stem is made of complete copies of the unit's characters.
        let unitCharacters = Set(unit.precomposedStringWithCanonicalMapping)
        #expect(stem.allSatisfy { unitCharacters.contains($0) })
        // Nothing more fit: one more character would exceed the budget.
        #expect(name.utf8.count + (unit.precomposedStringWithCanonicalMapping.first?.utf8.count ?? 0) > 255)
    }

    @Test func cjkWithoutExtensionCutsByBytes() {
        let name = SafeName.component(String(repeating: "漢", count: 200))
        #expect(name.utf8.count == 255)  // 85 three-byte characters
        #expect(name.count == 85)
    }

    @Test func giantGraphemeClusterStillGivesAName() {
        let zalgo = "a" + String(repeating: "\u{301}", count: 2000)
        let name = SafeName.component(zalgo + ".m4a", keepingExtension: true)
        #expect(name.utf8.count <= 255)
        #expect(name.hasSuffix(".m4a"))
        #expect(!name.isEmpty)
    }

    @Test func numberedKeepsExtensionAndBudget() {
        #expect(SafeName.numbered("Title.m4a", 2, keepingExtension: true) == "Title (2).m4a")
        #expect(SafeName.numbered("Album", 3) == "Album (3)")
        let long = SafeName.component(String(repeating: "x", count: 400) + ".m4a", keepingExtension: true)
        let numbered = SafeName.numbered(long, 12, keepingExtension: true)
        #expect(numbered.utf8.count <= 255)
        #expect(numbered.hasSuffix(" (12).m4a"))
    }

    @Test func collationKeyFoldsCaseAndNormalization() {
        #expect(SafeName.collationKey("Beyonc\u{E9}") == SafeName.collationKey("BEYONCE\u{301}"))
        #expect(SafeName.collationKey("Stra\u{DF}e") == SafeName.collationKey("STRASSE"))
        #expect(SafeName.collationKey("a") != SafeName.collationKey("b"))
    }

    @Test func randomBytesNeverCrashAndAlwaysGiveSafeNames() {
        var generator = SplitMix64(seed: 42)
        for _ in 0..<500 {
            let count = Int(generator.next() % 600)
            let scalars = (0..<count).compactMap { _ in Unicode.Scalar(UInt32(generator.next() % 0x11_0000)) }
            var text = ""
            text.unicodeScalars.append(contentsOf: scalars)
            let name = SafeName.component(text, keepingExtension: generator.next() % 2 == 0)
            #expect(!name.isEmpty)
            #expect(name.utf8.count <= 255)
            #expect(!name.hasPrefix("."))
            #expect(!name.hasSuffix(".") && !name.hasSuffix(" "))
            #expect(!name.unicodeScalars.contains { $0.value < 0x20 || $0 == "/" || $0 == "\\" })
        }
    }
}
