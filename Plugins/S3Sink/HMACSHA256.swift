import CCrypto
import Foundation
import MediaFetchCore

/// HMAC-SHA256 and SHA-256 as raw bytes, through libcrypto: what Signature V4 chains its keys with.
enum HMACSHA256 {
    /// The 32-byte HMAC of `message` under `key`.
    static func authenticate(_ message: [UInt8], key: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let done = key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                HMAC(
                    EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                    messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count, &digest,
                    &length)
            }
        }
        // HMAC fails only without memory; a signature that cannot be computed is then refused by the server.
        return done == nil ? [] : Array(digest.prefix(Int(length)))
    }

    static func authenticate(_ message: String, key: [UInt8]) -> [UInt8] {
        authenticate(Array(message.utf8), key: key)
    }

    static func hex(_ bytes: [UInt8]) -> String { SHA256.hexDigits(bytes) }
}
