import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import URLListSource

struct URLListSourceTests {
    /// The source makes no network call itself, so any transport will do; this one refuses everything.
    struct NoNetwork: Transport {
        var maxConcurrentTransfers: Int { 1 }
        func send(_ request: HTTPRequest) async throws -> HTTPResponse {
            throw TransportError(.other, url: request.url)
        }
        func download(
            _ request: DownloadRequest, progress: @escaping @Sendable (DownloadProgress) -> Void
        )
            async throws -> DownloadResult
        {
            throw TransportError(.other, url: request.url)
        }
    }

    static func outputs(of text: String) async throws -> (items: [MediaItem], skipped: [String], failed: [String]) {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("urls-\(UUID().uuidString).txt")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let collected = Mutex<(items: [MediaItem], skipped: [String], failed: [String])>(([], [], []))
        try await URLListSource(file: file.path, displayName: "list.txt").run(SourceContext(transport: NoNetwork())) {
            output in
            collected.withLock {
                switch output {
                case .item(let item): $0.items.append(item)
                case .skipped(_, let reason): $0.skipped.append(reason)
                case .failed(_, _, let reason): $0.failed.append(reason)
                }
            }
        }
        return collected.withLock { $0 }
    }

    @Test func linesCommentsAndBlanks() async throws {
        let text = """
            # previews to keep
            http://127.0.0.1:8000/a/one.m4a

               https://127.0.0.1/b/Two%20Words.m4a  \r
            #http://127.0.0.1/commented.m4a
            http://127.0.0.1/noext
            """
        let result = try await Self.outputs(of: text)
        #expect(result.items.map(\.title) == ["one", "Two Words", "noext"])
        #expect(
            result.items.map(\.id) == [
                "http://127.0.0.1:8000/a/one.m4a", "https://127.0.0.1/b/Two%20Words.m4a", "http://127.0.0.1/noext",
            ])
        #expect(result.items[0].fileExtension(for: .preview) == "m4a")
        #expect(result.items[2].fileExtension(for: .preview) == "")
        #expect(result.skipped.isEmpty && result.failed.isEmpty)
    }

    @Test func aBadLineIsAFailureNamingFileAndLineAndTheRestGoOn() async throws {
        let result = try await Self.outputs(
            of: "http://127.0.0.1/a.m4a\nftp://127.0.0.1/b.m4a\nnot a url\nfile:///etc/passwd\nhttp://127.0.0.1/c.m4a\n"
        )
        #expect(result.items.count == 2)
        #expect(result.failed.count == 3)
        #expect(result.failed[0].hasPrefix("list.txt:2: \"ftp://127.0.0.1/b.m4a\" is not an http or https URL"))
        #expect(result.failed[1].hasPrefix("list.txt:3:"))
        #expect(result.failed[2].hasPrefix("list.txt:4:"))
    }

    @Test func aRepeatedURLIsSkippedOnce() async throws {
        let result = try await Self.outputs(of: "http://127.0.0.1/a.m4a\nhttp://127.0.0.1/a.m4a\n")
        #expect(result.items.count == 1)
        #expect(result.skipped == ["list.txt:2: the same URL as line 1"])
    }

    @Test func aMissingFileFailsTheSourceWithItsName() async throws {
        let source = URLListSource(file: "/nonexistent/list.txt")
        await #expect(throws: SourceError.self) {
            try await source.run(SourceContext(transport: NoNetwork())) { _ in }
        }
        do {
            try await source.run(SourceContext(transport: NoNetwork())) { _ in }
        } catch {
            #expect(String(describing: error).contains("/nonexistent/list.txt"))
        }
    }

    @Test func aFileThatIsNotUTF8FailsTheSource() async throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("urls-\(UUID().uuidString).txt")
        try Data([0xff, 0xfe, 0x00, 0x41]).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        await #expect(throws: SourceError.self) {
            try await URLListSource(file: file.path).run(SourceContext(transport: NoNetwork())) { _ in }
        }
    }

    /// The byte-level extension must be NSString's wherever it answers.
    @Test func simpleExtensionsAreWhatNSStringSays() {
        var random = SplitMix64(seed: 29)
        let pieces = [
            "f00001", ".", "m4a", "M4A", "tar", "gz", "a", "-", " ", "%20", "é", "/",
            "x" + String(repeating: "y", count: 16),
        ]
        var answered = 0
        for _ in 0..<20_000 {
            let name = random.text(of: pieces, count: 1...5)
            guard let ext = URLListSource.simpleExtension(of: name) else { continue }
            answered += 1
            #expect(ext == (name as NSString).pathExtension, "\(name)")
        }
        #expect(answered > 300)
    }

    @Test func itemsAreNamedAfterTheirDecodedLastComponent() {
        let title = { (url: String) in URLListSource.item(for: URL(string: url)!).title }
        #expect(title("http://127.0.0.1/files/f00001.m4a") == "f00001")
        #expect(title("http://127.0.0.1/files/My%20Song.v2.m4a") == "My Song.v2")
        // Decoded twice (lastPathComponent, then the source), as before the byte-level path existed.
        #expect(title("http://127.0.0.1/files/a%2520b.m4a") == "a b")
        #expect(title("http://127.0.0.1/files/100%25.m4a") == "100%")
        #expect(title("http://127.0.0.1/files/.m4a") == ".m4a")
        // A decoded %2F: NSString judges the name, as it always did.
        #expect(title("http://127.0.0.1/x%2F.m4a") == "x/.m4a")
    }

    /// The byte-level line split must cut ASCII text where the Character-level split does.
    @Test func asciiLinesAreCutWhereCharactersAre() {
        var random = SplitMix64(seed: 31)
        let pieces = ["http://127.0.0.1/a.m4a", "\n", "\r", "\r\n", "\u{0B}", "\u{0C}", " ", "#", "", "x"]
        for _ in 0..<3_000 {
            let text = random.text(of: pieces, count: 0...8)
            #expect(
                URLListSource.lines(of: text)
                    == text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline),
                "\(Array(text.utf8))")
        }
        // Not ASCII: the Character-level split itself, U+2028 and NEL included.
        #expect(URLListSource.lines(of: "a\u{2028}b\u{85}c") == ["a", "b", "c"])
    }

    @Test func aZeroWidthSpaceAroundALineIsTrimmed() async throws {
        let outputs = try await Self.outputs(of: "\u{200B}http://127.0.0.1/files/a.m4a\u{200B}\n")
        #expect(outputs.items.map(\.id) == ["http://127.0.0.1/files/a.m4a"])
    }
}
