import Foundation

/// Where a sink puts an item's file, as a path template: `{artist}/{album}/{track-number:02} {title}.{ext}`.
///
/// * `/` separates directories; the last component is the file name.
/// * Placeholders, in braces: see ``Placeholder``. Numbers take a zero-padding width: `{track-number:02}`
///   renders track 7 as `07`.
/// * `{{` and `}}` are literal braces.
/// * A field the item lacks renders empty. In each component runs of whitespace collapse to one space and
///   the ends are trimmed; a directory component that ends up empty is dropped, so an item without artist
///   and album lands at `{track-number:02} {title}.{ext}` in the root (and a missing track number leaves
///   no stray space). Every component goes through ``SafeName``, so no field value can add a directory
///   level or climb out of the root.
///
/// Dates are rendered in UTC, so the same item gets the same name in every time zone.
public struct LayoutTemplate: Sendable, Hashable, CustomStringConvertible {
    /// `{artist}/{album}/{track-number:02} {title}.{ext}`.
    public static let defaultLayout = "{artist}/{album}/{track-number:02} {title}.{ext}"

    /// The fields a layout can use.
    ///
    /// An ``OpenEnumeration``: more fields may come in a later version, so a `switch` over them needs a `default`.
    public struct Placeholder: OpenEnumeration {
        /// The name, as a layout spells it between braces: `track-number`.
        public let rawValue: String

        private init(_ rawValue: String) { self.rawValue = rawValue }

        /// The item's id within its source (the iTunes track id, or the URL of a list entry).
        public static let id = Self("id")
        /// The catalog's kind ("song", "music-video").
        public static let kind = Self("kind")
        public static let title = Self("title")
        public static let artist = Self("artist")
        public static let album = Self("album")
        /// A number; takes a width.
        public static let trackNumber = Self("track-number")
        /// A number; takes a width.
        public static let discNumber = Self("disc-number")
        public static let genre = Self("genre")
        /// The release year (UTC), a number; takes a width.
        public static let year = Self("year")
        /// The release date as `YYYY-MM-DD` (UTC).
        public static let releaseDate = Self("release-date")
        /// The play time as `3m25s` (`1h02m05s` past an hour): a colon is not allowed in Windows names.
        public static let duration = Self("duration")
        /// The file extension without the dot ("m4a", "jpg"; "bin" when the URL has none).
        public static let ext = Self("ext")
        /// Which file of the item: `preview` or `artwork`.
        public static let asset = Self("asset")

        public static let allCases: [Self] = [
            .id, .kind, .title, .artist, .album, .trackNumber, .discNumber, .genre, .year, .releaseDate, .duration,
            .ext, .asset,
        ]

        /// Whether `{name:NN}` zero-padding applies.
        public var isNumeric: Bool {
            switch self {
            case .trackNumber, .discNumber, .year: true
            default: false
            }
        }
    }

    /// Every placeholder as a layout spells it, for docs and messages: `{id}, {kind}, …`.
    public static var placeholderList: String {
        Placeholder.allCases.map { "{\($0.rawValue)}" }.joined(separator: ", ")
    }

    enum Segment: Sendable, Hashable {
        case literal(String)
        case field(Placeholder, width: Int?)
    }

    /// The layout as written.
    public let text: String
    /// One segment list per `/`-separated component.
    let components: [[Segment]]

    public var description: String { text }

    /// Parses `text`.
    /// - Throws: ``ConfigError`` without a location (the caller adds it with ``PluginOptions/error(_:_:)``)
    ///   naming the bad placeholder or brace and listing the allowed placeholders.
    public init(_ text: String) throws(ConfigError) {
        self.text = text
        self.components = try Self.parse(text)
    }

    /// The path components for `asset` of `item`: each safe, none empty, the last one the file name.
    public func render(_ item: MediaItem, asset: AssetKind) -> [String] {
        var result: [String] = []
        for (index, segments) in components.enumerated() {
            let isFile = index == components.count - 1
            var raw = ""
            var fields = 0
            var filled = 0
            for segment in segments {
                switch segment {
                case .literal(let literal): raw += literal
                case .field(let placeholder, let width):
                    let value = Self.value(placeholder, width: width, item, asset)
                    fields += 1
                    if !value.isEmpty { filled += 1 }
                    raw += value
                }
            }
            if isFile {
                result.append(SafeName.component(raw, keepingExtension: true))
            } else {
                // A folder level whose fields are all missing is left out, literal text and all
                // (`{artist} - {album}` for an item with neither is no folder called "-").
                let name = SafeName.cleaned(raw)
                if !name.isEmpty && (fields == 0 || filled > 0) { result.append(name) }
            }
        }
        return result
    }

    /// ``render(_:asset:)`` joined with `/`.
    public func renderPath(_ item: MediaItem, asset: AssetKind) -> String {
        render(item, asset: asset).joined(separator: "/")
    }

    // MARK: - Values

    static func value(_ placeholder: Placeholder, width: Int?, _ item: MediaItem, _ asset: AssetKind) -> String {
        switch placeholder {
        case .id: item.id
        case .kind: item.kind ?? ""
        case .title: item.title
        case .artist: item.artist ?? ""
        case .album: item.album ?? ""
        case .trackNumber: padded(item.trackNumber, width)
        case .discNumber: padded(item.discNumber, width)
        case .genre: item.genre ?? ""
        case .year: padded(item.releaseDate.map { utcCalendar.component(.year, from: $0) }, width)
        case .releaseDate: item.releaseDate.map(isoDate) ?? ""
        case .duration: item.durationMillis.map(durationText) ?? ""
        case .ext: item.fileExtension(for: asset)
        case .asset: asset.rawValue
        default: ""
        }
    }

    static func padded(_ number: Int?, _ width: Int?) -> String {
        guard let number else { return "" }
        let digits = String(number.magnitude)
        let pad = String(repeating: "0", count: max(0, (width ?? 0) - digits.count))
        return (number < 0 ? "-" : "") + pad + digits
    }

    static func isoDate(_ date: Date) -> String {
        let parts = utcCalendar.dateComponents([.year, .month, .day], from: date)
        return padded(parts.year ?? 0, 4) + "-" + padded(parts.month ?? 0, 2) + "-" + padded(parts.day ?? 0, 2)
    }

    static func durationText(_ millis: Int) -> String {
        let total = max(0, millis) / 1000
        let hours = total / 3600
        let minutes = total / 60 % 60
        let seconds = total % 60
        if hours > 0 { return "\(hours)h" + padded(minutes, 2) + "m" + padded(seconds, 2) + "s" }
        return "\(minutes)m" + padded(seconds, 2) + "s"
    }

    static let utcCalendar: Calendar = {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        return calendar
    }()

    // MARK: - Parsing

    static let maxWidth = 20

    static func parse(_ text: String) throws(ConfigError) -> [[Segment]] {
        guard !text.isEmpty else { throw failure("the layout is empty; the default is \(defaultLayout)") }
        if text.hasPrefix("/") {
            throw failure("the layout \"\(text)\" starts with \"/\"; it is a path relative to the sink's folder")
        }
        if text.hasSuffix("/") {
            throw failure("the layout \"\(text)\" ends with \"/\"; its last part is the file name")
        }
        var components: [[Segment]] = []
        var segments: [Segment] = []
        var literal = ""
        var scalars = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil

        func next() -> Unicode.Scalar? {
            if let scalar = pending {
                pending = nil
                return scalar
            }
            return scalars.next()
        }
        func flushLiteral() {
            if !literal.isEmpty { segments.append(.literal(literal)) }
            literal = ""
        }
        func endComponent() throws(ConfigError) {
            flushLiteral()
            try checkComponent(segments, in: text)
            components.append(segments)
            segments = []
        }

        while let scalar = next() {
            switch scalar {
            case "{":
                let following = next()
                if following == "{" {
                    literal += "{"
                    continue
                }
                pending = following
                var body = ""
                var closed = false
                while let inner = next() {
                    if inner == "}" {
                        closed = true
                        break
                    }
                    body.unicodeScalars.append(inner)
                }
                guard closed else {
                    throw failure(
                        "the layout \"\(text)\" has a \"{\" without its \"}\"; write \"{{\" for a literal brace"
                    )
                }
                flushLiteral()
                segments.append(try field(body))
            case "}":
                let following = next()
                guard following == "}" else {
                    throw failure(
                        "the layout \"\(text)\" has a \"}\" without its \"{\"; write \"}}\" for a literal brace"
                    )
                }
                literal += "}"
            case "/":
                try endComponent()
            default:
                literal.unicodeScalars.append(scalar)
            }
        }
        try endComponent()
        return components
    }

    static func field(_ body: String) throws(ConfigError) -> Segment {
        let parts = body.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(parts.first ?? "")
        guard let placeholder = Placeholder(rawValue: name) else {
            let hint =
                EditDistance.nearest(name, in: Placeholder.allCases.map(\.rawValue))
                .map { " (did you mean {\($0)}?)" } ?? ""
            throw failure("unknown placeholder {\(body)} in the layout\(hint); allowed: \(placeholderList)")
        }
        guard parts.count == 2 else { return .field(placeholder, width: nil) }
        let format = parts[1]
        guard placeholder.isNumeric else {
            throw failure(
                "{\(body)}: only numbers take a width ({track-number:02}, {disc-number:02}, {year:04}); "
                    + "{\(name)} takes none"
            )
        }
        guard !format.isEmpty, format.utf8.count <= 3, format.allSatisfy(\.isASCIIDigit),
            let width = Int(format), (1...maxWidth).contains(width)
        else {
            throw failure("{\(body)}: the width must be a number from 1 to \(maxWidth), like {\(name):02}")
        }
        return .field(placeholder, width: width)
    }

    /// Rejects components that are empty or can only mean "here" or "up".
    static func checkComponent(_ segments: [Segment], in text: String) throws(ConfigError) {
        if segments.isEmpty {
            throw failure("the layout \"\(text)\" has an empty folder name (\"//\")")
        }
        if segments.allSatisfy({ if case .literal = $0 { true } else { false } }) {
            let literal = segments.map { if case .literal(let value) = $0 { value } else { "" } }.joined()
            let trimmed = literal.trimmingCharacters(in: .whitespaces)
            if trimmed == "." || trimmed == ".." {
                throw failure("the layout \"\(text)\" has a \"\(literal)\" folder; it stays inside the sink's folder")
            }
        }
    }

    static func failure(_ message: String) -> ConfigError {
        ConfigError(message, at: nil)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
