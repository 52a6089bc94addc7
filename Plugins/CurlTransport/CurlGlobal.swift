import CCurl

/// libcurl's process-wide setup, done once before the first handle.
enum CurlGlobal {
    /// Swift runs a static initializer exactly once, thread-safely, which is what `curl_global_init` asks for.
    static let initialized: CURLcode = curl_global_init(Int(CURL_GLOBAL_DEFAULT))
}
