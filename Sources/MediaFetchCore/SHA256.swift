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
        return Self.hexDigits(digest.prefix(Int(length)))
    }

    /// `bytes` as lowercase hex, two digits a byte, from a table: `String(format: "%02x")` a byte went through
    /// CoreFoundation's formatter, 32 strings a digest, about a tenth of a small file's run.
    package static func hexDigits(_ bytes: some Collection<UInt8>) -> String {
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
        var hasher = SHA256()
        for region in data.regions { region.withUnsafeBytes { hasher.update($0) } }
        return hasher.finalize()
    }
}
