import Foundation

/// How the pipeline treats each download, whatever the transport: retries, size and type limits,
/// and a run-wide failure budget. The config's optional `download:` section.
public struct DownloadPolicy: Sendable, Hashable {
    /// Attempts after the first, for errors worth retrying.
    public var retries: Int
    /// The longest single wait between attempts, `Retry-After` included.
    public var retryMaxWait: Duration
    /// The longest an item may spend retrying in all.
    public var retryBudget: Duration
    /// The first backoff step; each retry waits a random time up to this doubled per attempt ("full jitter").
    public var retryBase: Duration
    /// A file larger than this is abandoned and nothing is stored; nil for no limit. ``defaultMaxSize`` unless
    /// the config says otherwise.
    public var maxSize: Int64?
    /// Content types a preview may have (`audio/*` matches any audio type); empty accepts any.
    public var previewTypes: [String]
    /// Content types artwork may have.
    public var artworkTypes: [String]
    /// The run stops starting new items after this many failures; 0 never stops.
    public var maxFailures: Int
    /// Whether each file's SHA-256 is computed (for the ledger) besides checking its length. Off by default:
    /// the catalog publishes no digest to check it against, and it costs a core-second per 1.5 GB.
    public var computesDigests: Bool

    public init(
        retries: Int = 3,
        retryMaxWait: Duration = .seconds(60),
        retryBudget: Duration = .seconds(300),
        retryBase: Duration = .milliseconds(500),
        maxSize: Int64? = DownloadPolicy.defaultMaxSize,
        previewTypes: [String] = DownloadPolicy.defaultPreviewTypes,
        artworkTypes: [String] = DownloadPolicy.defaultArtworkTypes,
        maxFailures: Int = 0,
        computesDigests: Bool = false
    ) {
        self.retries = retries
        self.retryMaxWait = retryMaxWait
        self.retryBudget = retryBudget
        self.retryBase = retryBase
        self.maxSize = maxSize
        self.previewTypes = previewTypes
        self.artworkTypes = artworkTypes
        self.maxFailures = maxFailures
        self.computesDigests = computesDigests
    }

    /// 50 MB: a preview is about 1 MB of audio or up to a few tens of MB of video, while a podcast's "preview"
    /// is the whole episode (about 58 MB an hour at 128 kbit/s), so a preview run never pulls hours of audio
    /// by surprise. `max-size: none` lifts it.
    public static let defaultMaxSize: Int64 = 50_000_000
    /// How ``defaultMaxSize`` is written in a config.
    public static let defaultMaxSizeText = "50MB"

    public static let defaultPreviewTypes = ["audio/*", "video/*", "application/octet-stream", "binary/octet-stream"]
    public static let defaultArtworkTypes = ["image/*", "application/octet-stream", "binary/octet-stream"]

    /// The section's keys, validated by the config loader like a plugin's.
    public static let options: [OptionSpec] = [
        OptionSpec(
            "retries", .integer(0...20), default: .integer(3),
            doc: "Attempts after the first for connection errors, timeouts, truncated bodies and HTTP 408, 429, "
                + "500, 502, 503, 504; a retry goes on from the bytes already received."),
        OptionSpec(
            "retry-max-wait", .duration, default: .duration(.seconds(60)),
            doc: "The longest wait between two attempts, a server's Retry-After included."),
        OptionSpec(
            "retry-budget", .duration, default: .duration(.seconds(300)),
            doc: "The longest one item may spend on retries in all."),
        OptionSpec(
            "max-size", .byteSize, default: .integer(Int(defaultMaxSize)), defaultText: defaultMaxSizeText,
            doc: "A file larger than this is abandoned before its body is fetched (when the server announces its "
                + "length) and nothing is stored. Previews are about 1 MB (video ones up to a few tens of MB); "
                + "a podcast episode's preview is the whole episode, hours of audio at times, which this stops. "
                + "none: no limit."),
        OptionSpec(
            "preview-types", .stringList, default: .list(defaultPreviewTypes),
            doc: "Content types a preview may be served as (`audio/*` matches any audio type); an HTML error "
                + "page served with 200 is not a preview. An empty list accepts anything."),
        OptionSpec(
            "artwork-types", .stringList, default: .list(defaultArtworkTypes),
            doc: "Content types artwork may be served as."),
        OptionSpec(
            "verify", .choice(["size", "sha256"]), default: .string("size"),
            doc: "How a finished download is checked: its length against what the server announced (and its "
                + "content type against preview-types). sha256 also records each file's SHA-256 in the ledger "
                + "(shown by status --json), for checking the files later; the catalog publishes no digest to "
                + "check against, and it costs about 1 s of CPU per 1.5 GB. A manifest gets digests either way."),
        OptionSpec(
            "max-failures", .integer(0...1_000_000), default: .integer(0),
            doc: "Stop starting new items once this many have failed, so a run going badly wrong ends early; "
                + "0 never stops."),
    ]

    /// The policy a validated `download:` section describes.
    public init(options: PluginOptions) {
        self.init(
            retries: options.integer("retries") ?? 3,
            retryMaxWait: options.duration("retry-max-wait") ?? .seconds(60),
            retryBudget: options.duration("retry-budget") ?? .seconds(300),
            maxSize: Self.maxSize(options),
            previewTypes: options.list("preview-types") ?? Self.defaultPreviewTypes,
            artworkTypes: options.list("artwork-types") ?? Self.defaultArtworkTypes,
            maxFailures: options.integer("max-failures") ?? 0,
            computesDigests: options.string("verify") == "sha256")
    }

    /// The section's `max-size`: the default when the key is absent (a spec built by hand has no defaults
    /// filled in), none when it says `none`.
    static func maxSize(_ options: PluginOptions) -> Int64? {
        guard options.values["max-size"] != nil else { return defaultMaxSize }
        return options.integer("max-size").map(Int64.init)
    }

    /// Whether a content type is one `asset` may have. A missing type is given the benefit of the doubt.
    public func accepts(contentType: String?, for asset: AssetKind) -> Bool {
        let patterns = asset == .preview ? previewTypes : artworkTypes
        guard !patterns.isEmpty, let contentType else { return true }
        // Compared on bytes, both sides lowercased: Character-level tests, and then a loop over `utf8` and a new
        // string per pattern per item, showed in profiles.
        return Self.mediaType(contentType).withUTF8Bytes { type in
            patterns.contains { written in
                written.withUTF8Bytes { pattern in
                    pattern.allSatisfy { $0 < 0x80 }
                        ? Self.matches(type, pattern: pattern)
                        : written.lowercased().withUTF8Bytes { Self.matches(type, pattern: $0) }
                }
            }
        }
    }

    /// Whether a lowercased media type matches a pattern: `type/*` any type it begins, else the type itself; the
    /// pattern's ASCII capitals count as lowercase.
    static func matches(_ type: UnsafeBufferPointer<UInt8>, pattern: UnsafeBufferPointer<UInt8>) -> Bool {
        var length = pattern.count
        let wildcard = length >= 2 && pattern[length - 1] == UInt8(ascii: "*") && pattern[length - 2] == UInt8(ascii: "/")
        if wildcard { length -= 1 }
        guard wildcard ? type.count >= length : type.count == length else { return false }
        for index in 0..<length where type[index] != pattern[index].asciiLowercased { return false }
        return true
    }

    /// The media type of a Content-Type value: the first non-empty field before a `;`, trimmed, lowercased.
    /// ASCII (every real header) is handled on bytes; Foundation's trimming showed in many-file profiles.
    static func mediaType(_ contentType: String) -> String {
        guard contentType.utf8.allSatisfy({ $0 < 0x80 }) else { return mediaTypeByFoundation(contentType) }
        let blank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        let bytes = contentType.utf8
        // The first non-empty field: `split` drops empty ones, as the Foundation version's does.
        var fieldStart = bytes.startIndex
        while fieldStart != bytes.endIndex, bytes[fieldStart] == UInt8(ascii: ";") {
            fieldStart = bytes.index(after: fieldStart)
        }
        let fieldEnd = bytes[fieldStart...].firstIndex(of: UInt8(ascii: ";")) ?? bytes.endIndex
        let field = bytes[fieldStart..<fieldEnd]
        guard let first = field.firstIndex(where: { !blank($0) }), let last = field.lastIndex(where: { !blank($0) })
        else { return "" }
        return String(decoding: field[first...last], as: UTF8.self).lowercased()
    }

    /// The media type as Foundation trims it, for any text (tests compare the two).
    static func mediaTypeByFoundation(_ contentType: String) -> String {
        contentType.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
    }

    /// Whether an error is worth another attempt.
    public static func isRetryable(_ error: TransportError) -> Bool {
        switch error.code.kind {
        case .connectionFailed, .timedOut, .truncated, .other, .changedDuringResume: true
        case .httpStatus(let status): [408, 429, 500, 502, 503, 504].contains(status)
        case .invalidURL, .unsupportedScheme, .tooManyRedirects, .bodyTooLarge, .fileError, .cancelled, .unsupported:
            false
        }
    }

    /// How long to wait before retry number `attempt` (1-based): a server's `Retry-After` when it sent
    /// one, else a random time up to the exponential step (full jitter), never above `retryMaxWait`.
    public func delay(
        attempt: Int, retryAfter: String?, now: Date = Date(),
        random: (Double) -> Double = { Double.random(in: 0...$0) }
    ) -> Duration {
        if let retryAfter, let seconds = Self.parseRetryAfter(retryAfter, now: now) {
            // Clamped before converting: a server may send any number, and 1e16 s does not fit in an Int64 of ms.
            return .milliseconds(Int64(min(seconds, retryMaxWait.seconds) * 1000))
        }
        let step = retryBase.seconds * pow(2, Double(max(0, attempt - 1)))
        let capped = min(step, retryMaxWait.seconds)
        return .milliseconds(Int64(random(capped) * 1000))
    }

    /// `Retry-After` in seconds: a whole number of seconds, or an HTTP date (RFC 9110).
    public static func parseRetryAfter(_ value: String, now: Date = Date()) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(trimmed) { return Double(max(0, seconds)) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
