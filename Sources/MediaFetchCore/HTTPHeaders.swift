/// HTTP header fields in the order they came, looked up without regard to case.
public struct HTTPHeaders: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)

    private var fields: [Field] = []

    private struct Field: Sendable, Hashable {
        var name: String
        var value: String
    }

    public init() {}

    public init(_ pairs: [(String, String)]) {
        for (name, value) in pairs { add(name: name, value: value) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Appends a field, keeping any earlier one of the same name.
    public mutating func add(name: String, value: String) {
        fields.append(Field(name: name, value: value))
    }

    /// Replaces every field called `name` with one holding `value`, or removes them when `value` is nil.
    public mutating func set(_ name: String, _ value: String?) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
        if let value { add(name: name, value: value) }
    }

    /// The first value of the field called `name`.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public var count: Int { fields.count }

    public func makeIterator() -> AnyIterator<Element> {
        var iterator = fields.makeIterator()
        return AnyIterator { iterator.next().map { ($0.name, $0.value) } }
    }
}

extension String {
    /// Whether the two are equal without regard to case. ASCII (every header name) is compared byte by byte: two
    /// `lowercased()` strings a comparison were a header lookup's whole cost, 14 lookups a small file's download.
    func caseInsensitiveEquals(_ other: String) -> Bool {
        guard utf8.count == other.utf8.count else { return false }
        let ascii: Bool? = withUTF8Bytes { mine in
            other.withUTF8Bytes { theirs in
                for index in mine.indices {
                    let (a, b) = (mine[index], theirs[index])
                    if a >= 0x80 || b >= 0x80 { return nil }
                    if a.asciiLowercased != b.asciiLowercased { return false }
                }
                return true
            }
        }
        return ascii ?? (lowercased() == other.lowercased())
    }
}
