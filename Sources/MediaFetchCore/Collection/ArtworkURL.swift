import Foundation

/// The catalog's artwork size rule: an artwork URL ends in a size such as `.../100x100bb.jpg`, and the
/// same image comes in other sizes when that part says so (`600x600bb.jpg`).
public enum ArtworkURL {
    /// `url` with the last `<digits>x<digits>bb` in its path replaced by `<size>x<size>bb`; `url` itself
    /// when the path has no such part (then the server decides the size).
    public static func resized(_ url: URL, to size: Int) -> URL {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        let path = Array(components.percentEncodedPath.utf8)
        guard let range = lastSizeToken(in: path) else { return url }
        let replacement = Array("\(size)x\(size)bb".utf8)
        let newPath = path[..<range.lowerBound] + replacement + path[range.upperBound...]
        components.percentEncodedPath = String(decoding: newPath, as: UTF8.self)
        return components.url ?? url
    }

    /// The byte range of the last `<digits>x<digits>bb` in `path`.
    static func lastSizeToken(in path: [UInt8]) -> Range<Int>? {
        let b = UInt8(ascii: "b")
        var end = path.count
        while end >= 2 {
            // Look for "bb" ending at `end`, then digits, "x", digits before it.
            guard path[end - 1] == b, path[end - 2] == b else {
                end -= 1
                continue
            }
            var cursor = end - 2
            let heightEnd = cursor
            while cursor > 0, isDigit(path[cursor - 1]) { cursor -= 1 }
            if cursor < heightEnd, cursor > 0, path[cursor - 1] == UInt8(ascii: "x") {
                let widthEnd = cursor - 1
                var start = widthEnd
                while start > 0, isDigit(path[start - 1]) { start -= 1 }
                if start < widthEnd { return start..<end }
            }
            end -= 1
        }
        return nil
    }

    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
