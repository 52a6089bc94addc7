import Foundation

/// The options every collection sink shares (`directory` and `tar`): which files of an item to fetch,
/// how large the artwork is, and whether the collection gets a manifest and a playlist.
///
/// Keys, types and defaults (see ``specs(defaults:)``; a sink may choose other defaults, the directory sink
/// leaves `manifest` and `playlist` off so its existing trees stay as they were):
/// * `assets` (list of `preview`, `artwork`; default `[preview]`): the files stored per item, in this order.
/// * `artwork-size` (integer 30..3000; default 600): artwork is fetched as `<size>x<size>bb`, see
///   ``ArtworkURL``.
/// * `manifest` (bool; default true): write `manifest.json` with each item's metadata, source URL, size and
///   SHA-256.
/// * `playlist` (bool; default true): write `playlist.m3u8` listing the stored previews.
///
/// The names `manifest.json` and `playlist.m3u8` are reserved whether or not the files are written, so
/// turning them on later never renames an item (``NameReserver/reservingCollectionFiles(maxBytes:)``).
public struct CollectionOptions: Sendable, Hashable {
    /// The manifest's name at the collection's root.
    public static let manifestName = "manifest.json"
    /// The playlist's name at the collection's root.
    public static let playlistName = "playlist.m3u8"
    /// The artwork edge in pixels when the config gives none.
    public static let defaultArtworkSize = 600
    public static let artworkSizes = 30...3000

    public var assets: [AssetKind]
    /// The artwork edge in pixels.
    public var artworkSize: Int
    public var writesManifest: Bool
    public var writesPlaylist: Bool

    public init(
        assets: [AssetKind] = [.preview],
        artworkSize: Int = CollectionOptions.defaultArtworkSize,
        writesManifest: Bool = true,
        writesPlaylist: Bool = true
    ) {
        self.assets = assets
        self.artworkSize = artworkSize
        self.writesManifest = writesManifest
        self.writesPlaylist = writesPlaylist
    }

    /// Reads the shared keys from a sink's validated options; missing keys take `defaults`.
    /// - Throws: ``ConfigError`` at `assets` for an unknown or repeated asset, or an empty list; at
    ///   `artwork-size` for a size out of range.
    public init(
        options: PluginOptions, defaults: CollectionOptions = CollectionOptions()
    )
        throws(ConfigError)
    {
        var assets: [AssetKind] = []
        for name in options.list("assets") ?? defaults.assets.map(\.rawValue) {
            guard let asset = AssetKind(rawValue: name) else {
                let known = AssetKind.allCases.map(\.rawValue).joined(separator: ", ")
                let hint =
                    EditDistance.nearest(name, in: AssetKind.allCases.map(\.rawValue))
                    .map { " (did you mean \"\($0)\"?)" } ?? ""
                throw options.error("assets", "unknown asset \"\(name)\"\(hint); known: \(known)")
            }
            guard !assets.contains(asset) else {
                throw options.error("assets", "\"\(name)\" is listed twice")
            }
            assets.append(asset)
        }
        guard !assets.isEmpty else {
            throw options.error("assets", "the list is empty; name at least one of preview, artwork")
        }
        let size = options.integer("artwork-size") ?? defaults.artworkSize
        guard Self.artworkSizes.contains(size) else {
            throw options.error(
                "artwork-size",
                "\(size) is out of range; artwork comes in \(Self.artworkSizes.lowerBound) to "
                    + "\(Self.artworkSizes.upperBound) pixels"
            )
        }
        self.init(
            assets: assets,
            artworkSize: size,
            writesManifest: options.bool("manifest") ?? defaults.writesManifest,
            writesPlaylist: options.bool("playlist") ?? defaults.writesPlaylist
        )
    }

    /// The option specs a collection sink appends to its own, showing `defaults`.
    public static func specs(defaults: CollectionOptions = CollectionOptions()) -> [OptionSpec] {
        [
            OptionSpec(
                "assets",
                .stringList,
                default: .list(defaults.assets.map(\.rawValue)),
                doc:
                    "Which files of each item to store, in order: preview, artwork. Artwork uses the same layout; "
                    + "its {ext} is jpg, so it lands beside the preview (use {asset} to tell them apart otherwise, "
                    + "or a clash is numbered \" (2)\")."
            ),
            OptionSpec(
                "artwork-size",
                .integer(artworkSizes),
                default: .integer(defaults.artworkSize),
                doc: "The artwork's edge in pixels: the catalog's 100x100bb thumbnail URL is asked for as "
                    + "<size>x<size>bb."
            ),
            OptionSpec(
                "manifest",
                .bool,
                default: .bool(defaults.writesManifest),
                doc:
                    "Write \(manifestName) at the root: every stored item's metadata, source URL, size and SHA-256."
            ),
            OptionSpec(
                "playlist",
                .bool,
                default: .bool(defaults.writesPlaylist),
                doc:
                    "Write \(playlistName) at the root: the stored previews with durations and \"artist - title\"."
            ),
        ]
    }

    /// Where a collection sink fetches `asset` of `item` from: the preview as the catalog gives it, the
    /// artwork resized to ``artworkSize``.
    public func url(for asset: AssetKind, of item: MediaItem) -> URL? {
        guard let url = item.url(for: asset) else { return nil }
        switch asset {
        case .preview: return url
        case .artwork: return ArtworkURL.resized(url, to: artworkSize)
        default: return url
        }
    }
}
