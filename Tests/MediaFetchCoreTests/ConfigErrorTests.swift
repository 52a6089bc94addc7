import Foundation
import MediaFetchCore
import Testing

@Suite("ConfigLoader: validation errors point at the node and say what is allowed")
struct ConfigErrorTests {
    typealias F = ConfigFixtures

    @Test func unknownPluginSuggestsTheNearestName() throws {
        let error = try #require(
            F.error(
                """
                source:
                  term: x
                transport:
                  use: crul
                """))
        #expect(error.location == F.at(4, 8))
        #expect(error.key == "transport.use")
        #expect(error.message == #"unknown transport "crul"; known: curl, foundation (did you mean "curl"?)"#)
        #expect(error.description.hasPrefix("test.yaml:4:8: transport.use: unknown transport"))
    }

    @Test func unknownPluginFarFromEveryNameGetsNoSuggestion() throws {
        let error = try #require(F.error("source: {use: spotify, term: x}"))
        #expect(error.location == F.at(1, 15))
        #expect(error.message == #"unknown source "spotify"; known: itunes, urls"#)
    }

    @Test func unknownKeySuggestsAndListsTheAllowedKeys() throws {
        let error = try #require(
            F.error(
                """
                source:
                  use: itunes
                  term: x
                  limt: 5
                """))
        #expect(error.location == F.at(4, 3))
        #expect(error.key == "source.limt")
        #expect(
            error.message
                == #"unknown key "limt" for source "itunes" (did you mean "limit"?); allowed: use, term, limit, "#
                + "media, explicit, delay, countries, label, endpoint")
    }

    @Test func unknownTopLevelKey() throws {
        let error = try #require(
            F.error(
                """
                source:
                  term: x
                sinks:
                  path: out
                """))
        #expect(error.location == F.at(3, 1))
        #expect(error.key == "sinks")
        #expect(
            error.message
                == #"unknown top-level key "sinks" (did you mean "sink"?); "#
                + "allowed: source, transport, sink, download, state, ledger, name")
    }

    @Test(arguments: [
        ("limit: abc", 10, #"expected integer 1..200, got "abc""#),
        ("limit: 1.5", 10, #"expected integer 1..200, got "1.5""#),
        ("limit: 0x10", 10, #"expected integer 1..200, got "0x10""#),
        (
            "limit: 99999999999999999999", 10,
            #"expected integer 1..200, got "99999999999999999999", which is too large"#
        ),
        ("limit: 500", 10, "limit 500 is out of range 1..200"),
        ("limit: -1", 10, "limit -1 is out of range 1..200"),
        ("limit: [1]", 10, "expected integer 1..200, got a sequence"),
        ("limit:", 9, "expected integer 1..200, got nothing"),
        ("media: Music", 10, #"expected one of music, movie, podcast, got "Music" (did you mean "music"?)"#),
        ("explicit: yes", 13, #"expected one of Yes, No, got "yes" (did you mean "Yes"?)"#),
        ("delay: -5s", 10, #"duration "-5s" is negative; use 0 or more, e.g. 30s or 500ms"#),
        ("delay: 5 minutes", 10, #"expected duration (seconds, or 500ms, 30s, 2m), got "5 minutes""#),
        ("delay: 1e3", 10, #"expected duration (seconds, or 500ms, 30s, 2m), got "1e3""#),
        ("delay: 99999999999h", 10, #"duration "99999999999h" is too long; at most 1000000000 seconds"#),
        ("countries: {a: b}", 14, "expected list of strings, got a mapping"),
        ("term: {a: b}", 9, "expected string, got a mapping"),
        ("term:", 8, #"expected string, got nothing (for an empty one, write "")"#),
        (
            "endpoint: ftp://example.com/x", 13,
            #"expected an absolute http or https URL with a host, got "ftp://example.com/x"; "#
                + "only http and https are allowed"
        ),
        (
            "endpoint: example.com", 13,
            #"expected an absolute http or https URL with a host, got "example.com"; only http and https are allowed"#
        ),
    ])
    func badValuesPointAtTheValue(line: String, column: Int, message: String) throws {
        let key = String(line.prefix { $0 != ":" })
        // Line 2 is always valid, so the error is on line 3 whichever key is under test.
        let other = key == "term" ? "label: x" : "term: x"
        let error = try #require(F.error("source:\n  \(other)\n  \(line)\n"))
        #expect(error.location == F.at(3, column))
        #expect(error.key == "source.\(key)")
        #expect(error.message == message)
    }

    @Test func badListItemPointsAtTheItem() throws {
        let error = try #require(
            F.error(
                """
                source:
                  term: x
                  countries:
                    - US
                    - [GB]
                """))
        #expect(error.location == F.at(5, 7))
        #expect(error.key == "source.countries")
        #expect(error.message == "expected a string, got a sequence")
    }

    @Test func headersMustBeAMappingOfStrings() throws {
        let notMap = try #require(F.error("source: {term: x}\ntransport:\n  headers: [a]"))
        #expect(notMap.location == F.at(3, 12))
        #expect(notMap.key == "transport.headers")
        #expect(notMap.message == "expected a mapping (mapping of string to string), got a sequence")

        let nested = try #require(F.error("source: {term: x}\ntransport:\n  headers:\n    X-A: {b: c}"))
        #expect(nested.location == F.at(4, 10))
        #expect(nested.key == "transport.headers.X-A")
        #expect(nested.message == "expected a string, got a mapping")

        let empty = try #require(F.error("source: {term: x}\ntransport:\n  headers:\n    X-A:\n"))
        #expect(empty.key == "transport.headers.X-A")
        #expect(empty.message.contains(#"write "" for an empty value"#))
    }

    @Test func sectionMustBeAMapping() throws {
        let error = try #require(F.error("source: itunes\n"))
        #expect(error.location == F.at(1, 9))
        #expect(error.key == "source")
        #expect(error.message.hasPrefix(#"expected a mapping, got "itunes""#))

        let sequence = try #require(F.error("source: {term: x}\nsink:\n  - a\n"))
        #expect(sequence.location == F.at(3, 3))
        #expect(sequence.message.hasPrefix("expected a mapping, got a sequence"))
    }

    @Test func missingRequiredOptionPointsAtTheSection() throws {
        let error = try #require(
            F.error(
                """
                # search
                source:
                  use: itunes
                  limit: 5
                """))
        #expect(error.location == F.at(2, 1))
        #expect(error.key == "source.term")
        #expect(error.message == #"missing required key "term" for source "itunes" (string: what to search for)"#)
    }

    @Test func missingSourceSectionPointsAtTheTopLevelMapping() throws {
        let error = try #require(F.error("\n\ntransport:\n  use: curl\n"))
        #expect(error.location == F.at(3, 1))
        #expect(error.key == "source")
        #expect(error.message.hasPrefix(#"missing required section "source"; a config needs at least"#))
        #expect(error.message.contains("use: itunes"))
        #expect(error.message.contains("term: ..."))
    }

    @Test func missingUseWithoutARegistryDefault() throws {
        let error = try #require(F.error("source:\n  term: x\n", registry: F.registry(withDefaults: false)))
        #expect(error.location == F.at(1, 1))
        #expect(error.key == "source.use")
        #expect(
            error.message
                == #"missing required key "use"; this build has no default source, so name one of: itunes, urls"#)
    }

    @Test func missingSectionWithoutARegistryDefault() throws {
        let error = try #require(
            F.error("source:\n  use: itunes\n  term: x\n", registry: F.registry(withDefaults: false)))
        #expect(error.location == F.at(1, 1))
        #expect(error.key == "transport")
        #expect(error.message.contains("no default transport"))
        #expect(error.message.contains("curl, foundation"))
    }

    @Test func requiredPathOptionOfAnotherPlugin() throws {
        let error = try #require(F.error("source:\n  use: urls\n"))
        #expect(error.location == F.at(1, 1))
        #expect(error.key == "source.file")
    }

    @Test func badStateValue() throws {
        let error = try #require(F.error("source: {term: x}\nstate: [a]\n"))
        #expect(error.location == F.at(2, 8))
        #expect(error.key == "state")
        #expect(error.message == "expected path, got a sequence")
    }

    @Test func topLevelMustBeAMapping() throws {
        let error = try #require(F.error("- source\n- sink\n"))
        #expect(error.location == F.at(1, 1))
        #expect(error.message == "expected a mapping with a source: section at the top level, got a sequence")
    }

    @Test func unreadableFileNamesThePathAndTheReason() throws {
        let missing = "/nonexistent-\(UUID().uuidString)/demo.yaml"
        do {
            _ = try ConfigLoader.load(path: missing, environment: [:], registry: F.registry())
            Issue.record("loading a missing file succeeded")
        } catch {
            #expect(error.message == "cannot read config file \(missing): No such file or directory")
        }
        do {
            _ = try ConfigLoader.load(path: NSTemporaryDirectory(), environment: [:], registry: F.registry())
            Issue.record("loading a directory succeeded")
        } catch {
            #expect(error.message.hasSuffix("Is a directory"))
        }
    }
}
