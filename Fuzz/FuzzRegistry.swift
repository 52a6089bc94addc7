import Foundation
import MediaFetchCore

/// Plugins with every option type, so the fuzzer reaches every conversion; their factories are never run.
enum FuzzRegistry {
    struct NoSource: Source {
        func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {}
    }

    struct NoTransport: Transport {
        var maxConcurrentTransfers: Int { 1 }
        func send(_ request: HTTPRequest) async throws -> HTTPResponse { throw TransportError(.other, url: nil) }
        func download(_ request: DownloadRequest, progress: @escaping @Sendable (DownloadProgress) -> Void)
            async throws -> DownloadResult
        { throw TransportError(.other, url: nil) }
    }

    struct NoSink: Sink {
        func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
            StoragePlan(item: item.ref, asset: asset, relativePath: "x")
        }
        func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String { "x" }
    }

    static let options: [OptionSpec] = [
        OptionSpec("text", .string, doc: ""),
        OptionSpec("count", .integer(1...200), default: .integer(50), doc: ""),
        OptionSpec("flag", .bool, doc: ""),
        OptionSpec("wait", .duration, doc: ""),
        OptionSpec("kind", .choice(["Yes", "No"]), doc: ""),
        OptionSpec("list", .stringList, doc: ""),
        OptionSpec("map", .stringMap, doc: ""),
        OptionSpec("file", .path, doc: ""),
        OptionSpec("url", .url, doc: ""),
        OptionSpec("size", .byteSize, doc: ""),
    ]

    static func make() -> PluginRegistry {
        var registry = PluginRegistry()
        let info = { (kind: PluginKind) in PluginInfo(kind: kind, name: "fuzz", summary: "", options: options) }
        registry.register(source: SourceDescriptor(info: info(.source)) { _, _ in NoSource() }, isDefault: true)
        registry.register(transport: TransportDescriptor(info: info(.transport)) { _, _ in NoTransport() }, isDefault: true)
        registry.register(sink: SinkDescriptor(info: info(.sink)) { _, _ in NoSink() }, isDefault: true)
        return registry
    }
}
