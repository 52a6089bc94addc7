/// Where one item of a ``DownloadQueue`` stands. A struct over a string rather than an enum, so that a new
/// state is no breaking change: compare with `==` against the static members.
public struct DownloadStatus: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Waiting for a download slot.
    public static let queued = DownloadStatus(rawValue: "queued")
    /// Bytes are moving (or a retry is waiting out its delay).
    public static let downloading = DownloadStatus(rawValue: "downloading")
    /// Stopped by the user; the bytes so far are kept and a resume goes on from them.
    public static let paused = DownloadStatus(rawValue: "paused")
    /// In the sink.
    public static let stored = DownloadStatus(rawValue: "stored")
    /// Will not be stored unless resumed; ``Download/reason`` says why.
    public static let failed = DownloadStatus(rawValue: "failed")
    /// Stopped by the user, with its partial file removed.
    public static let cancelled = DownloadStatus(rawValue: "cancelled")

    /// Every state, in the order the API documents them.
    public static let all: [DownloadStatus] = [.queued, .downloading, .paused, .stored, .failed, .cancelled]

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// One item of a ``DownloadQueue`` as it stands: what the API's `GET /api/downloads` lists.
public struct Download: Sendable, Hashable, Codable {
    public var id: String
    public var title: String
    public var artist: String?
    public var status: DownloadStatus
    public var receivedBytes: Int64
    public var expectedBytes: Int64?
    /// Where the sink stored it (its answer to ``Sink/store(_:as:)``), once stored.
    public var location: String?
    /// Why it failed, or what the last retry was about.
    public var reason: String?

    public init(
        id: String, title: String, artist: String? = nil, status: DownloadStatus, receivedBytes: Int64 = 0,
        expectedBytes: Int64? = nil, location: String? = nil, reason: String? = nil
    ) {
        self.id = id
        self.title = title
        self.artist = artist
        self.status = status
        self.receivedBytes = receivedBytes
        self.expectedBytes = expectedBytes
        self.location = location
        self.reason = reason
    }
}

/// A queue operation that cannot be done: the item is unknown, or in a state the operation does not apply to.
public struct QueueError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value that can gain kinds: compare with `==`.
    public struct Code: Sendable, Hashable {
        let name: String
        /// No item of that id was queued.
        public static let unknownItem = Code(name: "unknownItem")
        /// The item is in a state the operation does not apply to (pausing a stored item).
        public static let wrongState = Code(name: "wrongState")
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
