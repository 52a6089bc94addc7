import CCurl
import Foundation
import MediaFetchCore
import Synchronization

/// HTTP through libcurl: a few multi handles for every call of a run, each driven by one thread, so
/// connections (and HTTP/2 streams over https) are shared between transfers and no thread is spent per
/// transfer.
///
/// One thread receiving and writing every byte is what bounds `curl -Z`: on loopback its single thread
/// is busy all the time. Two engines (the `threads` option) split that work across two cores; each owns
/// its share of the connection limits, and a transfer goes to the engine with the fewest running for its
/// connections. While the bodies are small (under 64 KiB on average over the last 32 downloads), there are
/// few bytes to split and a second thread only adds thread switches to each transfer: the first engine
/// then takes every transfer and the whole limits, and the others close their connections once their
/// transfers end. This needs the per-host limit to be the whole limit (the default): then, with no more
/// transfers at once than ``Configuration/concurrency`` (what the runner starts), a host never has more
/// connections in use than ``Configuration/perHost`` while the limits move. Connections an engine keeps over
/// its new share close as its transfers end.
///
/// Downloads go straight from libcurl's buffer into the file with `pwrite(2)`; resume uses `Range` with
/// `If-Range`, and the status is looked at before the first body byte is written, so a refused resume
/// never touches the kept bytes.
public final class CurlTransport: Transport {
    public struct Configuration: Sendable {
        /// Downloads at once, and connections in all. Until a connection to a server is seen to serve a second
        /// transfer, at most four requests to that server wait for their first answer at once, so that its listen
        /// queue is never flooded.
        public var concurrency: Int
        /// Connections to one host at most.
        public var perHost: Int
        /// The most one transfer may take in all.
        public var timeout: Duration
        /// The most connecting (TCP and TLS) may take.
        public var connectTimeout: Duration
        /// A transfer slower than this many bytes a second for ``lowSpeedTime`` is stopped as timed out.
        public var lowSpeedLimit: Int
        /// How long a transfer may stay below ``lowSpeedLimit``: with a limit of 1, the idle timeout (what
        /// `TransportContract.Settings.idleTimeout` asks for).
        public var lowSpeedTime: Duration
        public var maxRedirects: Int
        /// Extra request headers, sent with every request; a request's own headers win.
        public var headers: HTTPHeaders
        public var userAgent: String
        /// A proxy URL; nil connects directly (proxy environment variables are not read).
        public var proxy: String?
        /// A PEM file of extra certificate authorities, trusted besides the system's.
        public var caFile: String?
        /// Whether HTTP/2 is used when an https server offers it.
        public var http2: Bool
        /// Bytes a second for all downloads together (see ``RateLimiter``); nil is unlimited.
        public var maxRate: Int64?
        /// Engine threads (each with its own multi handle and connections); at most `concurrency` and
        /// `perHost`, so that the limits split without rounding up. The most that run at once: while recent
        /// bodies are small, one engine takes every transfer (see ``CurlTransport``).
        public var threads: Int

        public init(
            concurrency: Int = 16,
            perHost: Int? = nil,
            timeout: Duration = .seconds(300),
            connectTimeout: Duration = .seconds(30),
            lowSpeedLimit: Int = 1,
            lowSpeedTime: Duration = .seconds(30),
            maxRedirects: Int = 10,
            headers: HTTPHeaders = [:],
            userAgent: String = CurlTransport.defaultUserAgent,
            proxy: String? = nil,
            caFile: String? = nil,
            http2: Bool = true,
            maxRate: Int64? = nil,
            threads: Int = 2
        ) {
            self.concurrency = concurrency
            self.perHost = perHost ?? concurrency
            self.timeout = timeout
            self.connectTimeout = connectTimeout
            self.lowSpeedLimit = lowSpeedLimit
            self.maxRate = maxRate
            self.lowSpeedTime = lowSpeedTime
            self.maxRedirects = maxRedirects
            self.headers = headers
            self.userAgent = userAgent
            self.proxy = proxy
            self.caFile = caFile
            self.http2 = http2
            self.threads = max(1, min(threads, concurrency, self.perHost))
        }
    }

    public static let defaultUserAgent = "mediafetch/0.1 (+curl)"

    /// Big reads mean fewer callbacks and fewer `pwrite` calls per megabyte.
    private static let bufferSize = 128 << 10

    public let configuration: Configuration
    /// The header list of a download from the start with no headers of its own (nearly every one), built once and
    /// shared (libcurl only reads it): building a list cost a dozen allocations a download. Nil when the
    /// configured headers cannot be sent (each download then reports why).
    private let plainDownloadHeaders: CurlHeaderList?
    /// Internal for tests, which stop one on an error of its own.
    let engines: [CurlEngine]
    /// Whether the engines in use follow the size of the bodies (see ``EngineChoice``).
    private let adaptive: Bool
    private let limiter: RateLimiter?
    /// The memory of download bodies kept in memory, when a request allows it (``DownloadRequest/keepInMemory``).
    private let bodies = BodyArena()

    public var maxConcurrentTransfers: Int { configuration.concurrency }

    /// - Throws: ``TransportError`` when libcurl cannot set up its multi handle.
    public init(_ configuration: Configuration = Configuration()) throws {
        self.configuration = configuration
        var plain = configuration.headers
        plain.set("Accept-Encoding", "identity")
        plainDownloadHeaders = try? CurlHeaderList(plain, url: URL(fileURLWithPath: "/"))
        limiter = configuration.maxRate.map(RateLimiter.init(bytesPerSecond:))
        let count = configuration.threads
        // Engine i gets its share of each limit; the shares add up to the limit exactly.
        let share = { (limit: Int, index: Int) in limit / count + (index < limit % count ? 1 : 0) }
        let shares = (0..<count).map {
            (connections: share(configuration.concurrency, $0), perHost: share(configuration.perHost, $0))
        }
        let ramps = TransferRamps()
        self.ramps = ramps
        engines = try shares.enumerated().map { index, limits in
            try CurlEngine(
                maxConnections: limits.connections, maxPerHost: limits.perHost, ramps: ramps,
                name: "mediafetch.curl.\(index)")
        }
        self.shares = shares
        adaptive = count > 1 && configuration.perHost >= configuration.concurrency
    }

    deinit {
        for engine in engines { engine.stop() }
    }

    public func shutdown() async {
        // All told first: an engine still running while another stops would start the transfers that get the places
        // the stopping one's transfers give back.
        for engine in engines { engine.stop() }
        for engine in engines { await engine.shutdown() }
    }

    /// Each engine's share of the connection limits, in all and to one host.
    private let shares: [(connections: Int, perHost: Int)]
    private let picking = Mutex(EngineChoice())
    /// Easy handles of finished transfers, for the next ones.
    private let handles = CurlHandlePool()

    /// How many easy handles this transport's finished transfers used (``CurlHandlePool/handlesUsed``).
    package var easyHandlesUsed: Int { handles.handlesUsed }

    /// The engine with the fewest transfers for its connections, or the first while bodies are small, reserved
    /// for one more: picking and counting in one step, so that transfers started together spread out.
    private func reserveEngine() -> CurlEngine {
        picking.withLock { choice in
            let engine = choice.single ? engines[0] : engines.min { $0.load < $1.load } ?? engines[0]
            engine.reserve()
            return engine
        }
    }

    /// Counts a finished download's body; when that moves the choice between one engine and all, gives the
    /// engines their new limits (under the same lock as the picking, so limits and picks change in one order).
    private func record(body bytes: Int64) {
        guard adaptive else { return }
        picking.withLock { choice in
            guard choice.record(bytes: bytes) else { return }
            for (index, engine) in engines.enumerated() {
                // The first engine takes the whole limits while it runs alone; the others keep their shares.
                let limits =
                    choice.single && index == 0
                    ? (connections: configuration.concurrency, perHost: configuration.perHost) : shares[index]
                engine.resize(
                    connections: limits.connections, perHost: limits.perHost, standby: choice.single && index > 0)
            }
        }
    }

    /// Whether one engine takes every transfer now (for tests).
    var usesOneEngine: Bool { picking.withLock { $0.single } }

    /// Transfers reserved for each engine since the transport began (for tests).
    var startedByEngine: [Int] { engines.map { $0.started.load(ordering: .relaxed) } }

    /// How many transfers to each server may wait for its answer at once, shared by the engines.
    let ramps: TransferRamps

    /// Runs a transfer on the least loaded engine, which starts it once its server's ramp lets it
    /// (``TransferRamps``).
    private func perform(_ transfer: CurlTransfer) async throws {
        try await reserveEngine().perform(transfer)
    }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        if let error = TransportError.checkScheme(request.url) { throw error }
        var headers = configuration.headers
        if !request.acceptsCompression { headers.set("Accept-Encoding", "identity") }
        for (name, value) in request.headers { headers.set(name, value) }
        let easy = try makeEasy(url: request.url, timeout: request.timeout)
        if request.acceptsCompression {
            // The empty string asks for every encoding this libcurl can decode.
            try easy.set(CURLOPT_ACCEPT_ENCODING, "", "CURLOPT_ACCEPT_ENCODING")
        }
        switch request.method {
        case .get: break
        case .head: try easy.set(CURLOPT_NOBODY, true, "CURLOPT_NOBODY")
        default: try easy.set(CURLOPT_CUSTOMREQUEST, request.method.rawValue, "CURLOPT_CUSTOMREQUEST")
        }
        let transfer = try CurlTransfer(
            easy: easy, headerList: try CurlHeaderList(headers, url: request.url),
            body: .buffer(limit: request.maxBodyBytes, head: request.method == .head),
            maxRedirects: configuration.maxRedirects)
        transfer.timeout = request.timeout ?? configuration.timeout
        // Out of the engine once perform returns or throws, whatever the outcome: the next transfer may have it.
        defer { handles.give(easy) }
        try await perform(transfer)
        return HTTPResponse(
            status: transfer.status, headers: transfer.headers,
            url: easy.effectiveURL ?? request.url, body: transfer.data)
    }

    /// Streams the body with libcurl's read callback (`pread` from the file range, a copy from a buffer), with a
    /// `Content-Length` and without `Expect: 100-continue` (a round trip per upload); redirects are not followed,
    /// since a signed request is valid for its own URL only.
    public func upload(
        _ request: UploadRequest,
        progress: @escaping @Sendable (Int64) -> Void
    ) async throws -> HTTPResponse {
        if let error = TransportError.checkScheme(request.url) { throw error }
        var headers = configuration.headers
        for (name, value) in request.headers { headers.set(name, value) }
        headers.set("Accept-Encoding", "identity")
        let easy = try makeEasy(url: request.url, timeout: request.timeout)
        try easy.set(CURLOPT_FOLLOWLOCATION, false, "CURLOPT_FOLLOWLOCATION")
        if request.method == .post { try easy.set(CURLOPT_CUSTOMREQUEST, "POST", "CURLOPT_CUSTOMREQUEST") }
        let list = try CurlHeaderList(headers, url: request.url, removing: ["Expect"])
        let source = try UploadSource(request.body, for: request.url)
        let transfer = try CurlTransfer(
            easy: easy, headerList: list, body: .upload(source, limit: request.maxResponseBytes, progress: progress),
            maxRedirects: 0)
        transfer.timeout = request.timeout ?? configuration.timeout
        // Out of the engine once perform returns or throws, whatever the outcome: the next transfer may have it.
        defer { handles.give(easy) }
        try await perform(transfer)
        return HTTPResponse(
            status: transfer.status, headers: transfer.headers, url: easy.effectiveURL ?? request.url,
            body: transfer.data)
    }

    public func download(
        _ request: DownloadRequest,
        progress: @escaping @Sendable (DownloadProgress) -> Void
    ) async throws -> DownloadResult {
        if let error = TransportError.checkScheme(request.url) { throw error }
        let easy = try makeEasy(url: request.url, timeout: nil)
        let headerList: CurlHeaderList
        if request.resumeFrom == 0 && request.headers.count == 0, let plain = plainDownloadHeaders {
            headerList = plain
        } else {
            var headers = configuration.headers
            for (name, value) in request.headers { headers.set(name, value) }
            // Media is already compressed, and a byte range must count bytes of the file itself.
            headers.set("Accept-Encoding", "identity")
            if request.resumeFrom > 0 {
                try easy.set(CURLOPT_RANGE, "\(request.resumeFrom)-", "CURLOPT_RANGE")
                headers.set("If-Range", request.validator?.ifRangeValue)
            }
            headerList = try CurlHeaderList(headers, url: request.url)
        }
        let transfer = try CurlTransfer(
            easy: easy, headerList: headerList,
            body: .file(request, progress: progress), maxRedirects: configuration.maxRedirects, limiter: limiter,
            arena: bodies)
        transfer.timeout = configuration.timeout
        // Out of the engine once perform returns or throws, whatever the outcome: the next transfer may have it.
        defer { handles.give(easy) }
        try await perform(transfer)
        let written = transfer.file?.written ?? 0
        let base = transfer.file?.base ?? 0
        record(body: written)
        return DownloadResult(
            status: transfer.status, headers: transfer.headers, url: easy.effectiveURL ?? request.url,
            bytesWritten: written, fileSize: base + written, validator: Validator(headers: transfer.headers),
            restarted: transfer.restarted, contents: transfer.file?.takeContents())
    }

    /// An easy handle with the options every request shares: the safety settings first.
    private func makeEasy(url: URL, timeout: Duration?) throws(TransportError) -> CurlEasy {
        var easy = try handles.take(for: url)
        // libcurl 7.88 refuses a new size to a handle that still holds its last transfer's receive buffer: after a
        // failure, and after nearly every HTTP/2 download (one that ends while other streams use its connection
        // skips the end of libcurl's clean-up). After a transfer libcurl completed, such a handle keeps the buffer
        // it has and reads into it libcurl's default 16 KiB at a time: replacing it cost a handle's making and
        // freeing for 72% of the downloads over HTTP/2 (20,000 x 10 KB now take 0.91-0.93x the time and 0.90x the
        // CPU; ten files of 50 MB 1.02x and 1.01x, within the noise). After a failure it is replaced: the skipped
        // clean-up also keeps the bytes libcurl held for a transfer stopped while paused (`max-rate`), which the
        // next transfer to pause would write out as its own.
        let completed = easy.lastTransferCompleted
        easy.lastTransferCompleted = false
        if easy.set(bufferSize: Self.bufferSize) != CURLE_OK && !completed {
            easy = try CurlEasy(url: url)
            try easy.set(CURLOPT_BUFFERSIZE, Self.bufferSize, "CURLOPT_BUFFERSIZE")
        }
        try easy.setURL()
        // Only http and https, redirects included: a Location pointing at file:// or ftp:// fails the transfer.
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", "CURLOPT_REDIR_PROTOCOLS_STR")
        try easy.set(CURLOPT_FOLLOWLOCATION, true, "CURLOPT_FOLLOWLOCATION")
        try easy.set(CURLOPT_MAXREDIRS, configuration.maxRedirects, "CURLOPT_MAXREDIRS")
        // Statuses are judged here, not by libcurl, so that send() returns every status.
        try easy.set(CURLOPT_FAILONERROR, false, "CURLOPT_FAILONERROR")
        // Signals would disturb other threads of the process; libcurl then needs a threaded resolver.
        try easy.set(CURLOPT_NOSIGNAL, true, "CURLOPT_NOSIGNAL")
        try easy.set(CURLOPT_SSL_VERIFYPEER, true, "CURLOPT_SSL_VERIFYPEER")
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
        try easy.set(CURLOPT_TIMEOUT_MS, Self.milliseconds(timeout ?? configuration.timeout), "CURLOPT_TIMEOUT_MS")
        try easy.set(
            CURLOPT_CONNECTTIMEOUT_MS, Self.milliseconds(configuration.connectTimeout),
            "CURLOPT_CONNECTTIMEOUT_MS")
        if configuration.lowSpeedLimit > 0 {
            try easy.set(CURLOPT_LOW_SPEED_LIMIT, configuration.lowSpeedLimit, "CURLOPT_LOW_SPEED_LIMIT")
            try easy.set(
                CURLOPT_LOW_SPEED_TIME, max(1, Int(configuration.lowSpeedTime.seconds.rounded(.up))),
                "CURLOPT_LOW_SPEED_TIME")
        }
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent, "CURLOPT_USERAGENT")
        // An empty proxy turns off the proxy environment variables too: where bytes go is the config's call.
        try easy.set(CURLOPT_PROXY, configuration.proxy ?? "", "CURLOPT_PROXY")
        try easy.set(CURLOPT_SUPPRESS_CONNECT_HEADERS, true, "CURLOPT_SUPPRESS_CONNECT_HEADERS")
        if let caFile = configuration.caFile { try easy.set(CURLOPT_CAINFO, caFile, "CURLOPT_CAINFO") }
        try easy.set(
            CURLOPT_HTTP_VERSION, configuration.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1,
            "CURLOPT_HTTP_VERSION")
        if configuration.http2 && url.scheme?.lowercased() == "https" {
            // Transfers started together wait for the first handshake to learn whether they can share its
            // connection, instead of each opening one.
            try easy.set(CURLOPT_PIPEWAIT, true, "CURLOPT_PIPEWAIT")
        }
        return easy
    }

    /// Whole milliseconds in `duration`, rounded down (libcurl's timeouts, the engine's poll).
    static func milliseconds(_ duration: Duration) -> Int {
        let components = duration.components
        return Int(components.seconds) * 1000 + Int(components.attoseconds / 1_000_000_000_000_000)
    }
}

/// Easy handles waiting for their next transfer (at most ``limit``; the rest are freed).
///
/// `@unchecked Sendable`: a handle is either in ``idle``, behind the lock, or owned by the one transfer that
/// took it, never both; the engine thread is done with a handle before ``give(_:)`` is called.
final class CurlHandlePool: @unchecked Sendable {
    static let limit = 64
    private let lock = NSLock()
    private var idle: [CurlEasy] = []
    /// The handles that were ever given back, each counted once (see ``handlesUsed``).
    private var used = 0

    /// A handle set up for `url`: a finished one reset, or a new one.
    func take(for url: URL) throws(TransportError) -> CurlEasy {
        lock.lock()
        let easy = idle.popLast()
        lock.unlock()
        guard let easy else { return try CurlEasy(url: url) }
        try easy.reuse(for: url)
        return easy
    }

    /// How many handles finished transfers, each counted once: with handles reused, about one a transfer that ran
    /// at once. A handle replaced instead of reused would be counted too, wherever it was made.
    var handlesUsed: Int {
        lock.lock()
        defer { lock.unlock() }
        return used
    }

    /// Keeps a handle whose transfer is over for a later ``take(for:)``.
    func give(_ easy: CurlEasy) {
        lock.lock()
        defer { lock.unlock() }
        if !easy.wasGivenBack {
            easy.wasGivenBack = true
            used += 1
        }
        if idle.count < Self.limit { idle.append(easy) }
    }
}

/// Whether a transport's transfers go to its first engine alone or to all of them, by the size of the bodies it
/// downloaded last: their mean over the first 32, then a moving average over about the last 32 (so that one large
/// file among small ones moves nothing). Nothing changes before 32 bodies are in, so that a short run, or one whose
/// first files are not like the rest, keeps its connections; and a gap between the two thresholds keeps mixed
/// sizes from flipping the choice back and forth.
struct EngineChoice {
    /// Below this average, one engine takes every transfer.
    static let small = Double(64 << 10)
    /// Above this average, every engine takes its share again.
    static let large = Double(128 << 10)
    /// Bodies counted before the choice may change, and the reach of the moving average.
    static let window = 32

    private(set) var single = false
    private var average = 0.0
    private var counted = 0

    /// Counts a finished download of `bytes`; true when that changed ``single``.
    mutating func record(bytes: Int64) -> Bool {
        counted += 1
        average += (Double(bytes) - average) / Double(min(counted, Self.window))
        guard counted >= Self.window else { return false }
        let next = single ? average <= Self.large : average < Self.small
        defer { single = next }
        return next != single
    }
}
