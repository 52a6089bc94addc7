/// A public list of names that can grow: a struct with one static member per name, instead of an enum, so that a
/// later version can add a name without breaking code that switches over today's (such a `switch` needs a
/// `default`). ``AssetKind``, ``LedgerStatus`` and ``PluginKind`` are such lists.
///
/// A conforming type has a `rawValue`, a private initializer from it for its static members, and `allCases`;
/// it gets ``init(rawValue:)``, which takes only the names in `allCases`, and a `description` that is the name.
public protocol OpenEnumeration: RawRepresentable, CaseIterable, Hashable, Sendable, CustomStringConvertible
where RawValue == String, AllCases == [Self] {}

extension OpenEnumeration {
    /// One of `allCases` by its name; nil for any other.
    public init?(rawValue: String) {
        guard let known = Self.allCases.first(where: { $0.rawValue == rawValue }) else { return nil }
        self = known
    }

    /// The name.
    public var description: String { rawValue }
}
