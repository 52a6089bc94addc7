import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import PodcastSource

/// A mock server serving feeds (the committed real ones, or a test's own) and their episodes, a scratch folder,
/// and a way to run a config against them through the bundled plugins, as `mediafetch run` does.
final class PodcastFixture {
    let server: MockCatalogServer
    let folder: URL
    /// Every episode served, by its URL: the bytes a run must store.
    private(set) var episodes: [URL: Served] = [:]

    struct Served {
        var path: String
        var size: Int64
        var seed: UInt64
    }

    init() throws {
        server = try MockCatalogServer()
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("podcast-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// The text of a committed fixture feed.
    static func fixture(_ name: String) throws -> String {
        guard let folder = Bundle.module.url(forResource: "feeds", withExtension: nil) else {
            throw FixtureError("the feeds fixture folder is missing from the test bundle")
        }
        return try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
    }

    /// Serves `text` at `path` as a feed, each enclosure's host replaced by the mock's (path and query kept), and
    /// a generated episode of `size(index)` bytes at each enclosure's path.
    @discardableResult
    func serveFeed(
        _ text: String, at path: String, episodeSize: (Int) -> Int64 = { 40_000 + Int64($0) * 1_000 }
    ) throws -> URL {
        var served = text
        let feed = try FeedParser.parse(Data(text.utf8), url: path)
        for (index, episode) in feed.episodes.enumerated() {
            guard let written = episode.enclosure?.url, let original = URL(string: written), original.isFetchable,
                let host = original.host
            else { continue }
            let port = original.port.map { ":\($0)" } ?? ""
            let local = written.replacingOccurrences(of: "\(original.scheme ?? "http")://\(host)\(port)", with: "")
            guard let url = URL(string: server.baseURL.absoluteString + local) else { continue }
            // The enclosure as the feed writes it in XML (`&` escaped), pointed at the mock.
            served = served.replacingOccurrences(of: Self.escaped(written), with: Self.escaped(url.absoluteString))
            let size = episodeSize(index)
            let seed = UInt64(episodes.count + 1)
            server.addFile(path: url.path, size: size, seed: seed, contentType: episode.enclosure?.type ?? "audio/mpeg")
            episodes[url] = Served(path: url.path, size: size, seed: seed)
        }
        server.addFile(path: path, bytes: Array(served.utf8), contentType: "application/rss+xml; charset=utf-8")
        return server.url(path: path)
    }

    static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;")
    }

    /// The bytes the server sends for `path`.
    func bytes(_ path: String) -> Data {
        Data(server.contentBytes(path: path) ?? [])
    }

    struct Run {
        var summary: RunSummary
        var failures: [String]
        var skips: [String]
        var notices: [String]
        var stored: [String]
    }

    /// Runs `source` (the lines of a `source:` section, indented) with `transport` (curl unless given) and a directory sink
    /// at `out/`, state in `state/`, through the config loader and `Runner`.
    func run(
        source: String, transport: String = "  use: curl\n  concurrency: 4", extra: String = ""
    ) async throws
        -> Run
    {
        let text = """
            source:
              use: podcast
            \(source)
            transport:
            \(transport)
            sink:
              use: directory
              path: out
              sync: false
            state: state
            \(extra)
            """
        let spec = try ConfigLoader.load(
            text: text, path: "podcast.yaml", baseDirectory: folder, registry: BundledPlugins.registry)
        let collected = Mutex((failures: [String](), skips: [String](), notices: [String](), stored: [String]()))
        let summary = try await Runner(spec: spec, registry: BundledPlugins.registry).run { event in
            collected.withLock {
                switch event {
                case .failed(_, _, let reason): $0.failures.append(reason)
                case .skipped(_, let reason): $0.skips.append(reason)
                case .notice(let text): $0.notices.append(text)
                case .stored(_, _, let location, _): $0.stored.append(location)
                default: break
                }
            }
        }
        return collected.withLock {
            Run(summary: summary, failures: $0.failures, skips: $0.skips, notices: $0.notices, stored: $0.stored)
        }
    }

    /// Every file under `out/`, by its path relative to it.
    func storedFiles() throws -> [String: Data] {
        let root = folder.appendingPathComponent("out")
        var files: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(atPath: root.path) else { return files }
        while let relative = walker.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = root.appendingPathComponent(relative).path
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files[relative] = try Data(contentsOf: URL(fileURLWithPath: path))
            }
        }
        return files
    }
}

struct FixtureError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
