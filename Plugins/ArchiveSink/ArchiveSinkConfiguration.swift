import Foundation
import MediaFetchCore

/// What an ``ArchiveSink`` writes and how; read from the `tar` sink's options.
public struct ArchiveSinkConfiguration: Sendable {
    /// The archive's final path. While a run writes, the archive is `<path>.partial-<pid>-<n>` beside it.
    public var path: URL
    public var format: ArchiveFormat
    public var compression: ArchiveCompression
    /// The filter's level; nil for its default.
    public var level: Int?
    public var layout: LayoutTemplate
    public var entryTime: ArchiveEntryTime
    public var collection: CollectionOptions

    public init(
        path: URL,
        format: ArchiveFormat = .pax,
        compression: ArchiveCompression = .none,
        level: Int? = nil,
        layout: LayoutTemplate,
        entryTime: ArchiveEntryTime = .releaseDate,
        collection: CollectionOptions = CollectionOptions()
    ) {
        self.path = path.standardizedFileURL
        self.format = format
        self.compression = compression
        self.level = level
        self.layout = layout
        self.entryTime = entryTime
        self.collection = collection
    }

    /// Reads validated options (see ``ArchiveSink/descriptor`` for the keys).
    /// - Throws: ``ConfigError`` at the key at fault: a bad layout; zip with a compression filter; a level
    ///   without a filter or outside the filter's range; an empty path; bad collection options.
    public init(options: PluginOptions) throws(ConfigError) {
        let path = options.path("path") ?? options.string("path") ?? "previews.tar"
        guard !path.isEmpty else { throw options.error("path", "the archive path is empty") }
        let formatName = options.string("format") ?? ArchiveFormat.pax.rawValue
        guard let format = ArchiveFormat(rawValue: formatName) else {
            throw options.error("format", "unknown format \"\(formatName)\"; known: pax, ustar, gnutar, zip")
        }
        let compressionName = options.string("compression") ?? ArchiveCompression.none.rawValue
        guard let compression = ArchiveCompression(rawValue: compressionName) else {
            throw options.error(
                "compression", "unknown compression \"\(compressionName)\"; known: none, gzip, zstd, xz")
        }
        if format == .zip && compression != .none {
            throw options.error(
                "compression",
                "zip cannot be wrapped in \(compression.rawValue): a zip archive is not a stream; use "
                    + "format: pax for a compressed archive, or compression: none"
            )
        }
        let level = options.integer("level")
        if let level {
            guard let levels = compression.levels else {
                throw options.error("level", "a level needs a compression filter (gzip, zstd or xz)")
            }
            guard levels.contains(level) else {
                throw options.error(
                    "level", "\(compression.rawValue) takes levels \(levels.lowerBound) to \(levels.upperBound)"
                )
            }
        }
        let layout: LayoutTemplate
        do {
            layout = try LayoutTemplate(options.string("layout") ?? LayoutTemplate.defaultLayout)
        } catch {
            throw options.error("layout", error.message)
        }
        let timeName = options.string("mtime") ?? ArchiveEntryTime.releaseDate.rawValue
        guard let entryTime = ArchiveEntryTime(rawValue: timeName) else {
            throw options.error("mtime", "unknown time \"\(timeName)\"; known: release-date, download-time")
        }
        self.init(
            path: URL(fileURLWithPath: path),
            format: format,
            compression: compression,
            level: level,
            layout: layout,
            entryTime: entryTime,
            collection: try CollectionOptions(options: options)
        )
    }
}
