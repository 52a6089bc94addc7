import Dispatch
import Foundation
import MediaFetchCore
import Testing

/// SHA-256 against FIPS 180-2's answers, by each way in: one call over contiguous bytes, bytes in several regions,
/// and a hasher fed in pieces.
@Suite struct SHA256Tests {
    static let answers: [(text: String, digest: String)] = [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        ),
    ]

    @Test func contiguousBytesGiveTheStandardsAnswers() {
        for (text, digest) in Self.answers {
            #expect(SHA256.hex(of: Data(text.utf8)) == digest, "\(text)")
            #expect(SHA256.hex(of: Array(text.utf8)) == digest, "\(text)")
        }
    }

    @Test func bytesInSeveralRegionsGiveTheSameAnswers() {
        for (text, digest) in Self.answers {
            let bytes = Array(text.utf8)
            var parts = DispatchData.empty
            for piece in [bytes.prefix(bytes.count / 3), bytes.dropFirst(bytes.count / 3)] {
                piece.withUnsafeBytes { parts.append($0) }
            }
            if bytes.count >= 3 { #expect(parts.regions.count == 2, "\(text): not in two regions") }
            #expect(SHA256.hex(of: parts) == digest, "\(text)")
        }
    }

    @Test func aHasherFedInPiecesGivesTheAnswerForAMillionAs() {
        var hasher = SHA256()
        let piece = [UInt8](repeating: UInt8(ascii: "a"), count: 1000)
        for _ in 0..<1000 { piece.withUnsafeBytes { hasher.update($0) } }
        #expect(hasher.finalize() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }
}
