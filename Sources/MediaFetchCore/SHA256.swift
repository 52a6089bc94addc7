import CCrypto
import Foundation

/// SHA-256 through OpenSSL's libcrypto, fed in pieces so that a file is never read whole.
public struct SHA256: ~Copyable {
    private let context: OpaquePointer

    public init() {
        // EVP_MD_CTX_new only fails when memory is exhausted; there is nothing sensible to do then.
        guard let context = EVP_MD_CTX_new(), EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
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
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        EVP_DigestFinal_ex(context, &digest, &length)
        // Digit by digit: `String(format:)` a byte went through CoreFoundation's formatter, 32 strings a digest.
        let count = Int(length)
        return String(unsafeUninitializedCapacity: count * 2) { text in
            let digits: StaticString = "0123456789abcdef"
            let table = UnsafeRawBufferPointer(start: digits.utf8Start, count: 16)
            for index in 0..<count {
                text[2 * index] = table[Int(digest[index] >> 4)]
                text[2 * index + 1] = table[Int(digest[index] & 0x0F)]
            }
            return count * 2
        }
    }

    /// The digest of `data`.
    public static func hex(of data: some DataProtocol) -> String {
        var hasher = SHA256()
        for region in data.regions { region.withUnsafeBytes { hasher.update($0) } }
        return hasher.finalize()
    }
}
