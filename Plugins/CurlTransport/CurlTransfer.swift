import CCurl
import Foundation
import MediaFetchCore

/// One request in flight: its easy handle, where its body goes, and what the response said.
///
/// `@unchecked Sendable`: the calling task builds it and hands it to the engine through the engine's lock;
/// from then on only the engine's thread touches it (libcurl runs the callbacks on that thread, inside
/// `curl_multi_perform`) until the engine resumes ``continuation``; after that only the calling task reads it. Two
/// exceptions: while it waits in its server's line (``TransferRamps``) nobody runs it, and the thread that gives it its
/// place sets ``ticket`` before handing it back to its engine through the engine's lock, or ends it there when the
/// engine has stopped; and a cancel that comes after the transfer ended sets ``cancelled``, which nobody reads then.
final class CurlTransfer: @unchecked Sendable {
    enum Body {
        /// Collected in memory, at most `limit` bytes; `head` when no body is asked for.
        case buffer(limit: Int, head: Bool)
        /// Streamed into `request.destination`.
        case file(DownloadRequest, progress: @Sendable (DownloadProgress) -> Void)
        /// An upload's answer, collected in memory up to `limit` bytes, while its body is read from `source`.
        case upload(UploadSource, limit: Int, progress: @Sendable (Int64) -> Void)

        /// The most an answer collected in memory may hold; nil for a download.
        var bufferLimit: Int? {
            switch self {
            case .buffer(let limit, _): limit
            case .upload(_, let limit, _): limit
            case .file: nil
            }
        }
    }

    /// How often a download's progress closure is called at most.
    static let progressInterval = Duration.milliseconds(100)

    let easy: CurlEasy
    let body: Body
    let maxRedirects: Int
    /// Where a download's body kept in memory goes (``DownloadRequest/keepInMemory``); nil: always the file.
    private let arena: BodyArena?
    /// The transport's `max-rate`, which a download's body pays into; nil is unlimited.
    private let limiter: RateLimiter?
    /// Set by the write callback when the limiter asked the transfer to wait: the engine unpauses it then.
    var pausedUntil: ContinuousClock.Instant?
    /// Whether the transfer can pause (it pays into a rate limit): only then does the engine look for pauses.
    var mayPause: Bool { limiter != nil }
    /// Bytes of the piece libcurl holds while paused that were paid for already.
    private var prepaid = 0
    /// Kept alive here because libcurl reads the list until the transfer is done.
    private let headerList: CurlHeaderList
    var continuation: CheckedContinuation<Void, any Error>?
    /// The transfer's place in its server's ramp (``TransferRamps``), told when the server answers and when the
    /// transfer ends; nil once the server is known to keep connections. Set before libcurl has the transfer.
    var ticket: RampTicket?
    /// The engine that runs the transfer, set before it is sent there: where the ramp hands it once it has a place.
    var engine: CurlEngine?
    /// The server's key in the ramps (``CurlEasy/originKey``), set by the engine when it takes the transfer.
    var origin = 0
    /// The most the whole request may take, as its easy handle was told (`CURLOPT_TIMEOUT_MS`): time spent in its
    /// server's line counts against it too.
    var timeout = Duration.seconds(300)
    /// When the engine put the transfer in its server's line; nil when it never waited there.
    var waitingSince: ContinuousClock.Instant?
    /// Set by the engine when a cancel found the transfer neither running nor in its server's line: it ends, cancelled,
    /// when the engine gets it.
    var cancelled = false

    /// The headers of the latest response: each status line starts a fresh set, so redirects leave none behind.
    private(set) var headers = HTTPHeaders()
    private(set) var status = 0
    private(set) var data = Data()
    private(set) var file: DownloadFile?
    /// The body length the final response announced.
    private(set) var expected: Int64?
    private(set) var restarted = false
    /// The first problem a callback found; it wins over the `CURLE_WRITE_ERROR` that aborting causes.
    private var failure: TransportError?
    /// Bytes of the answer dropped after ``failure`` (``drain(_:)``).
    private var drained = 0
    /// When the transfer began to drop the rest of a failed answer (``drain(_:)``): after ``drainTime`` the engine
    /// ends it.
    private(set) var drainingSince: ContinuousClock.Instant?
    /// Whether the final response's status was looked at (on its first body byte, or at the end when it had none).
    private var started = false
    /// Whether the server answered: a status line came (any status line: the server accepted the connection). The
    /// ramp is told once; a transfer that ends before one came gives its place back when it ends.
    private var answered = false
    private var lastProgress: ContinuousClock.Instant?
    /// What the write callback needs of a download's request, taken out of ``body`` once: matching the enum on
    /// every piece copied the whole request (a retain and release of each of its fields) 95,000 times a run.
    private let maxBytes: Int64?
    private let progress: (@Sendable (DownloadProgress) -> Void)?
    private let uploadSource: UploadSource?
    private let uploadProgress: (@Sendable (Int64) -> Void)?

    init(
        easy: CurlEasy, headerList: CurlHeaderList, body: Body, maxRedirects: Int, limiter: RateLimiter? = nil,
        arena: BodyArena? = nil
    ) throws(TransportError) {
        self.arena = arena
        self.easy = easy
        self.headerList = headerList
        self.body = body
        self.maxRedirects = maxRedirects
        self.limiter = limiter
        if case .file(let request, let progress) = body {
            maxBytes = request.maxBytes
            self.progress = progress
        } else {
            maxBytes = nil
            progress = nil
        }
        if case .upload(let source, _, let progress) = body {
            uploadSource = source
            uploadProgress = progress
        } else {
            uploadSource = nil
            uploadProgress = nil
        }
        // Unretained: the engine holds the transfer for as long as libcurl may call back.
        let context = Unmanaged.passUnretained(self).toOpaque()
        try easy.set(CURLOPT_HTTPHEADER, pointer: UnsafeMutableRawPointer(headerList.pointer), "CURLOPT_HTTPHEADER")
        try easy.setWriteFunction(Self.onBody)
        try easy.set(CURLOPT_WRITEDATA, pointer: context, "CURLOPT_WRITEDATA")
        try easy.setHeaderFunction(Self.onHeader)
        try easy.set(CURLOPT_HEADERDATA, pointer: context, "CURLOPT_HEADERDATA")
        if let uploadSource {
            try easy.set(CURLOPT_UPLOAD, true, "CURLOPT_UPLOAD")
            try easy.set(CURLOPT_INFILESIZE_LARGE, offset: uploadSource.length, "CURLOPT_INFILESIZE_LARGE")
            try easy.setReadFunction(Self.onRead)
            try easy.set(CURLOPT_READDATA, pointer: context, "CURLOPT_READDATA")
        }
    }

    /// Hands libcurl the next bytes of an upload's body.
    private static let onRead: curl_read_callback = { buffer, size, count, context in
        guard let context, let buffer else { return Int(CURL_READFUNC_ABORT) }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        return transfer.send(into: UnsafeMutableRawBufferPointer(start: buffer, count: size * count))
    }

    private func send(into buffer: UnsafeMutableRawBufferPointer) -> Int {
        guard let uploadSource, failure == nil else { return Int(CURL_READFUNC_ABORT) }
        do {
            let count = try uploadSource.read(into: buffer)
            let now = ContinuousClock.now
            if count == 0 || lastProgress.map({ now - $0 >= Self.progressInterval }) ?? true {
                lastProgress = now
                uploadProgress?(uploadSource.sent)
            }
            return count
        } catch {
            _ = fail(error)
            return Int(CURL_READFUNC_ABORT)
        }
    }

    // MARK: Callbacks (engine thread)

    private static let onBody: curl_write_callback = { buffer, size, count, context in
        guard let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        let bytes = UnsafeRawBufferPointer(start: buffer, count: size * count)
        switch transfer.receive(body: bytes) {
        case .taken: return size * count
        // libcurl keeps the bytes and hands them over again once the engine unpauses the transfer.
        case .wait: return Int(CURL_WRITEFUNC_PAUSE)
        // Anything but the full count makes libcurl stop the transfer with CURLE_WRITE_ERROR.
        case .refused: return 0
        }
    }

    private enum Receipt {
        case taken, wait, refused
    }

    private static let onHeader: curl_write_callback = { buffer, size, count, context in
        guard let context else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(context).takeUnretainedValue()
        transfer.receive(headerLine: UnsafeRawBufferPointer(start: buffer, count: size * count))
        return size * count
    }

    /// One header line as libcurl hands it over: a status line starts a response's fields again (a redirect's or a
    /// `100 Continue`'s are left behind), and a field is kept with its name and value trimmed.
    ///
    /// By index over the bytes: Foundation's trimming went through NSString and cost a few percent of a many-files
    /// run, and the slice algorithms and closures after it still took about 1,700 instructions a line.
    private func receive(headerLine bytes: UnsafeRawBufferPointer) {
        var start = 0
        var end = bytes.count
        while start < end, Self.isBlank(bytes[start]) { start += 1 }
        while end > start, Self.isBlank(bytes[end - 1]) { end -= 1 }
        guard start < end else { return }
        if end - start >= 5, bytes[start] == UInt8(ascii: "H"), bytes[start + 1] == UInt8(ascii: "T"),
            bytes[start + 2] == UInt8(ascii: "T"), bytes[start + 3] == UInt8(ascii: "P"),
            bytes[start + 4] == UInt8(ascii: "/")
        {
            headers = HTTPHeaders()
            // "HTTP/1.1 200 OK": the digits after the first space.
            var index = start
            while index < end, bytes[index] != UInt8(ascii: " ") { index += 1 }
            while index < end, bytes[index] == UInt8(ascii: " ") { index += 1 }
            var code = 0
            var digits = 0
            while index < end, digits < 4, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                code = code * 10 + Int(bytes[index] - UInt8(ascii: "0"))
                digits += 1
                index += 1
            }
            // Three digits, then the end or a space: anything else is no status.
            status = digits == 3 && (index == end || bytes[index] == UInt8(ascii: " ")) ? code : 0
            // An upload's answer comes after its body; its status line already says the server took the connection.
            tellRampAnswered()
            return
        }
        var colon = start
        while colon < end, bytes[colon] != UInt8(ascii: ":") { colon += 1 }
        guard colon < end else { return }
        var nameEnd = colon
        while nameEnd > start, Self.isBlank(bytes[nameEnd - 1]) { nameEnd -= 1 }
        var valueStart = colon + 1
        while valueStart < end, Self.isBlank(bytes[valueStart]) { valueStart += 1 }
        let name = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<nameEnd]), as: UTF8.self)
        let value = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[valueStart..<end]), as: UTF8.self)
        headers.add(name: name, value: value)
    }

    /// Space, tab, CR or LF.
    private static func isBlank(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0D || byte == 0x0A
    }

    private func receive(body bytes: UnsafeRawBufferPointer) -> Receipt {
        guard failure == nil, started || start() else { return drain(bytes.count) }
        if let limiter {
            // After a pause libcurl hands over the piece it held, which was paid for when it first came.
            let charge = bytes.count - prepaid
            prepaid = 0
            if charge > 0, let wait = limiter.pay(charge) {
                prepaid = bytes.count
                pausedUntil = .now + wait
                return .wait
            }
        }
        return take(body: bytes) ? .taken : drain(bytes.count)
    }

    /// The most of a failed transfer's answer that is read on and dropped, so that its connection serves the next.
    static let drainLimit = 64 * 1024
    /// How long a failed transfer may take to read the rest of its answer: a slower one's connection is not worth
    /// keeping (a new one costs a round trip or three), and its slot is wanted.
    static let drainTime = Duration.seconds(1)

    /// After a failure (an error status, a file that cannot be written): drops the bytes and reads on to the end of a
    /// small answer, so that libcurl ends the request cleanly and keeps its connection. Refusing them aborts the
    /// transfer, and libcurl then closes the connection: 20,000 missing files of a URL list took 20,000 connections
    /// (and, over TLS, as many handshakes). An answer announced, or grown, past ``drainLimit`` is refused at once,
    /// and so is a piece that comes after ``drainTime``; one that never comes, the engine ends then. The transfer
    /// ends with its failure either way. The dropped bytes pay into the rate limit, without pausing.
    private func drain(_ count: Int) -> Receipt {
        // Only ever after a failure, which is what the transfer ends with: without one, dropping bytes would make a
        // success of a body never kept.
        guard failure != nil else { return .refused }
        drained += count
        _ = limiter?.pay(count)
        let now = ContinuousClock.now
        if drainingSince == nil {
            drainingSince = now
            engine?.watchDraining(self)
        }
        guard let drainingSince, now - drainingSince <= Self.drainTime else { return .refused }
        return (expected ?? 0) <= Int64(Self.drainLimit) && drained <= Self.drainLimit ? .taken : .refused
    }

    private func take(body bytes: UnsafeRawBufferPointer) -> Bool {
        if let file {
            if let maxBytes, file.base + file.written + Int64(bytes.count) > maxBytes {
                return fail(TransportError(.bodyTooLarge(limit: maxBytes), url: easy.effectiveURL ?? easy.url))
            }
            do {
                try file.write(bytes)
            } catch {
                return fail(error)
            }
            reportProgress(force: false)
            return true
        }
        // A download without its file (it could not be opened) has failed already.
        guard let limit = body.bufferLimit else { return false }
        guard data.count + bytes.count <= limit else {
            return fail(TransportError(.bodyTooLarge(limit: Int64(limit)), url: easy.effectiveURL ?? easy.url))
        }
        data.append(contentsOf: bytes)
        return true
    }

    /// Tells the ramp, once, that the server answered.
    private func tellRampAnswered() {
        guard !answered else { return }
        answered = true
        ticket?.answered()
    }

    /// Looks at the final response before any of its body is kept: for a download this is where the status
    /// decides whether the file is appended to, started over, or left alone.
    private func start() -> Bool {
        started = true
        tellRampAnswered()
        status = easy.responseCode
        expected = easy.contentLength
        let url = easy.effectiveURL ?? easy.url
        switch body {
        case .buffer(let limit, let head):
            if !head, let expected, expected > Int64(limit) {
                return fail(TransportError(.bodyTooLarge(limit: Int64(limit)), url: url))
            }
            // A body of known length (a feed of megabytes) grows into one buffer instead of doubling into several.
            if !head, let expected, expected > 0 { data.reserveCapacity(Int(expected)) }
        case .upload(_, let limit, _):
            if let expected, expected > Int64(limit) {
                return fail(TransportError(.bodyTooLarge(limit: Int64(limit)), url: url))
            }
        case .file(let request, _):
            let decision: ResumeDecision
            do {
                decision = try ResumeDecision(
                    status: status, headers: headers, contentLength: expected, request: request, url: url)
            } catch {
                return fail(error)
            }
            restarted = decision.restarts
            do {
                file = try destination(for: request, decision)
            } catch {
                return fail(error)
            }
            request.onResponse?(decision.response)
        }
        return true
    }

    /// The download's file: in memory when the request allows it for a 200 from byte zero and the arena has room
    /// (found before asking, so that a yes is kept), else on disk.
    private func destination(for request: DownloadRequest, _ decision: ResumeDecision) throws(TransportError)
        -> DownloadFile
    {
        if request.resumeFrom == 0, decision.base == 0, status == 200, let expected,
            let keepInMemory = request.keepInMemory, let arena, let piece = arena.take(expected)
        {
            if keepInMemory(expected) {
                return DownloadFile(path: request.destinationPath, length: expected, in: piece, from: arena)
            }
            arena.give(piece)
        }
        return try DownloadFile(path: request.destinationPath, keeping: decision.base)
    }

    private func fail(_ error: TransportError) -> Bool {
        if failure == nil { failure = error }
        return false
    }

    private func reportProgress(force: Bool) {
        guard let progress, let file else { return }
        let now = ContinuousClock.now
        if !force, let lastProgress, now - lastProgress < Self.progressInterval { return }
        lastProgress = now
        progress(DownloadProgress(received: file.base + file.written, expected: expected.map { file.base + $0 }))
    }

    // MARK: Completion (engine thread)

    /// Ends the transfer once libcurl has let go of it, and resumes the waiting task. Its ramp ticket ends first: a
    /// transfer answered over a connection it did not open shows that the server keeps connections.
    func complete(_ code: CURLcode) {
        easy.lastTransferCompleted = code == CURLE_OK
        ticket?.ended(connects: easy.newConnections)
        resume(outcome(code))
    }

    /// Ends a transfer stopped before libcurl finished it (cancelled, refused, or the transport shut down); its ramp
    /// ticket, if it had one, gives its place back.
    func complete(stopped error: TransportError) {
        ticket?.ended(connects: 1)
        file?.spill()
        try? file?.close()
        resume(.failure(error))
    }

    /// Ends a transfer cancelled before libcurl finished it.
    func completeCancelled() {
        complete(stopped: TransportError(.cancelled, url: easy.url))
    }

    private func outcome(_ code: CURLcode) -> Result<Void, TransportError> {
        let url = easy.effectiveURL ?? easy.url
        do throws(TransportError) {
            defer { try? file?.close() }
            // A body kept in memory that did not end well is written out, as a streamed one would have been.
            var spills = true
            defer { if spills { file?.spill() } }
            if let failure { throw failure }
            if let shortfall = shortBody(code) {
                throw TransportError(shortfall, url: url, detail: easy.message(for: code))
            }
            guard code == CURLE_OK else {
                throw TransportError(
                    curl: code, url: url, detail: easy.message(for: code), redirect: easy.redirectURL,
                    maxRedirects: maxRedirects)
            }
            if !started && !start() { throw failure ?? TransportError(.other, url: url) }
            if let file {
                // libcurl checks Content-Length too, but a count of our own does not depend on its heuristics.
                if let expected, file.written != expected {
                    throw TransportError(
                        .truncated(expected: file.base + expected, received: file.base + file.written),
                        url: url)
                }
                reportProgress(force: true)
                try file.close()
            }
            spills = false
            return .success(())
        } catch {
            return .failure(error)
        }
    }

    /// A body that ended early because the connection did (libcurl's `CURLE_PARTIAL_FILE`, or a reset after
    /// some of the body) is a truncation; a timeout or a cancellation stays what it is.
    private func shortBody(_ code: CURLcode) -> TransportError.Code? {
        guard code != CURLE_OK, code != CURLE_OPERATION_TIMEDOUT, code != CURLE_ABORTED_BY_CALLBACK else { return nil }
        let base = file?.base ?? 0
        let received = base + (file?.written ?? Int64(data.count))
        if let expected, started, received < base + expected {
            return .truncated(expected: base + expected, received: received)
        }
        return code == CURLE_PARTIAL_FILE ? .truncated(expected: base + (expected ?? -1), received: received) : nil
    }

    private func resume(_ result: Result<Void, TransportError>) {
        guard let continuation else { return }
        self.continuation = nil
        switch result {
        case .success: continuation.resume()
        case .failure(let error): continuation.resume(throwing: error)
        }
    }
}

extension CurlTransfer: RampWaiter {
    /// Takes its place (or, with nil, goes without one) and goes to its engine's inbox; an engine that stopped
    /// refuses it, and it ends here, without the place.
    func mayStart(with ticket: RampTicket?) -> Bool {
        self.ticket = ticket
        guard let engine, let refusal = engine.admit(self) else { return true }
        self.ticket = nil
        complete(stopped: refusal)
        return false
    }
}
