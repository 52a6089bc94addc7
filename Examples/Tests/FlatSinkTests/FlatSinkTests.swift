import FlatSink
import Foundation
import ITunesSource
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Testing

struct FlatSinkTests {
    /// The bundled iTunes source over a scripted transport (no sockets), into the flat sink: every preview
    /// arrives with the catalog's bytes, named `Artist - Title.m4a`.
    @Test func theITunesSourceFillsTheFlatSinkOverAScriptedTransport() async throws {
        let base = try #require(URL(string: "http://catalog.invalid"))
        let transport = ScriptedTransport(baseURL: base)
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("flat-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let source = ITunesSource(
            .init(endpoint: base, query: .search(term: "love"), maxItems: 10, requestsPerMinute: 0))
        let summary = await Pipeline(
            source: source, transport: transport, sink: FlatSink(root: root),
            options: .init(concurrency: 4, stagingDirectory: root.appendingPathComponent(".staging"))
        ).run()
        #expect(summary.stored == 10 && summary.failed == 0)
        let catalog = MockCatalog.standard
        for song in catalog.search(term: "love").prefix(10) {
            let file = root.appendingPathComponent("\(song.artistName) - \(song.trackName).m4a")
            #expect(try Data(contentsOf: file) == Data(catalog.previewBytes(for: song)), "\(file.lastPathComponent)")
        }
        // Every call went through the transport the test swapped in.
        #expect(transport.requests.count == 11)
    }

    @Test func theFlatSinkKeepsTheSinkContract() async throws {
        try await SinkContract.run { root in FlatSink(root: root) }
    }

    /// Its own `mediafetch`: a YAML config that names the sink runs through `CLI.main(_:registry:)` against a
    /// loopback catalog, and `plugins` lists it.
    @Test func aConfigNamesTheSinkThroughItsOwnCommandLine() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("flat-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let config = folder.appendingPathComponent("flat.yaml")
        try Data(
            """
            source: {use: itunes, term: love, max-items: 5, requests-per-minute: 0,
                     endpoint: "\(server.baseURL.absoluteString)"}
            sink: {use: flat, path: out}
            """.utf8
        ).write(to: config)
        var registry = BundledPlugins.registry
        registry.register(sink: FlatSink.descriptor)
        #expect(await CLI.main(["run", config.path, "--quiet"], registry: registry) == 0)
        let stored = try FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent("out").path)
        #expect(stored.filter { $0.hasSuffix(".m4a") }.count == 5)
        #expect(await CLI.main(["check", config.path], registry: registry) == 0)
    }
}
