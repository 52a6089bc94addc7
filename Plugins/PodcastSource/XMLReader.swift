import CLibXML2
import Foundation

/// A pull parser over one XML document in memory: libxml2's xmlTextReader, which walks the document node by node
/// without building a tree, so a feed costs its bytes and the few values kept from it.
///
/// Safe against hostile documents by construction:
/// * entities are not substituted (no `XML_PARSE_NOENT`) and external ones never loaded: no DTD is loaded
///   (no `XML_PARSE_DTDLOAD`), nothing is fetched over the network (`XML_PARSE_NONET`), and the process's external
///   entity loader refuses every request, so `<!ENTITY x SYSTEM "file:///etc/passwd">` reads nothing;
/// * libxml2's own limits stay on (no `XML_PARSE_HUGE`), which stop runaway entity expansion ("billion laughs");
/// * an entity reference is a node of its own that ``read()`` reports and callers skip, never its text.
final class XMLReader {
    /// The node kinds a caller looks at; libxml2's `xmlReaderTypes`.
    enum NodeType: Int32 {
        case element = 1
        case text = 3
        case cdata = 4
        case entityReference = 5
        case whitespace = 13
        case significantWhitespace = 14
        case endElement = 15
        case other = -1
    }

    /// Why a document could not be read: libxml2's first error, with where it happened.
    struct Failure: Error, CustomStringConvertible {
        var message: String
        var line: Int
        var column: Int

        var description: String { "\(line):\(column): \(message)" }
    }

    /// The first error libxml2 reported while reading; the reader's structured error handler writes it.
    private final class ErrorBox {
        var first: Failure?
    }

    private let reader: xmlTextReaderPtr
    private let errors = ErrorBox()

    /// libxml2's global set-up, once a process: its parser initialised before threads use it, and an external
    /// entity loader that loads nothing (no entity or DTD of a document is ever fetched, from a file or the network).
    private static let setUp: Void = {
        xmlInitParser()
        xmlSetExternalEntityLoader { _, _, _ in nil }
    }()

    static let options: Int32 = {
        let nonet = XML_PARSE_NONET.rawValue
        // Merged CDATA (a feed's HTML descriptions) reads as text; the parser's dictionary keeps names compact.
        let nocdata = XML_PARSE_NOCDATA.rawValue
        let compact = XML_PARSE_COMPACT.rawValue
        // Line numbers past 65,535 are kept (a feed of thousands of episodes has more lines).
        let bigLines = XML_PARSE_BIG_LINES.rawValue
        return Int32(nonet | nocdata | compact | bigLines)
    }()

    /// Runs `body` with a reader over `data`, read in place (no copy of a feed of many megabytes); `url` names
    /// the document in libxml2's messages. The reader is freed when `body` returns.
    /// - Throws: ``Failure`` when libxml2 cannot start or the document is larger than 2 GiB; what `body` throws.
    static func read<T>(_ data: Data, url: String, _ body: (XMLReader) throws -> T) throws -> T {
        _ = setUp
        guard data.count < Int(Int32.max) else {
            throw Failure(message: "the document is larger than 2 GiB", line: 0, column: 0)
        }
        return try data.withUnsafeBytes { bytes in
            // An empty document still needs a pointer; libxml2 then reports it empty.
            let empty: [CChar] = [0]
            return try empty.withUnsafeBufferPointer { fallback in
                let base = bytes.baseAddress?.assumingMemoryBound(to: CChar.self) ?? fallback.baseAddress
                guard let handle = xmlReaderForMemory(base, Int32(bytes.count), url, nil, options) else {
                    throw Failure(message: "libxml2 could not start a reader", line: 0, column: 0)
                }
                let reader = XMLReader(handle)
                return try body(reader)
            }
        }
    }

    private init(_ reader: xmlTextReaderPtr) {
        self.reader = reader
        xmlTextReaderSetStructuredErrorHandler(
            reader,
            { context, error in
                guard let context, let error, error.pointee.level.rawValue >= XML_ERR_ERROR.rawValue else { return }
                let box = Unmanaged<ErrorBox>.fromOpaque(context).takeUnretainedValue()
                guard box.first == nil else { return }
                let message = error.pointee.message.map { String(cString: $0) } ?? "invalid XML"
                box.first = Failure(
                    message: message.trimmingCharacters(in: .whitespacesAndNewlines), line: Int(error.pointee.line),
                    column: Int(error.pointee.int2))
            }, Unmanaged.passUnretained(errors).toOpaque())
    }

    deinit {
        xmlFreeTextReader(reader)
    }

    /// Moves to the next node.
    /// - Returns: false at the end of the document.
    /// - Throws: ``Failure`` for a document that is not well-formed XML (or breaks libxml2's limits).
    func read() throws -> Bool {
        switch xmlTextReaderRead(reader) {
        case 1: return true
        case 0:
            if let failure = errors.first { throw failure }
            return false
        default:
            throw errors.first
                ?? Failure(
                    message: "invalid XML", line: Int(xmlTextReaderGetParserLineNumber(reader)),
                    column: Int(xmlTextReaderGetParserColumnNumber(reader)))
        }
    }

    var nodeType: NodeType { NodeType(rawValue: xmlTextReaderNodeType(reader)) ?? .other }

    /// The element's name without its prefix.
    var localName: String { Self.string(xmlTextReaderConstLocalName(reader)) ?? "" }

    /// The element's namespace URI; empty for none.
    var namespace: String { Self.string(xmlTextReaderConstNamespaceUri(reader)) ?? "" }

    /// Where the reader's dictionary keeps the element's name and namespace URI: the same pointer for the same
    /// string throughout a document, so a caller can map each to a value of its own once (a feed names the same
    /// few dozen elements tens of thousands of times).
    var interned: (name: UnsafeRawPointer?, namespace: UnsafeRawPointer?) {
        (
            xmlTextReaderConstLocalName(reader).map(UnsafeRawPointer.init),
            xmlTextReaderConstNamespaceUri(reader).map(UnsafeRawPointer.init)
        )
    }

    /// Whether the element is written `<name/>`: no end-element node follows.
    var isEmptyElement: Bool { xmlTextReaderIsEmptyElement(reader) == 1 }

    /// A text node's text.
    var value: String { Self.string(xmlTextReaderConstValue(reader)) ?? "" }

    /// The line of the node being read, counting from 1 (the node's own: the parser may have read ahead).
    var lineNumber: Int {
        guard let node = xmlTextReaderCurrentNode(reader) else { return Int(xmlTextReaderGetParserLineNumber(reader)) }
        return Int(xmlGetLineNo(node))
    }

    /// The element's attribute `name` (no namespace), or nil.
    func attribute(_ name: String) -> String? {
        guard let value = xmlTextReaderGetAttribute(reader, name) else { return nil }
        defer { cxml_free(value) }
        return String(cString: value)
    }

    private static func string(_ pointer: UnsafePointer<xmlChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }
}
