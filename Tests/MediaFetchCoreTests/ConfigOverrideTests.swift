import Foundation
import MediaFetchCore
import Testing

@Suite("ConfigLoader: --set overrides")
struct ConfigOverrideTests {
    typealias F = ConfigFixtures

    static let base = """
        source:
          term: x
          limit: 5
        sink:
          path: downloads
        """

    @Test func replacesAnExistingValue() throws {
        let spec = try F.load(Self.base, overrides: ["source.limit=20"])
        #expect(spec.source.options.values["limit"] == .integer(20))
        // The key now points at the argument: `limit` starts at column 8 of `source.limit=20`.
        #expect(spec.source.options.locations["limit"] == F.at(1, 8, file: "--set source.limit"))
        #expect(spec.source.options.locations["term"] == F.at(2, 3))
    }

    @Test func createsMissingKeysAndSections() throws {
        let spec = try F.load(
            Self.base, overrides: ["transport.use=curl", "transport.concurrency=3", "source.media=podcast"])
        #expect(spec.transport.name == "curl")
        #expect(spec.transport.location == F.at(1, 15, file: "--set transport.use"))
        #expect(spec.transport.options.values["concurrency"] == .integer(3))
        #expect(spec.source.options.values["media"] == .string("podcast"))
    }

    @Test func laterOverridesWin() throws {
        let spec = try F.load(Self.base, overrides: ["source.limit=20", "source.limit=30"])
        #expect(spec.source.options.values["limit"] == .integer(30))
    }

    @Test func flowValuesAndReachingIntoAMap() throws {
        let spec = try F.load(
            Self.base,
            overrides: [
                "transport.headers={A: b, C: d}", "transport.headers.X-Foo=bar", "source.countries=[US, GB]",
            ])
        #expect(
            spec.transport.options.values["headers"] == .map([.init("A", "b"), .init("C", "d"), .init("X-Foo", "bar")]))
        #expect(spec.source.options.values["countries"] == .list(["US", "GB"]))
    }

    @Test func stateAndPathsResolveAgainstTheWorkingDirectory() throws {
        let cwd = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).standardizedFileURL.path
        let spec = try F.load(Self.base, overrides: ["sink.path=out/x", "state=run-state"])
        #expect(spec.sink.options.values["path"] == .path(cwd + "/out/x"))
        #expect(spec.stateDirectory.standardizedFileURL.path == cwd + "/run-state")
    }

    @Test func emptyAndInterpolatedValues() throws {
        let spec = try F.load(Self.base, overrides: ["source.term=${Q}", "source.label=''"], environment: ["Q": "q"])
        #expect(spec.source.options.values["term"] == .string("q"))
        #expect(spec.source.options.values["label"] == .string(""))
        // Left empty, a string option is YAML's null; the error says how to write the empty string.
        let empty = try #require(F.error(Self.base, overrides: ["source.term="]))
        #expect(empty.message == #"expected string, got nothing (for an empty one, --set 'source.term=""', quoted for the shell)"#)
    }

    @Test func badOverriddenValuePointsIntoTheArgument() throws {
        let error = try #require(F.error(Self.base, overrides: ["source.limit=abc"]))
        #expect(error.location == F.at(1, 14, file: "--set source.limit"))
        #expect(error.key == "source.limit")
        #expect(error.message == #"expected integer 1..200, got "abc""#)

        let nested = try #require(F.error(Self.base, overrides: ["transport.headers={A: [b]}"]))
        #expect(nested.location == F.at(1, 23, file: "--set transport.headers"))
        #expect(nested.key == "transport.headers.A")
    }

    @Test func unknownOverriddenKeyPointsAtTheKey() throws {
        let error = try #require(F.error(Self.base, overrides: ["source.limt=3"]))
        #expect(error.location == F.at(1, 8, file: "--set source.limt"))
        #expect(error.message.hasPrefix(#"unknown key "limt" for source "itunes" (did you mean "limit"?)"#))
    }

    @Test(arguments: [
        ("source.limit", "expected key=value"),
        ("=5", "the key before = is empty"),
        ("source..limit=5", "has an empty part between dots"),
        ("source.=5", "has an empty part between dots"),
    ])
    func malformedOverridesNameTheArgument(argument: String, problem: String) throws {
        let error = try #require(F.error(Self.base, overrides: [argument]))
        #expect(error.location == SourceLocation(file: "--set", line: 1, column: 1))
        #expect(error.message.hasPrefix("malformed override --set \"\(argument)\": "))
        #expect(error.message.contains(problem))
    }

    @Test func overrideThroughAScalarIsAnError() throws {
        let error = try #require(F.error(Self.base, overrides: ["source.term.x=1"]))
        #expect(error.location == F.at(1, 13, file: "--set source.term.x"))
        #expect(error.message == #"cannot set source.term.x: source.term is "x", not a mapping"#)
    }

    /// On a command line a person means the words: text that YAML would read as a block mapping, an
    /// unclosed flow collection or a flow mapping is taken as written where the option wants one word.
    @Test(arguments: [
        ("source.term=jack: johnson", "jack: johnson"),
        ("source.term={artist}/{title}.{ext}", "{artist}/{title}.{ext}"),
        ("source.term={title}", "{title}"),
        ("source.term=[a, b", "[a, b"),
        ("source.term=\u{0}", "\u{0}"),
    ])
    func textThatIsNotAScalarIsTakenAsWritten(argument: String, term: String) throws {
        let spec = try F.load(Self.base, overrides: [argument])
        #expect(spec.source.options.values["term"] == .string(term))
    }

    @Test(arguments: [
        ("source.limit=[", "--set source.limit", #"expected integer 1..200, got "[""#),
        ("a=b=c", "--set a", #"unknown top-level key "a""#),
        ("state.x=1", "--set state.x", "expected path, got a mapping"),
        ("source.countries.x=1", "--set source.countries.x", "cannot set source.countries.x"),
        ("source.use=*alias", "--set source.use", #"unknown source "*alias""#),
        ("transport.headers={A: 1, A: 2}", "--set transport.headers", #"duplicate key "A""#),
    ])
    func oddOverridesFailAtTheArgument(argument: String, file: String, messageStart: String) throws {
        let error = try #require(F.error("source:\n  term: x\n  countries: [US]\n", overrides: [argument]))
        #expect(error.location?.file == file)
        #expect(error.message.hasPrefix(messageStart))
    }
}
