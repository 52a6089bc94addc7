/// Which time an archive entry carries as its modification time.
public enum ArchiveEntryTime: String, Sendable, Hashable, CaseIterable {
    /// The item's release date, or the download time when the catalog gives none: the same item gets the
    /// same header in every run.
    case releaseDate = "release-date"
    /// When the file finished downloading.
    case downloadTime = "download-time"
}
