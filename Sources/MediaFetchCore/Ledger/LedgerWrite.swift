/// One write a run asks of its ledger, queued and committed in batches: the SQLite ledger's and the bundled
/// PostgreSQL ledger's alike (`package`: shared by this package's modules, not public API).
package enum LedgerWrite: Sendable {
    case begin(LedgerKey, title: String, url: String)
    case responded(LedgerKey, validator: Validator?, expected: Int64?)
    case verified(LedgerKey, size: Int64, sha256: String?)
    /// With the name the file took (``NameReserver/nameKey(of:)`` of its planned path) and that path, when the run
    /// planned one: a later run numbers other items around it (see ``RunLedger/storedName(_:except:)``).
    case stored(LedgerKey, StoredRecord, name: StoredPath?)
    case failed(LedgerKey, reason: String, received: Int64)
    case paused(LedgerKey, received: Int64)
    case retrying(LedgerKey)
    case runKey(scope: String, key: String, value: String?)

    /// The asset the write is about; nil for a run key.
    package var key: LedgerKey? {
        switch self {
        case .begin(let key, _, _), .responded(let key, _, _), .verified(let key, _, _), .stored(let key, _, _),
            .failed(let key, _, _), .paused(let key, _), .retrying(let key):
            key
        case .runKey: nil
        }
    }
}

/// The planned path of a stored file and its name's key (``NameReserver/nameKey(of:)``), as a ledger keeps them.
package struct StoredPath: Sendable {
    package var path: String
    package var key: String

    package init(path: String) {
        self.path = path
        // An ASCII path's key is the path lowercased after a `/` (each component's collation key is its lowercase),
        // made in one buffer: splitting and joining cost 7,000 instructions a stored file.
        let ascii = path.withUTF8Bytes { bytes -> String? in
            guard bytes.allSatisfy({ $0 < 0x80 }), bytes.first != UInt8(ascii: "/") else { return nil }
            var key: [UInt8] = [UInt8(ascii: "/")]
            key.reserveCapacity(bytes.count + 1)
            for byte in bytes { key.append(byte.asciiLowercased) }
            return String(decoding: key, as: UTF8.self)
        }
        key = ascii ?? NameReserver.nameKey(of: path.split(separator: "/").map(String.init))
    }
}
