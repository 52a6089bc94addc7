import Foundation

/// Reads an RSS 2.0 (with the iTunes, Podcasting 2.0, Media RSS and Dublin Core namespaces) or Atom feed with
/// ``XMLReader``, in one pass, keeping only what an episode download needs.
///
/// Elements are matched by namespace URI and local name, never by prefix, so `<itunes:duration>` counts whatever
/// prefix the feed binds to the iTunes namespace. Descriptions and show notes are not kept at all.
struct FeedParser {
    /// The namespaces the parser reads, matched leniently: feeds write the iTunes URI in several cases, and the
    /// Podcasting 2.0 namespace as its podcastindex.org URI or one of its GitHub addresses.
    enum Namespace {
        case none, itunes, podcast, atom, media, dublinCore, other

        init(_ uri: String) {
            if uri.isEmpty {
                self = .none
                return
            }
            let lowered = uri.lowercased()
            if lowered.hasPrefix("http://www.itunes.com/dtds/podcast-1.0.dtd") {
                self = .itunes
            } else if lowered.contains("podcastindex") {
                self = .podcast
            } else if lowered == "http://www.w3.org/2005/atom" {
                self = .atom
            } else if lowered.hasPrefix("http://search.yahoo.com/mrss") {
                self = .media
            } else if lowered == "http://purl.org/dc/elements/1.1/" {
                self = .dublinCore
            } else {
                self = .other
            }
        }
    }

    /// Why a document is not a feed.
    struct NotAFeed: Error, CustomStringConvertible {
        var description: String
    }

    /// What the parser is inside of.
    private enum Scope {
        case channel
        case channelImage
        case channelAuthor
        case item
        case itemAuthor
    }

    /// Parses `data`; `url` names the feed in libxml2's messages.
    /// - Throws: ``XMLReader/Failure`` for XML that is not well-formed (with its line and column), ``NotAFeed``
    ///   for a well-formed document that is neither RSS nor Atom.
    static func parse(_ data: Data, url: String) throws -> Feed {
        try XMLReader.read(data, url: url) { reader in try parse(reader) }
    }

    private static func parse(_ reader: XMLReader) throws -> Feed {
        var feed = Feed()
        var isAtom = false
        var sawRoot = false
        var scopes: [Scope] = []
        var depth = 0
        /// The depth at which each open scope began.
        var scopeDepths: [Int] = []
        var episode: Episode?
        var text = ""
        var collecting = false
        var itunesEpisode: Int?
        var podcastEpisode: Int?
        var itunesSeason: Int?
        var podcastSeason: Int?
        var mediaContent: Enclosure?
        var itemRSSAuthor: String?
        var itemCreator: String?
        var itemUpdated: FeedDate?
        var itemDCDate: FeedDate?

        // Names and namespaces by the reader's interned pointers: converted and classified once a document.
        var names: [UnsafeRawPointer: String] = [:]
        var namespaces: [UnsafeRawPointer: Namespace] = [:]
        func element() -> (String, Namespace) {
            let (namePointer, namespacePointer) = reader.interned
            var name = ""
            if let namePointer {
                if let known = names[namePointer] {
                    name = known
                } else {
                    name = reader.localName
                    names[namePointer] = name
                }
            }
            var namespace = Namespace.none
            if let namespacePointer {
                if let known = namespaces[namespacePointer] {
                    namespace = known
                } else {
                    namespace = Namespace(reader.namespace)
                    namespaces[namespacePointer] = namespace
                }
            }
            return (name, namespace)
        }

        func open(_ scope: Scope) {
            scopes.append(scope)
            scopeDepths.append(depth)
        }

        /// Ends the innermost scope; an episode ends with its item.
        func close() {
            let closed = scopes.removeLast()
            scopeDepths.removeLast()
            guard closed == .item, var finished = episode else { return }
            finished.number = itunesEpisode ?? podcastEpisode
            finished.season = itunesSeason ?? podcastSeason
            if finished.enclosure == nil { finished.enclosure = mediaContent }
            if finished.author == nil { finished.author = itemCreator ?? itemRSSAuthor }
            if finished.date == nil { finished.date = itemUpdated ?? itemDCDate }
            feed.episodes.append(finished)
            episode = nil
        }

        while try reader.read() {
            switch reader.nodeType {
            case .element:
                let (name, namespace) = element()
                let empty = reader.isEmptyElement
                if !sawRoot {
                    sawRoot = true
                    switch (namespace, name) {
                    case (.atom, "feed"):
                        isAtom = true
                        open(.channel)
                    case (_, "rss"), (_, "RDF"):
                        break
                    default:
                        let shown = name.isEmpty ? "?" : name
                        throw NotAFeed(description: "not an RSS or Atom feed: the document is <\(shown)>")
                    }
                    if !empty { depth += 1 }
                    continue
                }
                text = ""
                collecting = false
                let scope = scopes.last
                switch (scope, namespace, name) {
                case (nil, _, "channel") where !isAtom:
                    open(.channel)
                case (.channel?, _, "item") where !isAtom, (nil, _, "item") where !isAtom,
                    (.channel?, .atom, "entry") where isAtom:
                    episode = Episode(line: reader.lineNumber)
                    (itunesEpisode, podcastEpisode, itunesSeason, podcastSeason) = (nil, nil, nil, nil)
                    (mediaContent, itemRSSAuthor, itemCreator, itemUpdated, itemDCDate) = (nil, nil, nil, nil, nil)
                    open(.item)
                case (.channel?, .none, "image") where !isAtom:
                    open(.channelImage)
                case (.channel?, .atom, "author") where isAtom:
                    open(.channelAuthor)
                case (.item?, .atom, "author") where isAtom:
                    open(.itemAuthor)
                case (.channel?, .itunes, "image"):
                    if let href = reader.attribute("href"), feed.artwork == nil || !href.isEmpty { feed.artwork = href }
                case (.channel?, .itunes, "category"):
                    if feed.category == nil { feed.category = reader.attribute("text") }
                case (.item?, .itunes, "image"):
                    if let href = reader.attribute("href"), !href.isEmpty { episode?.artwork = href }
                case (.item?, .media, "thumbnail"):
                    if episode?.artwork == nil, let href = reader.attribute("url") { episode?.artwork = href }
                case (.item?, .none, "enclosure") where !isAtom:
                    // The first enclosure is the episode; a second one is an alternative format.
                    if episode?.enclosure == nil, let url = reader.attribute("url") {
                        episode?.enclosure = Enclosure(
                            url: url, length: reader.attribute("length").flatMap(Self.length),
                            type: reader.attribute("type"))
                    }
                case (.item?, .atom, "link"):
                    if reader.attribute("rel") == "enclosure", episode?.enclosure == nil,
                        let href = reader.attribute("href")
                    {
                        episode?.enclosure = Enclosure(
                            url: href, length: reader.attribute("length").flatMap(Self.length),
                            type: reader.attribute("type"))
                    }
                case (.item?, .media, "content"):
                    let type = reader.attribute("type") ?? ""
                    let medium = reader.attribute("medium") ?? ""
                    if mediaContent == nil, let url = reader.attribute("url"),
                        type.hasPrefix("audio/") || type.hasPrefix("video/") || medium == "audio" || medium == "video"
                    {
                        mediaContent = Enclosure(
                            url: url, length: reader.attribute("fileSize").flatMap(Self.length),
                            type: type.isEmpty ? nil : type)
                    }
                default:
                    collecting = scope != nil && Self.keepsText(scope, namespace, name, isAtom: isAtom)
                }
                if !empty {
                    depth += 1
                } else if scopeDepths.last == depth {
                    // `<item/>`: a scope opened here has no end-element node to close it.
                    close()
                    collecting = false
                }
            case .text, .cdata, .significantWhitespace, .whitespace:
                if collecting { text += reader.value }
            case .endElement:
                depth -= 1
                if let last = scopeDepths.last, last == depth {
                    close()
                    collecting = false
                    continue
                }
                guard collecting, let scope = scopes.last else { continue }
                collecting = false
                let value = Self.trimmed(text)
                text = ""
                guard !value.isEmpty else { continue }
                let (name, namespace) = element()
                switch (scope, namespace, name) {
                case (.channel, .none, "title"), (.channel, .atom, "title"):
                    feed.title = feed.title ?? value
                case (.channel, .itunes, "author"):
                    feed.author = value
                case (.channel, .none, "managingEditor"), (.channel, .none, "author"):
                    if feed.author == nil { feed.author = Self.personName(value) }
                case (.channelAuthor, .atom, "name"):
                    if feed.author == nil { feed.author = value }
                case (.channelImage, .none, "url"), (.channel, .atom, "logo"):
                    if feed.artwork == nil { feed.artwork = value }
                case (.channel, .atom, "icon"):
                    if feed.artwork == nil { feed.artwork = value }
                case (.item, .none, "title"), (.item, .atom, "title"):
                    episode?.title = value
                case (.item, .itunes, "title"):
                    episode?.itunesTitle = value
                case (.item, .none, "guid"), (.item, .atom, "id"):
                    episode?.guid = value
                case (.item, .none, "pubDate"), (.item, .atom, "published"):
                    episode?.date = FeedDate(text: value, date: RFC822Date.parse(value))
                case (.item, .atom, "updated"):
                    itemUpdated = FeedDate(text: value, date: RFC822Date.parse(value))
                case (.item, .dublinCore, "date"):
                    itemDCDate = FeedDate(text: value, date: RFC822Date.parse(value))
                case (.item, .itunes, "duration"):
                    episode?.durationMillis = EpisodeDuration.milliseconds(value)
                case (.item, .itunes, "episode"):
                    itunesEpisode = Self.number(value)
                case (.item, .podcast, "episode"):
                    podcastEpisode = Self.number(value)
                case (.item, .itunes, "season"):
                    itunesSeason = Self.number(value)
                case (.item, .podcast, "season"):
                    podcastSeason = Self.number(value)
                case (.item, .itunes, "episodeType"):
                    episode?.episodeType = value.lowercased()
                case (.item, .itunes, "author"):
                    episode?.author = value
                case (.item, .none, "author"):
                    itemRSSAuthor = Self.personName(value)
                case (.item, .dublinCore, "creator"):
                    itemCreator = value
                case (.itemAuthor, .atom, "name"):
                    if episode?.author == nil { episode?.author = value }
                default:
                    break
                }
            case .entityReference, .other:
                // An entity that was not substituted (see XMLReader): its text is never read.
                continue
            }
        }
        guard sawRoot else { throw NotAFeed(description: "the document is empty") }
        return feed
    }

    /// Whether the text of an element in `scope` is wanted; everything else (descriptions, show notes) is skipped.
    private static func keepsText(_ scope: Scope?, _ namespace: Namespace, _ name: String, isAtom: Bool) -> Bool {
        switch (scope, namespace) {
        case (.channel?, .none): ["title", "managingEditor", "author"].contains(name)
        case (.channel?, .atom): ["title", "logo", "icon"].contains(name)
        case (.channel?, .itunes): name == "author"
        case (.channelImage?, .none): name == "url"
        case (.channelAuthor?, .atom), (.itemAuthor?, .atom): name == "name"
        case (.item?, .none): ["title", "guid", "pubDate", "author"].contains(name)
        case (.item?, .atom): ["title", "id", "published", "updated"].contains(name)
        case (.item?, .itunes): ["title", "duration", "episode", "season", "episodeType", "author"].contains(name)
        case (.item?, .podcast): name == "episode" || name == "season"
        case (.item?, .dublinCore): name == "date" || name == "creator"
        default: false
        }
    }

    /// `text` without leading and trailing whitespace, in the standard library (Foundation's trimming goes through
    /// NSString, which was a third of reading a feed).
    static func trimmed(_ text: String) -> String {
        let scalars = text.unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        if first == scalars.startIndex && last == scalars.index(before: scalars.endIndex) { return text }
        return String(scalars[first...last])
    }

    /// An enclosure's `length`: bytes, a whole number; 0 and nonsense (feeds write both) are no length.
    static func length(_ text: String) -> Int64? {
        guard let value = Int64(trimmed(text)), value > 0 else { return nil }
        return value
    }

    /// A season or episode number: a whole number (Podcasting 2.0 allows a decimal episode; its whole part).
    static func number(_ text: String) -> Int? {
        if let value = Int(text), value >= 0 { return value }
        if let value = Double(text), value >= 0, value < 1e9 { return Int(value) }
        return nil
    }

    /// RSS `author` and `managingEditor` are `email (Name)`: the name when there is one, else the text.
    static func personName(_ text: String) -> String {
        if let open = text.firstIndex(of: "("), let close = text.lastIndex(of: ")"), open < close {
            let name = trimmed(String(text[text.index(after: open)..<close]))
            if !name.isEmpty { return name }
        }
        return text
    }
}
