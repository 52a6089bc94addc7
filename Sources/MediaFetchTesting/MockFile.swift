/// A file the mock server serves with its validators, whatever produced it (a preview, artwork, `addFile`).
struct MockFile: Sendable {
    /// The `Last-Modified` every file has: fixed, so that validators are stable across runs.
    static let lastModified = "Sat, 01 Jan 2005 12:00:00 GMT"
    /// The `Last-Modified` of a file that ``MockFault/changedETag(_:)`` pretends has changed.
    static let changedLastModified = "Sun, 01 Jan 2006 12:00:00 GMT"

    var content: MockContent
    var etag: String
    var lastModified: String
    var contentType: String

    init(content: MockContent, contentType: String, lastModified: String = MockFile.lastModified) {
        self.content = content
        self.etag = content.etag
        self.lastModified = lastModified
        self.contentType = contentType
    }
}

/// What a request resolves to before faults and ranges are applied.
enum MockRoute: Sendable {
    /// A Search API answer: JSON with Apple's content type.
    case api(status: Int, body: [UInt8])
    case file(MockFile)
    case notFound
}
