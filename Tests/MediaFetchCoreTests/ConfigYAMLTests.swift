import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@Suite("ConfigLoader: YAML structure")
struct ConfigYAMLTests {
    typealias F = ConfigFixtures

    @Test(arguments: ["", "   \n\n", "# only a comment\n# and another\n", "---\n", "---\n...\n"])
    func emptyFileSaysWhatAConfigNeeds(text: String) throws {
        let error = try #require(F.error(text))
        #expect(error.location == F.at(1, 1))
        #expect(error.message.hasPrefix("test.yaml is empty; a config needs at least a source: section"))
        #expect(error.message.contains("use: itunes"))
    }

    @Test func duplicateKeysNameBothLines() throws {
        let error = try #require(
            F.error(
                """
                source:
                  term: x
                  limit: 5
                  limit: 6
                """))
        #expect(error.location == F.at(4, 3))
        #expect(error.key == "source.limit")
        #expect(error.message == #"duplicate key "limit": first at line 3, again at line 4; keep one"#)
    }

    @Test func duplicateSectionsAndNestedKeys() throws {
        let sections = try #require(F.error("source: {term: x}\nsink: {}\nsink: {}\n"))
        #expect(sections.location == F.at(3, 1))
        #expect(sections.key == "sink")

        let headers = try #require(F.error("source: {term: x}\ntransport:\n  headers: {A: b, A: c}\n"))
        #expect(headers.location == F.at(3, 19))
        #expect(headers.key == "transport.headers.A")
    }

    @Test func multipleDocumentsAreRejected() throws {
        let error = try #require(
            F.error(
                """
                source:
                  term: x
                ---
                source:
                  term: y
                """))
        #expect(error.location == F.at(3, 1))
        #expect(error.message.hasPrefix("a config is one YAML document"))
    }

    @Test func tabIndentationIsInvalidYAML() throws {
        let error = try #require(F.error("source:\n\tterm: x\n"))
        #expect(error.location == F.at(2, 1))
        #expect(error.message.hasPrefix("invalid YAML: found character that cannot start any token"))
        #expect(error.key == nil)
    }

    @Test func missingColonReportsLibyamlsProblemAndMark() throws {
        let error = try #require(
            F.error(
                """
                source:
                  term: x
                  limit 5
                  media: movie
                """))
        // libyaml notices at the next line; its context names the line that lacks the colon.
        #expect(error.location == F.at(4, 3))
        #expect(
            error.message
                == "invalid YAML: could not find expected ':' (while scanning a simple key at line 3, column 3)")
    }

    @Test func badIndentationReportsDidNotFindExpectedKey() throws {
        let error = try #require(F.error("source:\n    term: x\n  limit: 5\n"))
        #expect(error.location == F.at(3, 3))
        #expect(
            error.message
                == "invalid YAML: did not find expected key (while parsing a block mapping at line 1, column 1)")
    }

    @Test func unclosedFlowMapping() throws {
        let error = try #require(F.error("source: {term: x\n"))
        #expect(error.location?.line == 2)
        #expect(error.message.hasPrefix("invalid YAML: "))
    }

    @Test(arguments: [
        ("base: &b {term: x}\nsource: *b\n", 1, 7),
        ("source:\n  term: &t x\n  label: *t\n", 2, 9),
    ])
    func anchorsAndAliasesAreRejected(text: String, line: Int, column: Int) throws {
        let error = try #require(F.error(text))
        #expect(error.location == F.at(line, column))
        #expect(error.message.contains("anchors (&name) and aliases (*name) are not supported"))
    }

    @Test func nonScalarKeysAreRejected() throws {
        let error = try #require(F.error("source:\n  ? [a, b]\n  : x\n"))
        #expect(error.location == F.at(2, 5))
        #expect(error.message == "a key must be plain text, not a sequence")
    }

    @Test func deepNestingIsRefusedNotACrash() throws {
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        let error = try #require(F.error("source: {term: x, countries: \(deep)}"))
        #expect(error.message == "nesting is deeper than 64 levels")
        #expect(error.location?.line == 1)
    }

    @Test func invalidUTF8InAFileIsReportedWithItsPosition() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("bad.yaml")
        try Data(Array("source:\n  term: é".utf8) + [0xFF, 0x0A]).write(to: file)
        do {
            _ = try ConfigLoader.load(path: file.path, environment: [:], registry: F.registry())
            Issue.record("invalid UTF-8 was accepted")
        } catch {
            #expect(error.location == SourceLocation(file: file.path, line: 2, column: 10))
            #expect(error.message.hasPrefix("invalid YAML: invalid"))
        }
    }

    @Test func controlCharactersAreInvalidYAML() throws {
        let error = try #require(F.error("source:\n  term: a\u{07}b\n"))
        #expect(error.location == F.at(2, 10))
        #expect(error.message.hasPrefix("invalid YAML: control characters are not allowed"))
    }

    /// Mutations of a valid config must give a spec or a located error, never a crash.
    @Test func mangledInputsNeverCrash() {
        let valid = Array(
            """
            source:
              use: itunes
              term: "jack ${USER:-me}"
              countries: [US, GB]
            transport: {headers: {A: b}, timeout: 5s}
            sink:
              path: ~/out
            """.utf8)
        let alphabet = Array("{}[]:-?&*!|>'\"%@`#,\t\n $\\".utf8) + [0x00, 0xC3, 0xFF]
        var generator = SplitMix64(seed: 42)
        var outcomes = (specs: 0, errors: 0)
        for _ in 0..<500 {
            var bytes = valid
            for _ in 0..<Int(generator.next() % 4 + 1) {
                let position = Int(generator.next() % UInt64(bytes.count))
                let byte = alphabet[Int(generator.next() % UInt64(alphabet.count))]
                switch generator.next() % 3 {
                case 0: bytes[position] = byte
                case 1: bytes.insert(byte, at: position)
                default: bytes.remove(at: position)
                }
            }
            do {
                _ = try F.load(String(decoding: bytes, as: UTF8.self), environment: ["USER": "u"])
                outcomes.specs += 1
            } catch {
                #expect(!error.message.isEmpty)
                outcomes.errors += 1
            }
        }
        #expect(outcomes.specs + outcomes.errors == 500)
        #expect(outcomes.errors > 0)
    }
}
