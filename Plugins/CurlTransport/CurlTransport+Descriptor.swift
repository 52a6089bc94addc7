import MediaFetchCore

extension CurlTransport {
    /// `use: curl`.
    public static let descriptor = TransportDescriptor(
        info: PluginInfo(
            kind: .transport,
            name: "curl",
            summary: "HTTP through libcurl: two engine threads for all transfers (not one per transfer), shared "
                + "connections, HTTP/2 over https, each download written straight to disk",
            options: [
                OptionSpec(
                    "concurrency", .integer(1...256), default: .integer(16),
                    doc: "Downloads at once, and connections in all. Until a connection to a server is seen to serve "
                        + "a second download, at most 4 requests to that server wait for their first answer at once, so "
                        + "that a server with a short listen queue (Python's http.server has 5) drops no connection."),
                OptionSpec(
                    "per-host", .integer(1...256), defaultText: "concurrency",
                    doc: "Connections to one host at most."),
                OptionSpec(
                    "timeout", .duration, default: .duration(.seconds(300)),
                    doc: "The most one transfer may take in all."),
                OptionSpec(
                    "connect-timeout", .duration, default: .duration(.seconds(30)),
                    doc: "The most connecting (TCP and TLS) may take."),
                OptionSpec(
                    "low-speed-limit", .integer(0...(1 << 40)), default: .integer(1),
                    doc: "Bytes a second below which a transfer counts as stalled; 0 never stalls."),
                OptionSpec(
                    "low-speed-time", .duration, default: .duration(.seconds(30)),
                    doc: "How long a transfer may stay below low-speed-limit before it is stopped as timed out."),
                OptionSpec(
                    "max-rate", .byteSize,
                    doc: "Bandwidth for all downloads together, in bytes a second (e.g. 5MB), held to within a "
                        + "tenth of a second's worth (at least 32 KiB): a download that is ahead pauses, and paused "
                        + "downloads take turns. Unlimited when left out, or none."),
                OptionSpec(
                    "max-redirects", .integer(0...50), default: .integer(10),
                    doc: "Redirects followed at most; only to http and https."),
                OptionSpec("headers", .stringMap, doc: "Extra request headers, sent with every request."),
                OptionSpec(
                    "user-agent", .string, default: .string(defaultUserAgent),
                    doc: "The User-Agent header; an honest one is the polite default."),
                OptionSpec(
                    "proxy", .string,
                    doc: "A proxy URL (http://host:port, socks5h://host:port); left out, connections are direct "
                        + "and proxy environment variables are not read."),
                OptionSpec(
                    "ca-file", .path,
                    doc: "A PEM file of extra certificate authorities to trust besides the system's. "
                        + "TLS verification cannot be turned off."),
                OptionSpec("http2", .bool, default: .bool(true), doc: "Use HTTP/2 when an https server offers it."),
                OptionSpec(
                    "threads", .integer(1...16), default: .integer(2),
                    doc: "Engine threads moving bytes, each with its own connections and its share of "
                        + "concurrency and per-host; at most concurrency and per-host. One thread is what limits curl -Z on a "
                        + "fast link; 1 keeps every connection in one pool. While the last bodies were small (under 64 KiB "
                        + "on average) and per-host is the whole concurrency, the first thread takes every transfer and the "
                        + "whole limits: for small files a second thread only adds thread switches."),
            ]
        ),
        make: { options, _ in
            let concurrency = options.integer("concurrency") ?? 16
            let timeout = options.duration("timeout") ?? .seconds(300)
            let connectTimeout = options.duration("connect-timeout") ?? .seconds(30)
            let lowSpeedTime = options.duration("low-speed-time") ?? .seconds(30)
            guard timeout > .zero else { throw options.error("timeout", "the timeout must be above zero") }
            guard connectTimeout > .zero else {
                throw options.error("connect-timeout", "the connect timeout must be above zero")
            }
            guard lowSpeedTime > .zero else {
                throw options.error("low-speed-time", "the low-speed time must be above zero")
            }
            if let rate = options.integer("max-rate"), rate <= 0 {
                throw options.error(
                    "max-rate", "the rate must be above zero; leave the key out, or write none, for no limit")
            }
            let proxy = options.string("proxy")
            if let proxy, proxy.isEmpty {
                throw options.error("proxy", "the proxy is empty; leave the key out to connect directly")
            }
            return try CurlTransport(
                Configuration(
                    concurrency: concurrency,
                    perHost: options.integer("per-host") ?? concurrency,
                    timeout: timeout,
                    connectTimeout: connectTimeout,
                    lowSpeedLimit: options.integer("low-speed-limit") ?? 1,
                    lowSpeedTime: lowSpeedTime,
                    maxRedirects: options.integer("max-redirects") ?? 10,
                    headers: HTTPHeaders((options.map("headers") ?? []).map { ($0.key, $0.value) }),
                    userAgent: options.string("user-agent") ?? defaultUserAgent,
                    proxy: proxy,
                    caFile: options.path("ca-file"),
                    http2: options.bool("http2") ?? true,
                    maxRate: options.integer("max-rate").map(Int64.init),
                    threads: options.integer("threads") ?? 2
                ))
        }
    )
}
