/// Keys a ledger has written since a moment, as a Bloom filter of fixed size: a key it does not hold was
/// certainly not written since, and where nothing was there before, its lookup needs no query. Nothing per item
/// stays in memory (the filter is 2 MiB whatever the count), and a key it may hold is looked up as before, so an
/// answer never changes.
///
/// ``Ledger`` keeps two: the run keys taken since their reset, and the entries that may be on disk.
/// Per item a run looks up three keys that a first run never finds: its entry (what an earlier run left), its id
/// (for duplicates) and its planned name (for collision numbering). Each lookup took the connection's lock (and
/// waited whenever a batch was being committed) and ran a query. The three bits of a key are in one word (a
/// blocked filter): with three keys an item, a million items leave a few lookups in a hundred to SQLite.
struct KeyFilter: ~Copyable {
    /// 2^24 bits.
    private static let wordCount = 1 << 18

    private var words: [UInt64] = []

    /// Whether the filter holds every key inserted since its reset (before which the table may hold keys this
    /// process never saw); an incomplete filter answers every lookup with "may contain".
    var isComplete: Bool { !words.isEmpty }

    /// Empties the filter and makes it complete: its table was just emptied, or every key inserted from now on is
    /// every key the table will get.
    mutating func reset() {
        if words.isEmpty {
            words = [UInt64](repeating: 0, count: Self.wordCount)
        } else {
            for index in words.indices { words[index] = 0 }
        }
    }

    /// False when `key` was certainly not inserted (its ``hash(_:)``) since the reset.
    func mayContain(_ key: LedgerKey) -> Bool {
        mayContain(hash: Self.hash(key))
    }

    /// Inserts a key by its hash (``hash(scope:key:)`` or ``hash(_:)``), which the caller may take before it takes a
    /// lock.
    mutating func insert(hash: UInt64) {
        guard isComplete else { return }
        let (word, bits) = Self.place(hash)
        words[word] |= bits
    }

    /// False when the key of `hash` (``hash(scope:key:)`` or ``hash(_:)``) was certainly not inserted since the reset.
    func mayContain(hash: UInt64) -> Bool {
        guard isComplete else { return true }
        let (word, bits) = Self.place(hash)
        return words[word] & bits == bits
    }

    /// A key's word and its three bits in it: one cache line a key (three lines, one a probe, were a third of the
    /// filter's cost, in misses).
    private static func place(_ hash: UInt64) -> (word: Int, bits: UInt64) {
        let word = Int(truncatingIfNeeded: hash >> 40) & (wordCount - 1)
        let bits: UInt64 = (1 << (hash & 63)) | (1 << ((hash >> 6) & 63)) | (1 << ((hash >> 12) & 63))
        return (word, bits)
    }

    /// FNV-1a of the scope, a zero byte and the key, then mixed (the low bits pick the first bit).
    static func hash(scope: String, key: String) -> UInt64 {
        mix(FNV1a.fold(key, into: FNV1a.fold(scope) &* FNV1a.prime))
    }

    /// The same over a ledger key: its source, a zero byte, its item id, a zero byte, and its asset.
    static func hash(_ key: LedgerKey) -> UInt64 {
        let source = FNV1a.fold(key.source) &* FNV1a.prime
        return mix(FNV1a.fold(key.asset.rawValue, into: FNV1a.fold(key.itemID, into: source) &* FNV1a.prime))
    }

    /// splitmix64's finalizer: every output bit depends on every input bit.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9e37_79b9_7f4a_7c15
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
