import Foundation
import MediaFetchCore

/// Reads a text file of URLs, one per line, and makes each an item named after its last path component.
///
/// Blank lines and lines starting with `#` are ignored. A line that is not an http(s) URL is a
/// failed item naming the file and line, so one typo does not stop the rest of the list.
public struct URLListSource: Source {
    /// The list file, absolute.
    public let file: String
    /// How the file is named in messages (as the user wrote it).
    public let displayName: String

    public init(file: String, displayName: String? = nil) {
        self.file = file
        self.displayName = displayName ?? file
    }

    public func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
        // Read a line at a time: a list of a million URLs is never in memory whole, and the pipeline's
        // back-pressure (emit suspends) reaches the reading.
        guard let stream = fopen(file, "r") else {
            throw SourceError("cannot read the URL list \(displayName): \(String(cString: strerror(errno)))")
        }
        defer { fclose(stream) }
        var buffer: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(buffer) }
        var number = 0
        while true {
            try Task.checkCancellation()
            errno = 0
            let count = getline(&buffer, &capacity, stream)
            guard count >= 0, let buffer else {
                if ferror(stream) != 0 {
                    throw SourceError(
                        "cannot read the URL list \(displayName) after line \(number): "
                            + String(cString: strerror(errno)))
                }
                break
            }
            var bytes = UnsafeBufferPointer(start: UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt8.self), count: count)
            // CR LF is one break, as it was when the list was split whole.
            if bytes.last == 0x0A {
                bytes = UnsafeBufferPointer(rebasing: bytes.dropLast())
                if bytes.last == 0x0D { bytes = UnsafeBufferPointer(rebasing: bytes.dropLast()) }
            }
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw SourceError("the URL list \(displayName) is not UTF-8 text (line \(number + 1))")
            }
            // A lone CR, VT, FF or a Unicode line break inside the piece also ends a line.
            for rawLine in Self.lines(of: text) {
                number += 1
                try await emitLine(rawLine, number: number, context, emit)
            }
        }
    }

    /// Reads one line of the list: an item, a duplicate of an earlier line, a failed line, or nothing.
    private func emitLine(
        _ rawLine: Substring, number: Int, _ context: SourceContext,
        _ emit: @Sendable (SourceOutput) async throws -> Void
    ) async throws {
        // Trimmed by Character: Foundation's trimming goes through NSString, at 30,000 instructions a line.
        // Foundation's set also holds the zero-width space (U+200B), which a URL copied from a page can
        // carry; Character.isWhitespace does not.
        let blank = { (character: Character) in character.isWhitespace || character == "\u{200B}" }
        let line: String
        if let first = rawLine.utf8.first, let last = rawLine.utf8.last, Self.isPrintableASCII(first),
            Self.isPrintableASCII(last)
        {
            // Nothing to trim at either end (the usual line): no Character is looked at.
            line = String(rawLine)
        } else {
            var trimmed = rawLine.drop(while: blank)
            while let last = trimmed.last, blank(last) { trimmed = trimmed.dropLast() }
            line = String(trimmed)
        }
        if line.isEmpty || line.hasPrefix("#") { return }
        let place = "\(displayName):\(number)"

        guard let url = URL(string: line), url.isFetchable else {
            let ref = ItemRef(id: line, title: "line \(number)")
            try await emit(
                .failed(
                    ref, url: nil,
                    reason: "\(place): \"\(Self.shorten(line))\" is not an http or "
                        + "https URL; fix or remove the line (a # at the start makes it a comment)"))
            return
        }
        let item = Self.item(for: url)
        // The ids seen are kept in the run's ledger, not here.
        if let earlier = try context.firstOccurrence(of: item.id, at: String(number)) {
            try await emit(.skipped(item.ref, reason: "\(place): the same URL as line \(earlier)"))
            return
        }
        try await emit(.item(item))
    }

    /// The lines of `text`, as `split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)` cuts them
    /// (CR LF is one break); on bytes when the text is ASCII, where the Character-level split cost 17,000
    /// instructions a line.
    static func lines(of text: String) -> [Substring] {
        let bytes = text.utf8
        guard bytes.allSatisfy({ $0 < 0x80 }) else {
            return text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
        }
        var lines: [Substring] = []
        var start = bytes.startIndex
        var index = start
        while index != bytes.endIndex {
            let byte = bytes[index]
            // LF, VT, FF, CR: ASCII's line breaks as Character.isNewline has them.
            guard (0x0A...0x0D).contains(byte) else {
                index = bytes.index(after: index)
                continue
            }
            lines.append(text[start..<index])
            index = bytes.index(after: index)
            if byte == 0x0D, index != bytes.endIndex, bytes[index] == 0x0A { index = bytes.index(after: index) }
            start = index
        }
        lines.append(text[start..<bytes.endIndex])
        return lines
    }

    /// The item for one URL: its id is the URL, its title the last path component without extension.
    static func item(for url: URL) -> MediaItem {
        // Decoded once already by lastPathComponent; decoded again (as it always was) when a % is left, as in a
        // double-encoded name. Foundation's decoding and NSString's extension cost 26,000 instructions an item,
        // and most names need neither.
        let component = url.lastPathComponent
        let last =
            component.utf8.contains(UInt8(ascii: "%"))
            ? (component.removingPercentEncoding ?? component) : component
        let name = (last.isEmpty || last == "/") ? (url.host ?? url.absoluteString) : last
        let ext = simpleExtension(of: name) ?? (name as NSString).pathExtension
        let title = ext.isEmpty ? name : String(name.dropLast(ext.count + 1))
        return MediaItem(id: url.absoluteString, kind: "file", title: title.isEmpty ? name : title, previewURL: url)
    }

    /// The extension of a name like `f00001.m4a` (1 to 16 ASCII letters and digits after a dot that is not
    /// the first character, in a name without `/`), read on bytes; nil for any other name, which NSString's
    /// rules then judge (a decoded `%2F` makes a name of several components).
    static func simpleExtension(of name: String) -> String? {
        let bytes = name.utf8
        guard let dot = bytes.lastIndex(of: UInt8(ascii: ".")), dot != bytes.startIndex,
            !bytes.contains(UInt8(ascii: "/"))
        else { return nil }
        let ext = bytes[bytes.index(after: dot)...]
        guard (1...16).contains(ext.count), ext.allSatisfy(\.isASCIILetterOrDigit) else { return nil }
        return String(decoding: ext, as: UTF8.self)
    }

    /// A visible ASCII character (not a space or a control): a line that starts and ends with one has nothing to
    /// trim, since every character `Character.isWhitespace` or U+200B matches is a space, a control or not ASCII.
    static func isPrintableASCII(_ byte: UInt8) -> Bool {
        byte > 0x20 && byte < 0x7F
    }

    static func shorten(_ line: String) -> String {
        line.count > 80 ? line.prefix(80) + "…" : line
    }

    /// `use: urls`.
    public static let descriptor = SourceDescriptor(
        info: PluginInfo(
            kind: .source,
            name: "urls",
            summary: "Reads a text file of http(s) URLs, one per line; # starts a comment",
            options: [
                OptionSpec(
                    "file", .path, required: true,
                    doc: "The list file, relative to the config file. Each URL is stored under its last path component."
                )
            ]
        ),
        make: { options, _ in
            guard let path = options.path("file") else { throw options.error("file", "missing the list file") }
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else {
                throw options.error("file", "no such list file: \(path) (a relative path is relative to the config)")
            }
            return URLListSource(file: path, displayName: path)
        }
    )
}
