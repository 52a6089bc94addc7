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
    func caseInsensitiveEquals(_ other: String) -> Bool {
        utf8.count == other.utf8.count && lowercased() == other.lowercased()
    }
}
