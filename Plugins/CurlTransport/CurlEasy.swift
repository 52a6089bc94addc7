import CCurl
import Foundation
import MediaFetchCore

/// Owns one libcurl easy handle and the buffer libcurl writes its error message into.
///
/// Every setter goes through ``check(_:_:)``, so a refused option becomes a ``TransportError`` naming the URL.
final class CurlEasy {
    /// The `CURL *`; never nil once `init` returned.
    let handle: UnsafeMutableRawPointer
    /// The URL the transfer is for: every error names it.
    private(set) var url: URL
    private let errorBuffer: UnsafeMutablePointer<CChar>
    /// Whether the handle pool has had it back before (it counts each handle once); used only under the pool's lock.
    var wasGivenBack = false
    /// Whether libcurl ended the handle's last transfer without an error, every byte of it delivered: set on the
    /// engine thread as the transfer ends, read and cleared as the handle is set up for the next (``CurlTransport``'s
    /// `makeEasy`). A transfer stopped while paused may leave bytes that libcurl holds for it in the handle.
    var lastTransferCompleted = false

    init(url: URL) throws(TransportError) {
        self.url = url
        let global = CurlGlobal.initialized
        guard global == CURLE_OK else {
            throw TransportError(.other, url: url, detail: "curl_global_init: " + Self.describe(global))
        }
        guard let handle = curl_easy_init() else {
            throw TransportError(.other, url: url, detail: "curl_easy_init failed")
        }
        self.handle = handle
        let size = Int(CURL_ERROR_SIZE)
        errorBuffer = .allocate(capacity: size)
        errorBuffer.initialize(repeating: 0, count: size)
        try check(mf_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "CURLOPT_ERRORBUFFER")
    }

    deinit {
        curl_easy_cleanup(handle)
        errorBuffer.deallocate()
        free(urlText)
    }

    /// Makes a finished handle new for `url` (`curl_easy_reset`: every option back to its default, the handle's
    /// allocations kept), so that a run of small files does not build and free a handle per file.
    func reuse(for url: URL) throws(TransportError) {
        curl_easy_reset(handle)
        self.url = url
        free(urlText)
        urlText = nil
        errorBuffer[0] = 0
        try check(mf_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer), "CURLOPT_ERRORBUFFER")
    }

    // MARK: Options

    func set(_ option: CURLoption, _ value: Int, _ name: String) throws(TransportError) {
        try check(mf_easy_setopt_long(handle, option, value), name)
    }

    /// `CURLOPT_BUFFERSIZE`, answering libcurl's code instead of throwing (a reused handle may refuse it).
    func set(bufferSize: Int) -> CURLcode {
        mf_easy_setopt_long(handle, CURLOPT_BUFFERSIZE, bufferSize)
    }

    func set(_ option: CURLoption, _ value: Bool, _ name: String) throws(TransportError) {
        try check(mf_easy_setopt_long(handle, option, value ? 1 : 0), name)
    }

    func set(_ option: CURLoption, offset value: Int64, _ name: String) throws(TransportError) {
        try check(mf_easy_setopt_off_t(handle, option, curl_off_t(value)), name)
    }

    /// libcurl copies string options, so the Swift string need not outlive the call.
    func set(_ option: CURLoption, _ value: String, _ name: String) throws(TransportError) {
        try check(value.withCString { mf_easy_setopt_string(handle, option, $0) }, name)
    }

    /// The pointer must stay valid until the handle is done with it.
    func set(_ option: CURLoption, pointer value: UnsafeMutableRawPointer?, _ name: String) throws(TransportError) {
        try check(mf_easy_setopt_pointer(handle, option, value), name)
    }

    func setWriteFunction(_ callback: curl_write_callback) throws(TransportError) {
        try check(mf_easy_setopt_write_function(handle, callback), "CURLOPT_WRITEFUNCTION")
    }

    /// Lets a transfer paused by its write callback go on; libcurl may call the callback again before this
    /// returns. A code other than `CURLE_OK` means the transfer cannot go on.
    func unpause() -> CURLcode {
        curl_easy_pause(handle, CURLPAUSE_CONT)
    }

    func setReadFunction(_ callback: curl_read_callback) throws(TransportError) {
        try check(mf_easy_setopt_read_function(handle, callback), "CURLOPT_READFUNCTION")
    }

    func setHeaderFunction(_ callback: curl_write_callback) throws(TransportError) {
        try check(mf_easy_setopt_header_function(handle, callback), "CURLOPT_HEADERFUNCTION")
    }

    // MARK: Information

    /// The last response's status (after redirects), or 0 when none came.
    var responseCode: Int {
        var value = 0
        return mf_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &value) == CURLE_OK ? value : 0
    }

    /// The body length the last response announced, or nil when it did not say.
    var contentLength: Int64? {
        var value: curl_off_t = -1
        guard mf_easy_getinfo_off_t(handle, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &value) == CURLE_OK, value >= 0 else {
            return nil
        }
        return Int64(value)
    }

    /// Connections the transfer opened so far (0: it went over one an earlier transfer left open); 1 when libcurl
    /// cannot say, so that a failed look never passes for a kept connection.
    var newConnections: Int {
        var value = 0
        return mf_easy_getinfo_long(handle, CURLINFO_NUM_CONNECTS, &value) == CURLE_OK ? value : 1
    }

    /// Where the transfer ended up after redirects.
    var effectiveURL: URL? {
        var value: UnsafeMutablePointer<CChar>?
        guard mf_easy_getinfo_string(handle, CURLINFO_EFFECTIVE_URL, &value) == CURLE_OK, let value else {
            return nil
        }
        // Without a redirect it is the URL that was set: compared on bytes, not parsed again (a URL parse cost
        // a few microseconds, three times a download).
        if let urlText, strcmp(value, urlText) == 0 { return url }
        return URL(string: String(cString: value))
    }

    /// The server ``url`` names, as ``TransferRamps/originKey(_:)`` keys it (read on the text ``setURL()`` set).
    var originKey: Int {
        guard let urlText else { return 0 }
        let length = strlen(urlText)
        return urlText.withMemoryRebound(to: UInt8.self, capacity: length) {
            TransferRamps.originKey(UnsafeBufferPointer(start: $0, count: length))
        }
    }

    /// The text ``set(url:)`` gave libcurl, while the handle is set to ``url``.
    private var urlText: UnsafeMutablePointer<CChar>?

    /// Sets `CURLOPT_URL` to ``url`` (libcurl copies the text; a copy is kept here for ``effectiveURL``).
    func setURL() throws(TransportError) {
        free(urlText)
        urlText = strdup(url.absoluteString)
        try check(mf_easy_setopt_string(handle, CURLOPT_URL, urlText), "CURLOPT_URL")
    }

    /// The redirect libcurl would have followed next, when it stopped following.
    var redirectURL: URL? {
        var value: UnsafeMutablePointer<CChar>?
        guard mf_easy_getinfo_string(handle, CURLINFO_REDIRECT_URL, &value) == CURLE_OK, let value else {
            return nil
        }
        return URL(string: String(cString: value))
    }

    // MARK: Errors

    /// libcurl's words for the last failure: the error buffer when it wrote one, else the code's generic text.
    func message(for code: CURLcode) -> String {
        let text = String(cString: errorBuffer)
        return text.isEmpty ? Self.describe(code) : text
    }

    /// The one place an easy-handle return code is checked.
    func check(_ code: CURLcode, _ what: String) throws(TransportError) {
        guard code != CURLE_OK else { return }
        throw TransportError(curl: code, url: url, detail: "\(what): \(message(for: code))")
    }

    static func describe(_ code: CURLcode) -> String {
        String(cString: curl_easy_strerror(code))
    }
}
