import Foundation

/// `playlist.m3u8`: the stored previews in plan order, as an extended M3U in UTF-8.
///
/// ```
/// #EXTM3U
/// #EXTINF:205,Jack Johnson - Upside Down
/// Jack Johnson/Curious George/03 Upside Down.m4a
/// ```
/// The duration is the catalog's play time of the track in whole seconds (a preview itself is usually
/// about 30 s; players use the number for display only), -1 when unknown. Line breaks and controls in
/// the metadata become spaces so a title cannot add a line, and a path starting with `#` gets `./` so
/// it is not read as a comment.
public enum CollectionPlaylist {
    public static func render(_ items: [CollectedItem]) -> Data {
        var text = "#EXTM3U\n"
        for collected in items {
            for file in collected.files where file.asset == .preview {
                let item = collected.item
                let seconds = item.durationMillis.map { String(($0 + 500) / 1000) } ?? "-1"
                let title = oneLine(item.title)
                let label = item.artist.map(oneLine).flatMap { $0.isEmpty ? nil : $0 + " - " + title } ?? title
                text += "#EXTINF:\(seconds),\(label)\n"
                text += (file.path.hasPrefix("#") ? "./" : "") + oneLine(file.path) + "\n"
            }
        }
        return Data(text.utf8)
    }

    static func oneLine(_ text: String) -> String {
        var result = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            let isControl =
                scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value)
                || scalar == "\u{2028}" || scalar == "\u{2029}"
            result.append(isControl ? " " : scalar)
        }
        return String(result).trimmingCharacters(in: .whitespaces)
    }
}
