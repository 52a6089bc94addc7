import Foundation
import MediaFetchCore
import Synchronization

/// A sink in any language: a program asked, in JSON lines (PROTOCOL.md beside this file), where each file goes
/// (`plan`), to take each finished file (`store`), whether it still has one stored earlier (`keep`), and to
/// complete the run (`finish`).
///
/// * The program is started at the first request and gets a hello with its options. Its stderr lines are shown
///   as they come, prefixed `[name] `.
/// * Each plan request carries the item, and a suggested path rendered from ``layout``; the path the plugin
///   answers is made safe component by component (``SafeName``, as the directory sink's names are) and unique
///   in plan order (``NameReserver``: a clash becomes `Title (2).m4a`), so a plugin can neither escape its root
///   nor make two items share a name. The store request carries that final path.
/// * A store answer means the file is safely kept: the ledger records it at once (``commitsEachStore``), and
///   nothing that happens to the plugin later undoes it.
/// * A plugin that exits, hangs past the timeout (it is then stopped) or breaks the protocol fails the requests
///   waiting for an answer, and all later ones, with a reason naming it; the run goes on without it, and its
///   finish reports the failure.
public final class ExecSink: Sink {
    public let command: ExecCommand
    /// Renders the suggested path of each plan request.
    public let layout: LayoutTemplate
    /// Which files of each item are stored, and how large the artwork is fetched.
    public let collection: CollectionOptions
    /// Whether every store request carries the file's SHA-256.
    public let sendsDigests: Bool
    private let connection: SinkConnection
    /// Plan-order names; in the run's ledger under a pipeline.
    private let names = PathReserver()

    public var pathReserver: PathReserver? { names }

    /// - Parameters:
    ///   - sendsDigests: compute every file's SHA-256 for the store request, even where the run checks sizes
    ///     only.
    ///   - concurrency: requests the plugin may be asked at once; it answers them by id, in any order.
    ///   - diagnostics: receives the plugin's stderr lines, prefixed `[name] `.
    public init(
        command: ExecCommand, layout: LayoutTemplate, collection: CollectionOptions = CollectionOptions(),
        sendsDigests: Bool = false, concurrency: Int = 1,
        diagnostics: @escaping @Sendable (String) -> Void = ExecCommand.standardError
    ) {
        self.command = command
        self.layout = layout
        self.collection = collection
        self.sendsDigests = sendsDigests
        self.connection = SinkConnection(command: command, concurrency: concurrency, diagnostics: diagnostics)
    }

    public var assets: [AssetKind] { collection.assets }

    public var needsDigests: Bool { sendsDigests }

    public func url(for asset: AssetKind, of item: MediaItem) -> URL? {
        collection.url(for: asset, of: item)
    }

    /// Asks the plugin where `asset` of `item` goes, then makes the answer safe and unique.
    /// - Throws: ``ExecPluginError``.
    public func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        let suggested = layout.renderPath(item, asset: asset)
        let url = url(for: asset, of: item)
        let about = "\(asset.rawValue) of \(item.ref)"
        let answer = try await connection.request("plan", expects: "planned", about: about) { line in
            line.add("asset", asset.rawValue)
            line.add("suggested", suggested)
            line.add("ext", item.fileExtension(for: asset))
            line.add("url", url?.absoluteString)
            Self.add(item, to: &line)
        }
        let wanted = try connection.decode { try answer.requiredString("path") }
        let parts = wanted.split(separator: "/").map(String.init)
        let safe = parts.enumerated().map { index, part in
            SafeName.component(part, keepingExtension: index == parts.count - 1)
        }
        guard !safe.isEmpty else {
            throw connection.broken(
                answer.failure(
                    "expected \"path\" to be a relative path such as Artist/Title.m4a, got \(Quoted(wanted))"))
        }
        let path = try names.reserve(safe).joined(separator: "/")
        return StoragePlan(item: item.ref, asset: asset, relativePath: path)
    }

    /// Hands `file` to the plugin, which moves or copies it; it is the plugin's from now on.
    /// - Returns: the location the plugin answered.
    /// - Throws: ``ExecPluginError``.
    public func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        let answer = try await connection.request("store", expects: "stored", about: plan.relativePath) { line in
            line.add("path", plan.relativePath)
            line.add("file", file.path)
            line.add("size", file.size)
            line.add("sha256", file.sha256)
            line.add("asset", plan.asset.rawValue)
            line.add("itemId", plan.item.id)
            line.add("title", plan.item.title)
            line.add("sourceUrl", file.sourceURL.absoluteString)
        }
        return try connection.decode { try answer.requiredString("location") }
    }

    /// Asks the plugin whether it still has what an earlier run stored.
    public func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool {
        let answer = try await connection.request("keep", expects: "kept", about: plan.relativePath) { line in
            line.add("path", plan.relativePath)
            line.add("location", record.location)
            line.add("size", record.size)
            line.add("sha256", record.sha256)
            line.add("asset", plan.asset.rawValue)
            line.add("itemId", plan.item.id)
        }
        return try connection.decode { try answer.bool("keep") }
    }

    /// Asks the plugin to complete the run, then waits for it to exit.
    /// - Throws: ``ExecPluginError`` when it cannot, failed earlier, or exits with a failure.
    public func finish() async throws {
        _ = try await connection.request("finish", expects: "finished", about: "the end of the run") { _ in }
        try await connection.awaitExit()
    }

    /// The item's fields, as a source's item message has them.
    static func add(_ item: MediaItem, to line: inout JSONLine) {
        line.add("itemId", item.id)
        line.add("kind", item.kind)
        line.add("title", item.title)
        line.add("artist", item.artist)
        line.add("album", item.album)
        line.add("genre", item.genre)
        line.add("trackNumber", item.trackNumber)
        line.add("discNumber", item.discNumber)
        line.add("durationMillis", item.durationMillis)
        line.add("releaseDate", item.releaseDate.map { $0.formatted(.iso8601) })
        line.add("previewUrl", item.previewURL?.absoluteString)
        line.add("artworkUrl", item.artworkURL?.absoluteString)
    }
}
