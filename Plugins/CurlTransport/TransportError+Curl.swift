import CCurl
import Foundation
import MediaFetchCore

extension TransportError {
    /// Turns a libcurl result into the transport's error: the one mapping from `CURLcode` to ``Code``.
    /// - Parameters:
    ///   - redirect: the redirect target libcurl refused, when it refused one, so the error names that scheme.
    ///   - maxRedirects: the limit that was exceeded, for ``Code/tooManyRedirects(_:)``.
    init(curl code: CURLcode, url: URL?, detail: String, redirect: URL? = nil, maxRedirects: Int = 0) {
        let mapped: Code
        var named = url
        switch code {
        case CURLE_UNSUPPORTED_PROTOCOL:
            named = redirect ?? url
            mapped = .unsupportedScheme(named?.scheme ?? "unknown")
        case CURLE_URL_MALFORMAT:
            mapped = .invalidURL
        case CURLE_TOO_MANY_REDIRECTS:
            mapped = .tooManyRedirects(maxRedirects)
        case CURLE_OPERATION_TIMEDOUT:
            mapped = .timedOut
        case CURLE_COULDNT_CONNECT, CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY, CURLE_SEND_ERROR,
            CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION,
            CURLE_SSL_CACERT_BADFILE, CURLE_HTTP2, CURLE_HTTP2_STREAM, CURLE_PROXY:
            mapped = .connectionFailed
        case CURLE_FILESIZE_EXCEEDED:
            mapped = .bodyTooLarge(limit: 0)
        case CURLE_WRITE_ERROR:
            mapped = .fileError
        case CURLE_ABORTED_BY_CALLBACK:
            mapped = .cancelled
        default:
            mapped = .other
        }
        self.init(mapped, url: named, detail: detail)
    }
}
