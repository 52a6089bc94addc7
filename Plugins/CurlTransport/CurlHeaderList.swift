import CCurl
import Foundation
import MediaFetchCore

/// Owns a `curl_slist` of request header lines; it must live until the transfer that uses it is done.
///
/// `@unchecked Sendable`: the list is built in `init` and never changed after; libcurl only reads it, so transfers
/// on several engine threads may share one (``CurlTransport``'s list for plain downloads).
final class CurlHeaderList: @unchecked Sendable {
    let pointer: UnsafeMutablePointer<curl_slist>?

    /// Builds `Name: value` lines; an empty value is sent as `Name;`, which is how libcurl spells that.
    /// - Parameter removing: headers libcurl would add itself that must not be sent (`Name:` tells it so).
    init(_ headers: HTTPHeaders, url: URL, removing: [String] = []) throws(TransportError) {
        var pointer: UnsafeMutablePointer<curl_slist>?
        // A list given up half-built is freed here; a whole one belongs to this object.
        var built = false
        defer { if !built { curl_slist_free_all(pointer) } }
        for name in removing {
            guard let next = curl_slist_append(pointer, name + ":") else {
                throw TransportError(.other, url: url, detail: "out of memory building the header list")
            }
            pointer = next
        }
        for (name, value) in headers {
            let line = value.isEmpty ? name + ";" : name + ": " + value
            // On bytes: Foundation's substring search (twice a line) cost more than libcurl's whole slist.
            guard !line.utf8.contains(where: { $0 == 0x0D || $0 == 0x0A }) else {
                throw TransportError(.other, url: url, detail: "header \(name) holds a line break")
            }
            guard let next = curl_slist_append(pointer, line) else {
                throw TransportError(.other, url: url, detail: "out of memory building the header list")
            }
            pointer = next
        }
        self.pointer = pointer
        built = true
    }

    deinit {
        curl_slist_free_all(pointer)
    }
}
