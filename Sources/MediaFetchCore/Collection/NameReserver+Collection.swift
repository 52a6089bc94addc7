extension NameReserver {
    /// A reserver in which the collection's own files (``CollectionOptions/manifestName``,
    /// ``CollectionOptions/playlistName``) are already taken at the root, so an item titled "manifest"
    /// with a `{title}.json` layout becomes `manifest (2).json` instead of being overwritten by the
    /// manifest. Taken always, not only when those files are written, so a config change never renames
    /// an item.
    public static func reservingCollectionFiles(maxBytes: Int = SafeName.maxComponentBytes) -> NameReserver {
        var reserver = NameReserver(maxBytes: maxBytes)
        _ = reserver.reserve([CollectionOptions.manifestName])
        _ = reserver.reserve([CollectionOptions.playlistName])
        return reserver
    }
}
