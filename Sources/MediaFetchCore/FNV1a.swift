/// FNV-1a, 64 bits: a hash that is the same in every run and on every platform, unlike `hashValue`. Staging names
/// carry it (a later run resumes from them, so it must never change) and the ledger's key filter builds on it.
enum FNV1a {
    static let basis: UInt64 = 0xcbf2_9ce4_8422_2325
    static let prime: UInt64 = 0x100_0000_01b3

    /// `hash` with each byte of `text` folded in.
    static func fold(_ text: String, into hash: UInt64 = basis) -> UInt64 {
        text.withUTF8Bytes { bytes in
            var hash = hash
            for byte in bytes { hash = (hash ^ UInt64(byte)) &* prime }
            return hash
        }
    }
}
