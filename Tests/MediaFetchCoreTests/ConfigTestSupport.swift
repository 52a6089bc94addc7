import Foundation
import MediaFetchCore

/// A registry of fake plugins shaped like the real ones, so the config loader can be tested without them.
enum ConfigFixtures {
    static let itunes = PluginInfo(
        kind: .source, name: "itunes", summary: "fake catalog search",
        options: [
            OptionSpec("term", .string, required: true, doc: "what to search for"),
            OptionSpec("limit", .integer(1...200), default: .integer(50), doc: "how many results"),
            OptionSpec("media", .choice(["music", "movie", "podcast"]), default: .string("music"), doc: "media type"),
            OptionSpec("explicit", .choice(["Yes", "No"]), default: .string("Yes"), doc: "explicit content"),
            OptionSpec("delay", .duration, default: .duration(.milliseconds(500)), doc: "pause between pages"),
            OptionSpec("countries", .stringList, default: .list(["US"]), doc: "store fronts"),
            OptionSpec("label", .string, doc: "free text"),
            OptionSpec("endpoint", .url, doc: "API base URL"),
        ])
    static let urlList = PluginInfo(
        kind: .source, name: "urls", summary: "fake URL list",
        options: [OptionSpec("file", .path, required: true, doc: "the list")])
    static let foundation = PluginInfo(
        kind: .transport, name: "foundation", summary: "fake transport",
        options: [
            OptionSpec("concurrency", .integer(1...64), default: .integer(4), doc: "parallel downloads"),
            OptionSpec("headers", .stringMap, doc: "extra request headers"),
            OptionSpec("timeout", .duration, default: .duration(.seconds(30)), doc: "per request"),
            OptionSpec("verbose", .bool, default: .bool(false), doc: "log requests"),
        ])
    static let curl = PluginInfo(
        kind: .transport, name: "curl", summary: "another fake transport",
        options: [OptionSpec("concurrency", .integer(1...64), default: .integer(2), doc: "parallel downloads")])
    static let directory = PluginInfo(
        kind: .sink, name: "directory", summary: "fake directory sink",
        options: [
            OptionSpec("path", .path, default: .path("downloads"), doc: "root directory"),
            OptionSpec("layout", .choice(["flat", "artist"]), default: .string("flat"), doc: "file layout"),
        ])

    /// Sources, transports and sinks with defaults `itunes`, `foundation` and `directory`.
    static func registry(withDefaults: Bool = true) -> PluginRegistry {
        var registry = PluginRegistry()
        registry.register(source: .init(info: itunes) { _, _ in FakeSource() }, isDefault: withDefaults)
        registry.register(source: .init(info: urlList) { _, _ in FakeSource() })
        registry.register(transport: .init(info: curl) { _, _ in FakeTransport() })
        registry.register(transport: .init(info: foundation) { _, _ in FakeTransport() }, isDefault: withDefaults)
        registry.register(sink: .init(info: directory) { _, _ in FakeSink() }, isDefault: withDefaults)
        return registry
    }

    static let path = "test.yaml"
    static let baseDirectory = URL(fileURLWithPath: "/configs/demo", isDirectory: true)

    /// Loads `yaml` as if it were `/configs/demo/test.yaml`.
    static func load(
        _ yaml: String,
        overrides: [String] = [],
        environment: [String: String] = [:],
        registry: PluginRegistry = registry()
    ) throws(ConfigError) -> PipelineSpec {
        try ConfigLoader.load(
            text: yaml, path: path, baseDirectory: baseDirectory, overrides: overrides, environment: environment,
            registry: registry)
    }

    /// The error loading `yaml` gives, or nil when it loads.
    static func error(
        _ yaml: String,
        overrides: [String] = [],
        environment: [String: String] = [:],
        registry: PluginRegistry = registry()
    ) -> ConfigError? {
        do {
            _ = try load(yaml, overrides: overrides, environment: environment, registry: registry)
            return nil
        } catch {
            return error
        }
    }

    static func at(_ line: Int, _ column: Int, file: String = path) -> SourceLocation {
        SourceLocation(file: file, line: line, column: column)
    }
}

struct FakeSource: Source {
    func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {}
}

struct FakeTransport: Transport {
    var maxConcurrentTransfers: Int { 1 }

    func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        throw TransportError(.other, url: request.url, detail: "fake")
    }

    func download(
        _ request: DownloadRequest,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) async throws -> DownloadResult {
        throw TransportError(.other, url: request.url, detail: "fake")
    }
}

struct FakeSink: Sink {
    func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        StoragePlan(item: item.ref, asset: asset, relativePath: item.id)
    }

    func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String { plan.relativePath }
}
