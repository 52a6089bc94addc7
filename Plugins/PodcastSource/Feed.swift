import Foundation

/// What a podcast feed says, as far as a download needs it: the show, and each episode with its enclosure.
///
/// Values are kept as the feed wrote them (URLs unresolved, dates parsed); ``PodcastSource`` decides what
/// becomes an item.
struct Feed: Sendable {
    var title: String?
    var author: String?
    /// The show's artwork: `itunes:image`, else RSS `<image><url>`, else Atom `<logo>` or `<icon>`.
    var artwork: String?
    /// The first `itunes:category`.
    var category: String?
    var episodes: [Episode] = []
}

/// One `<item>` (RSS) or `<entry>` (Atom).
struct Episode: Sendable {
    /// RSS `<guid>`, Atom `<id>`.
    var guid: String?
    var title: String?
    /// `itunes:title`, used when `<title>` is missing.
    var itunesTitle: String?
    var author: String?
    /// `pubDate`, Atom `published` (else `updated`), or `dc:date`.
    var date: FeedDate?
    var durationMillis: Int?
    /// `itunes:season`, else `podcast:season`.
    var season: Int?
    /// `itunes:episode`, else `podcast:episode`.
    var number: Int?
    var episodeType: String?
    var enclosure: Enclosure?
    /// The episode's own artwork: `itunes:image`, else `media:thumbnail`.
    var artwork: String?
    /// Where in the feed the episode starts, for messages.
    var line: Int
}

/// An episode's media file: the `<enclosure>`, an Atom `link rel="enclosure"`, or a `media:content`.
struct Enclosure: Sendable, Hashable {
    /// As written: possibly relative, possibly not http(s).
    var url: String
    var length: Int64?
    var type: String?
}

/// A date as a feed wrote it and as it was read: nil `date` when the text made no sense.
struct FeedDate: Sendable, Hashable {
    var text: String
    var date: Date?
}
