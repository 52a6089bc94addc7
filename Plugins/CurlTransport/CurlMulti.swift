import CCurl
import Foundation
import MediaFetchCore

/// Owns the one libcurl multi handle of a transport: its connection cache is what lets transfers reuse
/// connections, and its limits cap connections per host and in all.
///
/// `@unchecked Sendable`: only the engine's thread calls into it, except ``wakeup()``, which libcurl documents
/// as safe to call from any thread; the engine makes that call and ``closeConnections()`` under one lock of its
/// own, so a wakeup never meets a handle being replaced.
final class CurlMulti: @unchecked Sendable {
    private var handle: UnsafeMutableRawPointer
    private var limits: (connections: Int, perHost: Int)

    init(maxConnections: Int, maxPerHost: Int) throws(TransportError) {
        let global = CurlGlobal.initialized
        guard global == CURLE_OK else {
            throw TransportError(.other, url: nil, detail: "curl_global_init: " + CurlEasy.describe(global))
        }
        handle = try Self.makeHandle()
        limits = (maxConnections, maxPerHost)
        try setUp()
    }

    deinit {
        curl_multi_cleanup(handle)
    }

    private static func makeHandle() throws(TransportError) -> UnsafeMutableRawPointer {
        guard let handle = curl_multi_init() else {
            throw TransportError(.other, url: nil, detail: "curl_multi_init failed")
        }
        return handle
    }

    private func setUp() throws(TransportError) {
        try setLimits(connections: limits.connections, perHost: limits.perHost)
        // Several transfers share one HTTP/2 connection when the server offers it.
        try check(mf_multi_setopt_long(handle, CURLMOPT_PIPELINING, CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING")
    }

    /// Caps connections in all and to one host (0: no cap). A lower cap holds new connections back at once;
    /// connections over it that are open already close as their transfers end (the cache keeps no more than the cap).
    /// A negative cap is refused: libcurl would take it without a word, as no cap at all.
    func setLimits(connections: Int, perHost: Int) throws(TransportError) {
        guard connections >= 0, perHost >= 0 else {
            throw TransportError(
                .other, url: nil,
                detail: "CURLMOPT_MAX_TOTAL_CONNECTIONS, CURLMOPT_MAX_HOST_CONNECTIONS: \(connections) and \(perHost)"
                    + " connections (a cap is 0, none, or more)")
        }
        limits = (connections, perHost)
        try check(
            mf_multi_setopt_long(handle, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections),
            "CURLMOPT_MAX_TOTAL_CONNECTIONS")
        try check(mf_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, perHost), "CURLMOPT_MAX_HOST_CONNECTIONS")
        // Keep every connection the limits allow, so that no transfer waits for a fresh handshake.
        try check(mf_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, connections), "CURLMOPT_MAXCONNECTS")
    }

    /// Closes every connection kept for reuse, by replacing the multi handle with a new one of the same limits.
    /// Only while no transfer is added, and under the lock that ``wakeup()``'s callers hold.
    func closeConnections() throws(TransportError) {
        let fresh = try Self.makeHandle()
        curl_multi_cleanup(handle)
        handle = fresh
        try setUp()
    }

    func add(_ easy: CurlEasy) throws(TransportError) {
        try check(curl_multi_add_handle(handle, easy.handle), "curl_multi_add_handle", url: easy.url)
    }

    func remove(_ easy: CurlEasy) throws(TransportError) {
        try check(curl_multi_remove_handle(handle, easy.handle), "curl_multi_remove_handle", url: easy.url)
    }

    /// Moves every transfer along as far as it goes without waiting.
    func perform() throws(TransportError) {
        var running: Int32 = 0
        try check(curl_multi_perform(handle, &running), "curl_multi_perform")
    }

    /// Waits for socket activity, libcurl's next timeout, a ``wakeup()`` or `milliseconds`, whichever comes first.
    func poll(milliseconds: Int32) throws(TransportError) {
        try check(curl_multi_poll(handle, nil, 0, milliseconds, nil), "curl_multi_poll")
    }

    /// Ends a ``poll(milliseconds:)`` early; the only call made from other threads.
    func wakeup() {
        _ = curl_multi_wakeup(handle)
    }

    /// The finished transfers since the last call: each easy handle with its result.
    func finished() -> [(handle: UnsafeMutableRawPointer, result: CURLcode)] {
        var done: [(handle: UnsafeMutableRawPointer, result: CURLcode)] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                done.append((easy, mf_msg_result(message)))
            }
        }
        return done
    }

    /// The one place a multi-handle return code is checked.
    private func check(_ code: CURLMcode, _ what: String, url: URL? = nil) throws(TransportError) {
        guard code != CURLM_OK else { return }
        throw TransportError(.other, url: url, detail: "\(what): " + String(cString: curl_multi_strerror(code)))
    }
}
