import Synchronization

/// A sink's ``NameReserver``, shared and lockable, whose names the pipeline keeps in the run's ``Ledger``
/// instead of in memory: a run of a million items then holds no name per item.
///
/// The numbering is ``NameReserver``'s, call for call (names compared by ``SafeName/collationKey(_:)``, a
/// directory's first spelling wins, a clash becomes `Title (2).m4a`), whether the names are in memory or in the
/// ledger. A sink makes one, takes its names with ``reserve(_:)`` from ``Sink/plan(_:asset:)``, and hands it to the
/// pipeline as ``Sink/pathReserver``; the pipeline calls ``keep(in:)`` before the first plan. A sink used without
/// the pipeline (or a run without a ledger) keeps its names in memory.
///
/// Every run plans its names afresh, in plan order. Kept in a ledger, the names of files earlier runs stored are
/// taken as well (``RunLedger/storedName(_:except:)``): an item planned while ``planning`` is its key gets its own
/// stored name back, and every other item is numbered around it, so a source that gives the same items in another
/// order (a catalog's ranking changes) neither hands a stored file's name to another item nor fetches it again.
public final class PathReserver: Sendable {
    /// The item (and asset) whose path is being planned, set by the pipeline around ``Sink/plan(_:asset:)``: a name
    /// its own stored file has is free for it, and only for it.
    @TaskLocal public static var planning: LedgerKey?

    /// The UTF-8 budget of one component.
    public let maxBytes: Int
    /// Paths taken before any item's, in this order (a collection's manifest and playlist).
    public let reservedPaths: [[String]]

    private enum Storage {
        case memory(MemoryNameTable)
        case ledger(LedgerNameTable)
    }

    private let storage: Mutex<Storage>

    /// A reserver holding `reservedPaths` (each a path's components) before anything else, in memory until
    /// ``keep(in:)``.
    public init(maxBytes: Int = SafeName.maxComponentBytes, reserving reservedPaths: [[String]] = []) {
        self.maxBytes = maxBytes
        self.reservedPaths = reservedPaths
        var table = MemoryNameTable()
        for path in reservedPaths { _ = NameReserver.reserve(path, in: &table, maxBytes: maxBytes) }
        storage = Mutex(.memory(table))
    }

    /// A reserver in which a collection's own files are taken at the root
    /// (``NameReserver/reservingCollectionFiles(maxBytes:)``).
    public static func reservingCollectionFiles(maxBytes: Int = SafeName.maxComponentBytes) -> PathReserver {
        PathReserver(
            maxBytes: maxBytes, reserving: [[CollectionOptions.manifestName], [CollectionOptions.playlistName]])
    }

    /// From now on the names live in `ledger`'s run keys (``Ledger/takeRunKey(scope:key:value:)``), which the
    /// starting run has emptied (``Ledger/resetRunKeys()``): the ``reservedPaths`` are taken there again, and names
    /// taken in memory before are forgotten.
    /// - Throws: ``LedgerError`` when the ledger cannot be read.
    public func keep(in ledger: any RunLedger) throws {
        var table = LedgerNameTable(ledger: ledger)
        for path in reservedPaths { _ = try NameReserver.reserve(path, in: &table, maxBytes: maxBytes) }
        storage.withLock { $0 = .ledger(table) }
    }

    /// Reserves a unique path for `components` (each already safe, the last one the file name), as
    /// ``NameReserver/reserve(_:)`` does; the same number of components comes back.
    /// - Throws: ``LedgerError`` when the names are in a ledger that cannot be read.
    public func reserve(_ components: [String]) throws -> [String] {
        try reserve(components, occupied: nil)
    }

    /// ``reserve(_:)`` that also numbers around what is already where a file would go: `occupied` is asked about
    /// each file path no item of this run took (its components, spelled as they will be stored), and answers
    /// true when something that is not the planned item's own is there (a file a person put there, another
    /// item's file from a run whose ledger is gone). Such a path is skipped like a taken one, unless the ledger
    /// says the item being planned (``planning``) stored it. Nothing on disk is then ever replaced by another
    /// item's file. A sink that writes files uses this when its folder held files before the run.
    /// - Throws: ``LedgerError`` when the names are in a ledger that cannot be read.
    public func reserve(_ components: [String], occupied: (_ path: [String]) -> Bool) throws -> [String] {
        try withoutActuallyEscaping(occupied) { occupied in try reserve(components, occupied: Optional(occupied)) }
    }

    private func reserve(_ components: [String], occupied: ((_ path: [String]) -> Bool)?) throws -> [String] {
        try storage.withLock { storage in
            switch storage {
            case .memory(var table):
                // Out of the enum first, so that the names are not copied to be changed.
                storage = .memory(MemoryNameTable())
                defer { storage = .memory(table) }
                return NameReserver.reserve(components, in: &table, maxBytes: maxBytes, occupied: occupied)
            case .ledger(var table):
                return try NameReserver.reserve(components, in: &table, maxBytes: maxBytes, occupied: occupied)
            }
        }
    }
}

/// The names in a ledger's run keys, under ``scope``: a taken file's key has no value, a directory's has its
/// spelling.
struct LedgerNameTable: NameTable, Sendable {
    typealias Failure = any Error
    static let scope = "names"
    let ledger: any RunLedger
    /// The key the last lookup found to be the planned item's own stored file (SQLite's ledger says so).
    private var heldByPlanning: String?
    /// Where the planned item's stored row says its file is, read once a reservation (each works on its own copy
    /// of the table), when a name on disk is not known otherwise.
    private var plannedLocation: String??

    init(ledger: any RunLedger) {
        self.ledger = ledger
    }

    mutating func lookup(_ key: String) throws -> TakenName? {
        heldByPlanning = nil
        if let taken = try ledger.runKey(scope: Self.scope, key: key) { return TakenName(directory: taken) }
        let found: TakenName?
        if let sqlite = ledger as? Ledger {
            var held = false
            found = try sqlite.storedName(key, except: PathReserver.planning, heldByOwner: &held)
            if held { heldByPlanning = key }
        } else {
            found = try ledger.storedName(key, except: PathReserver.planning)
        }
        guard let stored = found else { return nil }
        // A stored file's directory is this run's from now on (later lookups find it among the run keys); a stored
        // file is not, since its own item may still come and must find it free.
        if let spelling = stored.directory { ledger.takeRunKey(scope: Self.scope, key: key, value: spelling) }
        return stored
    }

    func take(_ key: String, directory: String?) {
        ledger.takeRunKey(scope: Self.scope, key: key, value: directory)
    }

    /// Asked only of the key ``lookup(_:)`` has just found free for the planned item: no run key and no other item's
    /// file has it, and no stored file lies below it, so a stored file that holds it is the planned item's. SQLite's
    /// ledger said so in that lookup. Otherwise the item's own entry tells: a row stored before names were kept
    /// (schema 7), or a ledger that keeps none (PostgreSQL), still says where the item's file is.
    mutating func isHeldByPlanningItem(_ key: String, path: [String]) throws -> Bool {
        // By bytes, as run keys compare: `==` would take two spellings of one accented name for one key.
        if let held = heldByPlanning, held.hasSameUTF8Bytes(as: key) { return true }
        if plannedLocation == nil {
            let entry = try PathReserver.planning.flatMap { try ledger.committedEntry($0) }
            plannedLocation = .some(entry?.status == .stored ? entry?.location : nil)
        }
        guard let location = plannedLocation ?? nil else { return false }
        return location.hasSameUTF8Bytes(as: path.joined(separator: "/"))
    }
}
