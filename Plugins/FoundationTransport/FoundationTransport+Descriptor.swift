import MediaFetchCore

extension FoundationTransport {
    /// `use: foundation`.
    public static let descriptor = TransportDescriptor(
        info: PluginInfo(
            kind: .transport,
            name: "foundation",
            summary:
                "HTTP through one URLSession (FoundationNetworking), streaming each download to disk; "
                + "uploads of at most 8 MiB, sent from memory",
            options: [
                OptionSpec("concurrency", .integer(1...256), default: .integer(8), doc: "Downloads at once."),
                OptionSpec(
                    "timeout", .duration, default: .duration(.seconds(300)),
                    doc: "The most one transfer may take in all."),
                OptionSpec(
                    "idle-timeout", .duration, default: .duration(.seconds(30)),
                    doc: "The most a transfer may wait for its next bytes."),
                OptionSpec("headers", .stringMap, doc: "Extra request headers, sent with every request."),
                OptionSpec(
                    "user-agent", .string, default: .string(defaultUserAgent),
                    doc: "The User-Agent header; an honest one is the polite default."),
                OptionSpec(
                    "max-redirects", .integer(0...50), default: .integer(10),
                    doc: "Redirects followed at most; only to http and https."),
            ]
        ),
        make: { options, _ in
            let timeout = options.duration("timeout") ?? .seconds(300)
            let idle = options.duration("idle-timeout") ?? .seconds(30)
            guard timeout > .zero else { throw options.error("timeout", "the timeout must be above zero") }
            // FoundationNetworking counts this timeout in whole seconds: 500ms would become 0, an instant timeout.
            guard idle >= .seconds(1) else {
                throw options.error("idle-timeout", "FoundationNetworking counts whole seconds: use 1s or more")
            }
            return FoundationTransport(
                Configuration(
                    concurrency: options.integer("concurrency") ?? 8,
                    timeout: timeout,
                    idleTimeout: idle,
                    headers: HTTPHeaders((options.map("headers") ?? []).map { ($0.key, $0.value) }),
                    userAgent: options.string("user-agent") ?? defaultUserAgent,
                    maxRedirects: options.integer("max-redirects") ?? 10
                ))
        }
    )
}
