/// An item of a collection with the files stored for it.
public struct CollectedItem: Sendable, Hashable, Codable {
    public var item: MediaItem
    public var files: [CollectedFile]

    public init(item: MediaItem, files: [CollectedFile]) {
        self.item = item
        self.files = files
    }
}
