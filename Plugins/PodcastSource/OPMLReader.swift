import Foundation

/// Reads the feed URLs of an OPML subscription list, as podcast apps export it: every `<outline>` with an
/// `xmlUrl`, nested or not, in document order, each once.
enum OPMLReader {
    /// One subscription: its feed URL as written, and the line it is on.
    struct Subscription: Sendable, Hashable {
        var url: String
        var title: String?
        var line: Int
    }

    /// - Throws: ``XMLReader/Failure`` for XML that is not well-formed, ``FeedParser/NotAFeed`` for a document
    ///   that is not OPML.
    static func subscriptions(_ data: Data, name: String) throws -> [Subscription] {
        try XMLReader.read(data, url: name) { reader in try subscriptions(reader) }
    }

    private static func subscriptions(_ reader: XMLReader) throws -> [Subscription] {
        var found: [Subscription] = []
        var seen: Set<String> = []
        var sawRoot = false
        while try reader.read() {
            guard reader.nodeType == .element else { continue }
            let element = reader.localName
            if !sawRoot {
                sawRoot = true
                guard element.lowercased() == "opml" else {
                    throw FeedParser.NotAFeed(
                        description: "not an OPML subscription list: the document is <\(element)>")
                }
                continue
            }
            guard element == "outline" else { continue }
            // Apps write xmlUrl; a few lowercase it.
            guard
                let url = (reader.attribute("xmlUrl") ?? reader.attribute("xmlurl"))?
                    .trimmingCharacters(in: .whitespacesAndNewlines), !url.isEmpty
            else { continue }
            if seen.insert(url).inserted {
                let title = reader.attribute("title") ?? reader.attribute("text")
                found.append(Subscription(url: url, title: title, line: reader.lineNumber))
            }
        }
        guard sawRoot else { throw FeedParser.NotAFeed(description: "the OPML document is empty") }
        return found
    }
}
