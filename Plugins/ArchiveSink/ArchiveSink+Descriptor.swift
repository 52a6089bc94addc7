import MediaFetchCore

extension ArchiveSink {
    /// `tar`: options `path`, `format`, `compression`, `level`, `layout`, `mtime`, and the collection options
    /// `assets`, `artwork-size`, `manifest`, `playlist`.
    public static let descriptor = SinkDescriptor(
        info: PluginInfo(
            kind: .sink,
            name: "tar",
            summary: "Stores files in one tar (or zip) archive, named by a layout, moved into place when the run ends.",
            options: [
                OptionSpec(
                    "path",
                    .path,
                    default: .path("previews.tar"),
                    doc: "The archive file. A relative path is relative to the config file's folder. The run writes "
                        + "<path>.partial-<pid>-<n> beside it and renames that over <path> only when complete, so "
                        + "<path> is always the previous complete archive or the new one. Until then each download "
                        + "is also kept in the state directory (as much disk again), so that a run stopped early "
                        + "loses none: the next one stores them without fetching them again."
                ),
                OptionSpec(
                    "format",
                    .choice(ArchiveFormat.allCases.map(\.rawValue)),
                    default: .string(ArchiveFormat.pax.rawValue),
                    doc: "pax (POSIX, UTF-8 names, any length or size), ustar (names up to 255 bytes, files below "
                        + "8 GiB), gnutar, or zip (entries stored uncompressed)."
                ),
                OptionSpec(
                    "compression",
                    .choice(ArchiveCompression.allCases.map(\.rawValue)),
                    default: .string(ArchiveCompression.none.rawValue),
                    doc: "none, gzip, zstd or xz around a tar archive. Previews are compressed already, so none "
                        + "is fastest and barely larger. Not with zip."
                ),
                OptionSpec(
                    "level",
                    .integer(0...22),
                    defaultText: "the filter's own",
                    doc: "The compression level: gzip 1-9, zstd 1-22, xz 0-9."
                ),
                OptionSpec(
                    "layout",
                    .string,
                    default: .string(LayoutTemplate.defaultLayout),
                    doc: "Each entry's name, as for the directory sink: placeholders "
                        + LayoutTemplate.placeholderList + "; every part made safe the same way, clashes "
                        + "numbered \" (2)\" in the order items are found."
                ),
                OptionSpec(
                    "mtime",
                    .choice(ArchiveEntryTime.allCases.map(\.rawValue)),
                    default: .string(ArchiveEntryTime.releaseDate.rawValue),
                    doc: "Each entry's modification time: the item's release date (the download time when it has "
                        + "none), or the download time."
                ),
            ] + CollectionOptions.specs()
        ),
        make: { options, _ in ArchiveSink(configuration: try ArchiveSinkConfiguration(options: options)) }
    )
}
