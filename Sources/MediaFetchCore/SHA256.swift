import CCrypto
import Foundation

/// SHA-256 through OpenSSL's libcrypto, fed in pieces so that a file is never read whole.
public struct SHA256: ~Copyable {
    private let context: OpaquePointer

    /// libcrypto's SHA-256, looked up once: `EVP_sha256()` in each set-up made OpenSSL 3 look the algorithm up
    /// in its provider tables again, a third of the cost of digesting a short text. Immutable once fetched, so
    /// shared by every thread; `EVP_sha256()` if the fetch fails.
    private nonisolated(unsafe) static let algorithm: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil) ?? EVP_sha256()

    public init() {
        // EVP_MD_CTX_new only fails when memory is exhausted; there is nothing sensible to do then.
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, Self.algorithm, nil) == 1 else {
            fatalError("OpenSSL could not set up a SHA-256 context")
        }
        self.context = context
    }

    deinit {
        EVP_MD_CTX_free(context)
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        EVP_DigestUpdate(context, base, bytes.count)
    }

    /// The digest as 64 lowercase hex digits.
    public consuming func finalize() -> String {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(EVP_MAX_MD_SIZE)) { digest in
            var length: UInt32 = 0
            EVP_DigestFinal_ex(context, digest.baseAddress, &length)
            return Self.hexDigits(UnsafeBufferPointer(rebasing: digest.prefix(Int(length))))
        }
    }

    /// Calls `body` with the 32 bytes of the digest of `bytes`, made in one call with nothing allocated: for
    /// short texts (an owner mark's), where a context's set-up and teardown cost more than the hashing.
    package static func withDigest<Result>(
        of bytes: UnsafeRawBufferPointer, _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: Int(EVP_MAX_MD_SIZE)) { digest in
            var length: UInt32 = 0
            // EVP_Digest reads nothing from a null pointer with a count of 0, which an empty buffer may carry.
            guard EVP_Digest(bytes.baseAddress, bytes.count, digest.baseAddress, &length, algorithm, nil) == 1 else {
                fatalError("OpenSSL could not make a SHA-256 digest")
            }
            return body(UnsafeBufferPointer(rebasing: digest.prefix(Int(length))))
        }
    }

    /// `bytes` as lowercase hex, two digits a byte, from a table: `String(format: "%02x")` a byte went through
    /// CoreFoundation's formatter, 32 strings a digest, about a tenth of a small file's run.
    package static func hexDigits(_ bytes: some Collection<UInt8>) -> String {
        if let text = bytes.withContiguousStorageIfAvailable({ hexDigits($0) }) { return text }
        return hexDigits(Array(bytes))
    }

    /// `bytes` as lowercase hex. Not generic, so that a caller in another module does not take each byte through
    /// the generic collection's witnesses (31,000 instructions for 16 bytes, in callgrind counts).
    package static func hexDigits(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { text in
            let digits: StaticString = "0123456789abcdef"
            let table = UnsafeRawBufferPointer(start: digits.utf8Start, count: 16)
            var index = 0
            for byte in bytes {
                text[index] = table[Int(byte >> 4)]
                text[index + 1] = table[Int(byte & 0x0F)]
                index += 2
            }
            return index
        }
    }

    /// The digest of `data`.
    public static func hex(of data: some DataProtocol) -> String {
        // Contiguous bytes (a small body kept in memory, a text) in one call, without a context.
        if let digest = data.withContiguousStorageIfAvailable({ withDigest(of: UnsafeRawBufferPointer($0), hexDigits) }) {
            return digest
        }
        var hasher = SHA256()
        for region in data.regions { region.withUnsafeBytes { hasher.update($0) } }
        return hasher.finalize()
    }
}
