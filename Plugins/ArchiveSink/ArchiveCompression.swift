import CArchive

/// The filter an ``ArchiveSink`` compresses a tar archive with.
public enum ArchiveCompression: String, Sendable, Hashable, CaseIterable {
    /// No filter: previews are compressed audio and video already, so this is the default.
    case none
    case gzip
    case zstd
    case xz

    /// The levels the filter takes; nil when it takes none.
    public var levels: ClosedRange<Int>? {
        switch self {
        case .none: nil
        case .gzip: 1...9
        case .zstd: 1...22
        case .xz: 0...9
        }
    }

    /// Adds the filter, at `level` when given, to a write handle.
    func configure(
        _ handle: OpaquePointer, level: Int?, check: (Int32, String) throws(ArchiveError) -> Void
    )
        throws(ArchiveError)
    {
        switch self {
        case .none: try check(archive_write_add_filter_none(handle), "select no compression")
        case .gzip: try check(archive_write_add_filter_gzip(handle), "select gzip")
        case .zstd: try check(archive_write_add_filter_zstd(handle), "select zstd")
        case .xz: try check(archive_write_add_filter_xz(handle), "select xz")
        }
        if let level {
            try check(
                archive_write_set_filter_option(handle, rawValue, "compression-level", String(level)),
                "set the \(rawValue) level to \(level)"
            )
        }
    }
}
