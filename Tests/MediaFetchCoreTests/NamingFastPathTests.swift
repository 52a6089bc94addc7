import Foundation
import MediaFetchTesting
import Testing

@testable import MediaFetchCore

/// The ASCII fast paths of naming must answer exactly what the general Unicode paths answer.
@Suite("Naming fast paths")
struct NamingFastPathTests {
    /// Random ASCII text weighted towards what the rules treat specially: controls, whitespace runs,
    /// reserved characters, dots, letters of both cases.
    static func samples(count: Int) -> [String] {
        var random = SplitMix64(seed: 20_261_129)
        let special: [UInt8] = Array(0...0x20) + [0x7F] + Array("/\\<>:\"|?*. ._-()".utf8)
        return (0..<count).map { _ in
            let length = Int.random(in: 0...40, using: &random)
            let bytes = (0..<length).map { _ -> UInt8 in
                Bool.random(using: &random)
                    ? special.randomElement(using: &random)! : UInt8.random(in: 0...0x7F, using: &random)
            }
            return String(decoding: bytes, as: UTF8.self)
        }
    }

    @Test func asciiNormalizationMatchesTheScalarRules() {
        for text in Self.samples(count: 5_000) {
            #expect(SafeName.normalizedASCII(text) == SafeName.normalizedScalars(text), "\(Array(text.utf8))")
        }
    }

    /// A name no rule changes is given back as it came only when the rules, run one by one, give it back too.
    @Test func namesLeftAsTheyCameAreWhatTheRulesGive() {
        var random = SplitMix64(seed: 3)
        let plain = Array("abcXYZ019 .-_()".utf8)
        let made = (0..<5_000).map { _ in
            String(
                decoding: (0..<Int.random(in: 0...24, using: &random)).map { _ in plain.randomElement(using: &random)! },
                as: UTF8.self)
        }
        // The shortcut is taken for plain names, and refused where a rule applies: else the comparison below
        // would hold of the rules against themselves.
        for plainName in ["01 Song.m4a", "f0000000.bin", "Mr. Brightside", "A B (Live)"] {
            #expect(SafeName.isUnchanged(plainName, keepingExtension: true, budget: 255), "\(plainName)")
        }
        for changed in ["CON", "con.m4a", "a..m4a", "Song .m4a", " x", "x.", "a  b", "a/b", "a\tb"] {
            #expect(!SafeName.isUnchanged(changed, keepingExtension: true, budget: 255), "\(changed)")
        }
        let names = Self.samples(count: 5_000) + made + ["CON", "con.m4a", "Aux .txt", "COM1", "a..m4a", "Song .m4a"]
        for text in names {
            for keeping in [false, true] {
                for budget in [SafeName.minimumBytes, 20, SafeName.maxComponentBytes] {
                    #expect(
                        SafeName.cleaned(text, keepingExtension: keeping, maxBytes: budget)
                            == SafeName.cleanedBySteps(text, keepingExtension: keeping, budget: budget),
                        "\(Array(text.utf8)), keeping the extension: \(keeping), budget \(budget)")
                }
            }
        }
    }

    @Test func asciiCollationKeysMatchTheUnicodeKeys() {
        for text in Self.samples(count: 5_000) {
            #expect(SafeName.collationKey(text) == SafeName.unicodeCollationKey(text), "\(Array(text.utf8))")
        }
    }

    @Test func mediaTypesOnBytesMatchFoundationsTrimming() {
        var random = SplitMix64(seed: 11)
        let alphabet = Array("aZ/+-.;; \t\t=x".utf8)
        for _ in 0..<5_000 {
            let length = Int.random(in: 0...24, using: &random)
            let text = String(
                decoding: (0..<length).map { _ in alphabet.randomElement(using: &random)! }, as: UTF8.self)
            #expect(DownloadPolicy.mediaType(text) == DownloadPolicy.mediaTypeByFoundation(text), "\(Array(text.utf8))")
        }
    }

    /// The content-type test as it was written on Strings, before it compared bytes.
    static func acceptsOnStrings(_ contentType: String, patterns: [String]) -> Bool {
        let type = DownloadPolicy.mediaType(contentType)
        return patterns.contains { written in
            let pattern = written.lowercased().utf8
            return pattern.count >= 2 && pattern.suffix(2).elementsEqual("/*".utf8)
                ? type.utf8.starts(with: pattern.dropLast()) : type.utf8.elementsEqual(pattern)
        }
    }

    @Test func contentTypesOnBytesMatchTheTestOnStrings() {
        var random = SplitMix64(seed: 17)
        let alphabet = Array("aAuUdDiIoO/*; \t-x".utf8)
        let fixed = ["audio/*", "Video/*", "application/octet-stream", "*", "/*", "a/", "AUDIO/MP4", "İmage/*", "ä/*"]
        for _ in 0..<5_000 {
            let word = { (limit: Int) -> String in
                let length = Int.random(in: 0...limit, using: &random)
                return String(decoding: (0..<length).map { _ in alphabet.randomElement(using: &random)! }, as: UTF8.self)
            }
            let type = Bool.random(using: &random) ? word(12) : fixed.randomElement(using: &random)!
            let patterns = (0..<Int.random(in: 1...3, using: &random)).map { _ in
                Bool.random(using: &random) ? word(8) : fixed.randomElement(using: &random)!
            }
            let policy = DownloadPolicy(previewTypes: patterns)
            #expect(
                policy.accepts(contentType: type, for: .preview) == Self.acceptsOnStrings(type, patterns: patterns),
                "\(type) against \(patterns)")
        }
    }

    @Test func plannedPathsSplitOnTheSlashByte() throws {
        let placement = { (path: String) in
            SafePlacement(rootPath: "/nonexistent", relativePath: path, item: ItemRef(id: "1", title: "t"))
        }
        #expect(try placement("Artist/Album/01 Song.m4a").validatedComponents() == ["Artist", "Album", "01 Song.m4a"])
        #expect(try placement("...").validatedComponents() == ["..."])
        // A combining mark after the slash joins it into one Character; the filesystem still sees a separator.
        #expect(try placement("a/\u{301}b").validatedComponents() == ["a", "\u{301}b"])
        let long = String(repeating: "é", count: 128)
        for unsafe in ["", "/a", "a/", "a//b", ".", "./a", "a/..", "a/b\u{0}c", "a/" + long] {
            #expect(throws: SinkError.self, "\(unsafe.debugDescription)") { try placement(unsafe).validatedComponents() }
        }
        #expect(try placement(String(repeating: "é", count: 127) + "e").validatedComponents().count == 1)
    }

    @Test func storedPathKeysOnBytesMatchTheReserversKeys() {
        for text in Self.samples(count: 5_000) + ["Ab/Cd/Song.m4a", "Beyonc\u{E9}/Halo.m4a", "A/B"] {
            // Planned paths are safe: no empty component.
            let path = text.split(separator: "/").filter { !$0.isEmpty }.joined(separator: "/")
            guard !path.isEmpty else { continue }
            let components = path.split(separator: "/").map(String.init)
            #expect(StoredPath(path: path).key == NameReserver.nameKey(of: components), "\(Array(path.utf8))")
        }
    }

    /// The device-name rule before its length guard.
    static func isDeviceNameWithoutGuard(_ name: String) -> Bool {
        let base = name.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let trimmed = base.reversed().drop { $0 == " " }.reversed()
        return SafeName.deviceNames.contains(String(trimmed).uppercased())
    }

    @Test func theDeviceNameGuardChangesNoAnswer() {
        var random = SplitMix64(seed: 13)
        let pieces = [
            "con", "CON", "Com1", "lpt¹", "lpt3", "aux", "nul", "conin$", "CONOUT$", " ", "  ", ".", ".txt", "ı", "x",
            "ß",
        ]
        for _ in 0..<5_000 {
            let text = random.text(of: pieces, count: 1...5)
            #expect(SafeName.isDeviceName(text) == Self.isDeviceNameWithoutGuard(text), "\(text)")
        }
    }

    @Test func stagingNamesKeepTheirFormOnBothPaths() {
        // ASCII goes the byte path; the same letters with an accent go the Character path and keep only
        // the ASCII letters and digits.
        let ascii = Pipeline.stagingName(source: "urls", itemID: "https://example.com/a-b/01 Song.m4a", asset: .preview)
        #expect(ascii.hasPrefix("httpsexamplecomab01Songm4a-"))
        #expect(ascii.hasSuffix(".preview.part"))
        let accented = Pipeline.stagingName(source: "urls", itemID: "Café 1", asset: .preview)
        #expect(accented.hasPrefix("Caf1-"))
    }
}

/// The byte-level reading of a URL's extension answers as Foundation's `pathExtension` does, wherever it answers.
struct PlainExtensionTests {
    @Test func answersAsFoundationWhereItAnswers() throws {
        var paths = [
            "/a.m4a", "/a.M4A", "/dir/f0000001.bin", "/.m4a", "/a.b.c", "/a.m4a/", "/a%2Em4a", "/dir.x/file",
            "/file.", "/a.toolongext1", "/x/y.Mp3", "", "/", "/a..m4a", "/a.m4a.", "/%C3%A9.m4a", "/a.9", "/a b.m4a",
            "/a.m-a", "/a.m_a", "/a.\u{E9}",
        ]
        // Seeded: the same names on every machine.
        var seed: UInt64 = 20_261_201
        let alphabet = Array("aZ09._-%/.m4A")
        for _ in 0..<2_000 {
            var path = "/"
            for _ in 0..<(Int(seed % 9) + 1) {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                path.append(alphabet[Int(seed >> 33) % alphabet.count])
            }
            paths.append(path)
        }
        var answered = 0
        for path in paths {
            guard let url = URL(string: "http://127.0.0.1" + path) else { continue }
            guard let fast = MediaItem.plainExtension(ofEncodedPath: url.path(percentEncoded: true)) else { continue }
            answered += 1
            #expect(fast == url.pathExtension.lowercased(), "\(path)")
        }
        #expect(answered > 100)
        #expect(MediaItem.plainExtension(ofEncodedPath: "/a.M4A") == "m4a")
        #expect(MediaItem.plainExtension(ofEncodedPath: "/.m4a") == nil)
        #expect(MediaItem.plainExtension(ofEncodedPath: "/a.m4a/") == nil)
    }
}
