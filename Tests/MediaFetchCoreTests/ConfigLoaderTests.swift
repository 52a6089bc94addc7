import Foundation
import MediaFetchCore
import Testing

@Suite("ConfigLoader: happy paths")
struct ConfigLoaderTests {
    typealias F = ConfigFixtures

    @Test func minimalConfigFillsDefaultPluginsAndOptions() throws {
        let spec = try F.load(
            """
            source:
              term: jack johnson
            """)
        #expect(spec.configPath == "test.yaml")
        #expect(spec.source.name == "itunes")
        #expect(spec.source.options.values["term"] == .string("jack johnson"))
        #expect(spec.source.options.values["limit"] == .integer(50))
        #expect(spec.source.options.values["media"] == .string("music"))
        #expect(spec.source.options.values["delay"] == .duration(.milliseconds(500)))
        #expect(spec.source.options.values["label"] == nil)
        #expect(spec.source.options.locations == ["term": F.at(2, 3)])
        // No `use:`, so the selection points at the section.
        #expect(spec.source.location == F.at(1, 1))
        #expect(spec.source.options.sectionLocation == F.at(1, 1))

        #expect(spec.transport.name == "foundation")
        #expect(spec.transport.location == nil)
        #expect(spec.transport.options.values["concurrency"] == .integer(4))
        #expect(spec.transport.options.values["timeout"] == .duration(.seconds(30)))
        #expect(spec.transport.options.locations.isEmpty)
        #expect(spec.sink.name == "directory")
        // A default path is relative to the config directory, like one written in the file.
        #expect(spec.sink.options.values["path"] == .path("/configs/demo/downloads"))
        #expect(spec.stateDirectory.path == "/configs/demo/.mediafetch/test")
    }

    @Test func fullConfigConvertsEveryType() throws {
        let spec = try F.load(
            """
            # a comment first
            source:
              use: itunes
              term: jack johnson
              limit: 20
              media: movie
              delay: 1.5
              countries: [US, GB]
              endpoint: https://itunes.example.com/search
            transport:
              use: foundation
              concurrency: 8
              timeout: 2m
              verbose: yes
              headers:
                X-Client: me
                Accept: "*/*"
            sink:
              use: directory
              path: out/../music
              layout: artist
            state: .state
            """)
        let source = spec.source.options
        #expect(spec.source.location == F.at(3, 8))
        #expect(source.values["limit"] == .integer(20))
        #expect(source.locations["limit"] == F.at(5, 3))
        #expect(source.values["media"] == .string("movie"))
        #expect(source.values["delay"] == .duration(.milliseconds(1500)))
        #expect(source.values["countries"] == .list(["US", "GB"]))
        #expect(source.url("endpoint")?.absoluteString == "https://itunes.example.com/search")
        let transport = spec.transport.options
        #expect(spec.transport.location == F.at(11, 8))
        #expect(transport.values["concurrency"] == .integer(8))
        #expect(transport.values["timeout"] == .duration(.seconds(120)))
        #expect(transport.values["verbose"] == .bool(true))
        // Header order is the file's order, not sorted.
        #expect(transport.values["headers"] == .map([.init("X-Client", "me"), .init("Accept", "*/*")]))
        #expect(spec.sink.options.values["path"] == .path("/configs/demo/music"))
        #expect(spec.sink.options.values["layout"] == .string("artist"))
        #expect(spec.stateDirectory.path == "/configs/demo/.state")
    }

    @Test func valuesFollowTheOptionTypeNotYAMLImplicitTyping() throws {
        let spec = try F.load(
            """
            source:
              term: 012
              explicit: Yes
              label: no
              countries: ~
            """)
        #expect(spec.source.options.values["term"] == .string("012"))
        #expect(spec.source.options.values["explicit"] == .string("Yes"))
        #expect(spec.source.options.values["label"] == .string("no"))
        #expect(spec.source.options.values["countries"] == .list(["~"]))
    }

    @Test func quotedScalarsConvertLikePlainOnes() throws {
        let spec = try F.load(
            """
            source:
              term: 'x'
              limit: "7"
            """)
        #expect(spec.source.options.values["limit"] == .integer(7))
    }

    @Test func emptySectionsUseTheDefaultPlugin() throws {
        let spec = try F.load(
            """
            source:
              term: x
            transport:
            sink: {}
            """)
        #expect(spec.transport.name == "foundation")
        #expect(spec.transport.location == F.at(3, 1))
        #expect(spec.sink.name == "directory")
    }

    @Test func aSingleScalarIsAListOfOneAndCommasAreNotSplit() throws {
        let spec = try F.load(
            """
            source:
              term: x
              countries: US, GB
            """)
        #expect(spec.source.options.values["countries"] == .list(["US, GB"]))
    }

    @Test(arguments: [
        ("500ms", Duration.milliseconds(500)),
        ("30s", .seconds(30)),
        ("2m", .seconds(120)),
        ("1h", .seconds(3600)),
        ("1.5", .milliseconds(1500)),
        ("0.25s", .milliseconds(250)),
        ("0", .zero),
        ("10 s", .seconds(10)),
    ])
    func durations(text: String, expected: Duration) throws {
        let spec = try F.load("source: {term: x, delay: \(text)}")
        #expect(spec.source.options.values["delay"] == .duration(expected))
    }

    @Test(arguments: [
        ("true", true), ("FALSE", false), ("yes", true), ("No", false), ("on", true), ("OFF", false),
    ])
    func booleans(text: String, expected: Bool) throws {
        let spec = try F.load("source: {term: x}\ntransport: {verbose: \(text)}")
        #expect(spec.transport.options.values["verbose"] == .bool(expected))
    }

    @Test(arguments: [
        ("downloads", "/configs/demo/downloads"),
        ("./a/b/../c", "/configs/demo/a/c"),
        ("../shared", "/configs/shared"),
        ("/var/media", "/var/media"),
        ("~/Music", "/home/tester/Music"),
        ("~", "/home/tester"),
    ])
    func pathsResolveAgainstTheConfigDirectory(text: String, expected: String) throws {
        let spec = try F.load("source: {term: x}\nsink: {path: \(text)}", environment: ["HOME": "/home/tester"])
        #expect(spec.sink.options.values["path"] == .path(expected))
    }

    @Test func loadingAFileResolvesAgainstItsDirectory() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("config-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("demo.yaml")
        try Data("source:\n  term: x\nsink:\n  path: out\n".utf8).write(to: file)

        let spec = try ConfigLoader.load(path: file.path, environment: [:], registry: F.registry())
        let root = directory.standardizedFileURL.path
        #expect(spec.configPath == file.path)
        #expect(spec.sink.options.values["path"] == .path(root + "/out"))
        #expect(spec.stateDirectory.standardizedFileURL.path == root + "/.mediafetch/demo")
        #expect(spec.source.options.locations["term"] == SourceLocation(file: file.path, line: 2, column: 3))
    }

    @Test func describeShowsEveryOptionAndWhereItCameFrom() throws {
        let spec = try F.load(
            """
            source:
              use: itunes
              term: jack johnson
            sink:
              layout: artist
            """,
            overrides: ["source.limit=20"])
        let text = spec.describe()
        #expect(text.contains("config: test.yaml"))
        #expect(text.contains("source: itunes  (test.yaml:2:8)"))
        #expect(text.contains("    term: jack johnson  (test.yaml:3:3)"))
        #expect(text.contains("    limit: 20  (--set source.limit)"))
        #expect(text.contains("    media: music  (default)"))
        #expect(text.contains("transport: foundation  (default plugin)"))
        #expect(text.contains("    timeout: 30s  (default)"))
        // A section without `use:` still gets the default plugin.
        #expect(text.contains("sink: directory  (default plugin)"))
        #expect(text.contains("    layout: artist  (test.yaml:5:3)"))
        #expect(text.contains("state: /configs/demo/.mediafetch/test"))
    }

    @Test(arguments: [
        ("crul", ["curl", "foundation"], "curl"),
        ("FOUNDATON", ["curl", "foundation"], "foundation"),
        ("limt", ["term", "limit", "media"], "limit"),
        ("Curl", ["curl"], "curl"),
    ])
    func nearestSuggestsCloseNames(word: String, candidates: [String], expected: String) {
        #expect(ConfigLoader.nearest(word, in: candidates) == expected)
    }

    @Test(arguments: [
        ("xyz", ["curl", "foundation"]),
        ("ab", ["cd"]),
        ("", ["a"]),
        ("anything", []),
        ("completelydifferent", ["source", "sink"]),
    ])
    func nearestStaysQuietWhenNothingIsClose(word: String, candidates: [String]) {
        #expect(ConfigLoader.nearest(word, in: candidates) == nil)
    }
}

/// A source's suggested defaults for the sink's and the download section's options.
struct SuggestedDefaultsTests {
    static func registry() -> PluginRegistry {
        var registry = ConfigFixtures.registry()
        var info = ConfigFixtures.urlList
        info.name = "episodes"
        info.suggestedDefaults = [
            .init(section: .sink, key: "layout", value: .string("artist")),
            .init(section: nil, key: "max-size", value: .integer(2_000_000_000)),
            .init(section: .sink, key: "no-such-key", value: .string("ignored")),
        ]
        registry.register(source: .init(info: info) { _, _ in FakeSource() })
        return registry
    }

    @Test func takeThePlaceOfTheOptionsOwnDefaults() throws {
        let spec = try ConfigFixtures.load("source: {use: episodes, file: list.txt}", registry: Self.registry())
        #expect(spec.sink.options.string("layout") == "artist")
        #expect(spec.download.integer("max-size") == 2_000_000_000)
        #expect(spec.sink.options.values["no-such-key"] == nil)
    }

    @Test func whatAConfigWritesWins() throws {
        let spec = try ConfigFixtures.load(
            "source: {use: episodes, file: list.txt}\nsink: {layout: flat}\ndownload: {max-size: 10MB}",
            registry: Self.registry())
        #expect(spec.sink.options.string("layout") == "flat")
        #expect(spec.download.integer("max-size") == 10_000_000)
        let overridden = try ConfigFixtures.load(
            "source: {use: episodes, file: list.txt}", overrides: ["sink.layout=flat"], registry: Self.registry())
        #expect(overridden.sink.options.string("layout") == "flat")
    }

    @Test func otherSourcesKeepTheUsualDefaults() throws {
        let spec = try ConfigFixtures.load("source: {use: urls, file: list.txt}", registry: Self.registry())
        #expect(spec.sink.options.string("layout") == "flat")
        #expect(spec.download.integer("max-size") == 50_000_000)
    }
}
