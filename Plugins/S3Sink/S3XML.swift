import Foundation

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// An S3 answer's XML as a small tree: enough to read an error's `Code`, an upload's `UploadId`, a listing's
/// entries. Parsed with FoundationXML (libxml2), which handles entities and CDATA.
struct S3XML: Sendable {
    var name: String
    var text: String
    var children: [S3XML]

    /// The first element called `name` at any depth below this one (this one included).
    func first(_ name: String) -> S3XML? {
        if self.name == name { return self }
        for child in children {
            if let found = child.first(name) { return found }
        }
        return nil
    }

    /// The text of the first element called `name`.
    func text(_ name: String) -> String? { first(name)?.text }

    /// Every direct child called `name`.
    func all(_ name: String) -> [S3XML] { children.filter { $0.name == name } }

    /// The document's root element; nil for a body that is not XML (an empty answer, an HTML page).
    static func parse(_ data: Data) -> S3XML? {
        guard !data.isEmpty else { return nil }
        let builder = Builder()
        let parser = XMLParser(data: data)
        parser.delegate = builder
        guard parser.parse() else { return nil }
        return builder.root
    }

    private final class Builder: NSObject, XMLParserDelegate {
        var stack: [S3XML] = []
        var root: S3XML?

        func parser(
            _ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]
        ) {
            stack.append(S3XML(name: elementName, text: "", children: []))
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += string
        }

        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            guard !stack.isEmpty else { return }
            stack[stack.count - 1].text += String(decoding: CDATABlock, as: UTF8.self)
        }

        func parser(
            _ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
            qualifiedName qName: String?
        ) {
            guard let done = stack.popLast() else { return }
            if stack.isEmpty {
                root = done
            } else {
                stack[stack.count - 1].children.append(done)
            }
        }
    }
}

extension String {
    /// The text with `&`, `<`, `>`, `"` and `'` escaped, for an XML element's content.
    var xmlEscaped: String {
        var out = ""
        for character in self {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(character)
            }
        }
        return out
    }
}
