/// Hands out unique relative paths, in the order asked, so two items never share a file.
///
/// Names are compared by ``SafeName/collationKey(_:)`` (NFC, case-folded): on a case-insensitive
/// filesystem `Song.m4a` and `song.m4a` are one file, so the second becomes `song (2).m4a` everywhere,
/// and the tree is the same on every filesystem.
///
/// * The second path wanting `A/B/Title.m4a` gets `A/B/Title (2).m4a`, the third `(3)`, and so on; a
///   numbered name someone already took is skipped. Numbers go before the extension and the stem is cut
///   so the component stays within the byte budget.
/// * Directories are compared the same way: the first spelling of a directory wins, so `abba/` after
///   `ABBA/` lands in `ABBA/`. A directory that would clash with an earlier file is numbered.
///
/// The answer depends only on the paths reserved before, never on timing: call it in plan order.
/// A value type; a sink keeps one behind a lock.
public struct NameReserver: Sendable {
    /// The UTF-8 budget of one component.
    public let maxBytes: Int
    /// The names taken so far, in memory.
    private var table = MemoryNameTable()

    public init(maxBytes: Int = SafeName.maxComponentBytes) {
        self.maxBytes = maxBytes
    }

    /// Reserves a unique path for `components` (each already safe, the last one the file name) and
    /// returns it; the same number of components comes back.
    public mutating func reserve(_ components: [String]) -> [String] {
        Self.reserve(components, in: &table, maxBytes: maxBytes)
    }

    /// ``reserve(_:)`` for a `/`-separated path.
    public mutating func reserve(path: String) -> String {
        reserve(path.split(separator: "/").map(String.init)).joined(separator: "/")
    }

    /// The key a path's name is compared by: each component's ``SafeName/collationKey(_:)`` after a `/`, the
    /// keys this numbering takes (`Artist/Song.m4a` is `/artist/song.m4a`).
    public static func nameKey(of components: [String]) -> String {
        components.reduce(into: "") { key, name in
            key += "/"
            key += SafeName.collationKey(name)
        }
    }

    /// The numbering itself, over any table of taken names (in memory here, in the ledger for a
    /// ``PathReserver`` kept there): the same answers from the same calls, whatever holds the names.
    ///
    /// `occupied` is asked about a file name no earlier reservation took (its components as spelled): true when
    /// something that is not this item's is at that path on disk. The name is then skipped, unless the table says
    /// the item being planned holds it (``NameTable/isHeldByPlanningItem(_:path:)``), but not taken: the item whose file
    /// it is may come later in the run and get it back.
    static func reserve<Table: NameTable>(
        _ components: [String], in table: inout Table, maxBytes: Int,
        occupied: ((_ path: [String]) -> Bool)? = nil
    ) throws(Table.Failure) -> [String] {
        guard let fileName = components.last else { return [] }
        var result: [String] = []
        result.reserveCapacity(components.count)
        var parentKey = ""
        for name in components.dropLast() {
            let wantedKey = parentKey + "/" + SafeName.collationKey(name)
            let wanted = try table.lookup(wantedKey)
            if let chosen = wanted?.directory {
                result.append(chosen)
                parentKey += "/" + SafeName.collationKey(chosen)
                continue
            }
            var chosen = name
            var chosenKey = wantedKey
            var slot = wanted
            var number = 2
            // A directory may join an existing directory of the same key, but not a file.
            while let taken = slot, taken.directory == nil {
                chosen = SafeName.numbered(name, number, maxBytes: maxBytes)
                number += 1
                chosenKey = parentKey + "/" + SafeName.collationKey(chosen)
                slot = try table.lookup(chosenKey)
            }
            if let existing = slot?.directory { chosen = existing }
            // The wanted key is taken by now (a file has it, or it is the chosen one): it leads here from now on.
            if wantedKey != chosenKey { try table.take(wantedKey, directory: chosen) }
            if slot == nil { try table.take(chosenKey, directory: chosen) }
            result.append(chosen)
            parentKey = chosenKey
        }
        var chosen = fileName
        var number = 2
        var key = parentKey + "/" + SafeName.collationKey(chosen)
        while true {
            if try table.lookup(key) == nil {
                result.append(chosen)
                // The ledger's word first: a re-run's stored files are then not looked at on disk.
                guard let occupied, try !table.isHeldByPlanningItem(key, path: result), occupied(result) else { break }
                result.removeLast()
            }
            chosen = SafeName.numbered(fileName, number, keepingExtension: true, maxBytes: maxBytes)
            number += 1
            key = parentKey + "/" + SafeName.collationKey(chosen)
        }
        try table.take(key, directory: nil)
        return result
    }
}

/// What a name's collation key (``SafeName/collationKey(_:)`` of each component, `/`-joined from the root)
/// stands for once taken: a file, or a directory and the spelling that directory has.
public struct TakenName: Sendable, Hashable {
    /// The directory's chosen spelling when the key leads to a directory; nil for a file.
    public var directory: String?

    public init(directory: String?) {
        self.directory = directory
    }
}

/// Where ``NameReserver``'s numbering keeps the names it took.
protocol NameTable {
    /// What looking up or taking a name may throw (`Never` in memory).
    associatedtype Failure: Error
    /// What `key` stands for, or nil when nothing took it.
    mutating func lookup(_ key: String) throws(Failure) -> TakenName?
    /// Takes `key` for a file (`directory` nil) or for the directory spelled `directory`; a key taken by a file
    /// before may become a way into a directory (a wanted directory name that a file had, numbered).
    mutating func take(_ key: String, directory: String?) throws(Failure)
    /// Whether the item being planned (``PathReserver/planning``) stored its file under `key` (spelled `path`) in an
    /// earlier run, as far as the table knows (a key ``lookup(_:)`` has just found free): a file there on disk is
    /// then its own.
    mutating func isHeldByPlanningItem(_ key: String, path: [String]) throws(Failure) -> Bool
}

extension NameTable {
    mutating func isHeldByPlanningItem(_ key: String, path: [String]) throws(Failure) -> Bool { false }
}

/// The names in memory: what a ``NameReserver`` holds.
struct MemoryNameTable: NameTable, Sendable {
    typealias Failure = Never
    private var names: [String: TakenName] = [:]

    func lookup(_ key: String) -> TakenName? { names[key] }

    mutating func take(_ key: String, directory: String?) {
        names[key] = TakenName(directory: directory)
    }
}
