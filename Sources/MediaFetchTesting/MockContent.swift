/// The bytes of one file the mock serves: either held in memory (small files tests add) or generated on demand
/// from a seed, so that a 512 MiB file costs nothing until a range of it is asked for.
///
/// Generated content is random access: the byte at any offset depends only on the seed and the offset, so a
/// resumed download can be checked without generating the prefix it skipped.
struct MockContent: Sendable {
    private enum Storage: Sendable {
        case bytes([UInt8])
        /// `prefix` (e.g. an `ftyp` box) first, then the seeded stream.
        case generated(seed: UInt64, prefix: [UInt8])
    }

    private let storage: Storage
    /// The file's size in bytes.
    let count: Int64

    init(bytes: [UInt8]) {
        storage = .bytes(bytes)
        count = Int64(bytes.count)
    }

    init(size: Int64, seed: UInt64, prefix: [UInt8] = []) {
        storage = .generated(seed: seed, prefix: prefix)
        count = max(0, size)
    }

    /// A strong validator derived from what the content is, so it is stable across runs and servers.
    var etag: String {
        switch storage {
        case .bytes(let bytes):
            "\"b\(hex(MockRandom.fnv1a(bytes)))-\(hex(UInt64(bytes.count)))\""
        case .generated(let seed, let prefix):
            "\"g\(hex(seed ^ MockRandom.fnv1a(prefix)))-\(hex(UInt64(count)))\""
        }
    }

    /// Copies the bytes starting at `offset` into `buffer`, as many as fit or as the content has.
    /// - Returns: how many bytes were copied.
    func fill(_ buffer: UnsafeMutableRawBufferPointer, from offset: Int64) -> Int {
        guard offset >= 0, offset < count else { return 0 }
        let wanted = Int(min(Int64(buffer.count), count - offset))
        switch storage {
        case .bytes(let bytes):
            bytes.withUnsafeBytes { source in
                let slice = UnsafeRawBufferPointer(rebasing: source[Int(offset)..<Int(offset) + wanted])
                buffer.copyMemory(from: slice)
            }
        case .generated(let seed, let prefix):
            var written = 0
            var position = offset
            // The prefix is tiny; copying it byte by byte keeps the stream arithmetic below simple.
            while written < wanted, position < Int64(prefix.count) {
                buffer[written] = prefix[Int(position)]
                written += 1
                position += 1
            }
            while written < wanted {
                let run = MockRandom.copyStream(
                    seed: seed,
                    offset: position,
                    into: UnsafeMutableRawBufferPointer(rebasing: buffer[written..<wanted])
                )
                written += run
                position += Int64(run)
            }
        }
        return wanted
    }

    /// The bytes in `range` (clamped to the content), for tests' expectations.
    func bytes(in range: Range<Int64>) -> [UInt8] {
        let lower = max(0, range.lowerBound)
        let upper = min(count, range.upperBound)
        guard lower < upper else { return [] }
        let length = Int(upper - lower)
        return [UInt8](unsafeUninitializedCapacity: length) { buffer, initialized in
            initialized = fill(UnsafeMutableRawBufferPointer(buffer), from: lower)
        }
    }

    private func hex(_ value: UInt64) -> String { String(value, radix: 16) }
}

/// Deterministic pseudo-random numbers and byte streams; nothing here may depend on time or on the platform.
enum MockRandom {
    /// SplitMix64's finaliser: a good 64-bit mix of `value`.
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// FNV-1a over bytes, for validators of in-memory files.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes {
            hash = (hash ^ UInt64(byte)) &* 0x100_0000_01B3
        }
        return hash
    }

    /// How many stream bytes come from one contiguous slice of the pool.
    static let blockSize = 64 << 10

    /// One MiB of SplitMix64 output plus one block of slack. Generated streams are slices of it, picked per
    /// (seed, block) by a hash: copying is memcpy-fast even in debug builds (a per-byte generator made a
    /// 512 MiB download CPU-bound in `swift test`), and any byte range can still be produced without its prefix.
    static let pool: [UInt8] = {
        let count = (1 << 20) + blockSize
        var state: UInt64 = 0x5EED_0F_C0FFEE
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var index = 0
            while index < count {
                state = mix(state)
                var word = state
                for _ in 0..<8 where index < count {
                    buffer[index] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                    index += 1
                }
            }
            initialized = count
        }
    }()

    /// Copies stream bytes for `seed` from stream position `offset` up to the end of that position's block.
    /// - Returns: how many bytes were copied (at least 1 when `buffer` is not empty).
    static func copyStream(seed: UInt64, offset: Int64, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        let block = UInt64(offset) / UInt64(blockSize)
        let within = Int(UInt64(offset) % UInt64(blockSize))
        let length = min(buffer.count, blockSize - within)
        let start = Int(mix(mix(seed) ^ block) % UInt64(pool.count - blockSize))
        pool.withUnsafeBytes { source in
            let slice = UnsafeRawBufferPointer(rebasing: source[(start + within)..<(start + within + length)])
            UnsafeMutableRawBufferPointer(rebasing: buffer[0..<length]).copyMemory(from: slice)
        }
        return length
    }
}
