import CMicroHTTPD
import Foundation
import MediaFetchCore
import Synchronization

/// A small HTTP/1.1 server on libmicrohttpd: one thread per connection (so that a handler may block on async
/// work, and an event stream may wait for its next event), bounded request bodies, responses from memory, from
/// a file descriptor (a range of a stored file, sent with `sendfile`) or from an ``EventStream``.
///
/// The daemon pointer is written once in `init` and read by `stop()`, which libmicrohttpd allows from any thread;
/// everything the callbacks share lives in ``Context`` behind locks.
final class HTTPServer: @unchecked Sendable {
    struct Request: Sendable {
        var method: String
        /// Percent-decoded by libmicrohttpd, without the query.
        var path: String
        var query: [(name: String, value: String)]
        /// Header names in lower case.
        var headers: [String: String]
        var body: [UInt8]
        /// The body was over the limit and has been dropped.
        var bodyTooLarge: Bool

        func header(_ name: String) -> String? { headers[name.lowercased()] }
        func query(_ name: String) -> String? { query.first { $0.name == name }?.value }
    }

    enum Body: Sendable {
        case bytes([UInt8])
        /// `length` bytes from `offset` of an open descriptor, which the server closes when done.
        case file(descriptor: Int32, offset: Int64, length: Int64)
        case stream(EventStream)
    }

    struct Response: Sendable {
        var status: Int
        var headers: [(String, String)]
        var body: Body

        init(status: Int, headers: [(String, String)] = [], body: Body = .bytes([])) {
            self.status = status
            self.headers = headers
            self.body = body
        }
    }

    /// What the C callbacks reach through their context pointer.
    final class Context: Sendable {
        let handler: @Sendable (Request) -> Response
        let maxBody: Int
        let streams = Mutex<[ObjectIdentifier: EventStream]>([:])

        init(handler: @escaping @Sendable (Request) -> Response, maxBody: Int) {
            self.handler = handler
            self.maxBody = maxBody
        }
    }

    /// The body of one request as it arrives.
    final class RequestState: @unchecked Sendable {
        var body: [UInt8] = []
        var tooLarge = false
    }

    private let daemon: OpaquePointer
    private let context: Context
    let port: UInt16
    private let stopped = Mutex(false)

    /// Listens on `address` (an IPv4 or IPv6 literal) and `port` (0: a free one).
    /// - Throws: ``ServeError`` when the address is not a literal or the port cannot be bound.
    init(address: String, port: UInt16, maxBody: Int, handler: @escaping @Sendable (Request) -> Response) throws {
        context = Context(handler: handler, maxBody: maxBody)
        let pointer = Unmanaged.passUnretained(context).toOpaque()
        // poll(), not select(): select() cannot watch a descriptor numbered 1,024 or more, and libmicrohttpd refuses
        // such a connection, while a durable run of small files may hold a thousand descriptors for its stores.
        var flags = UInt32(
            MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_POLL.rawValue)
        var started: OpaquePointer?
        var v4 = sockaddr_in()
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET, address, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = port.bigEndian
            started = withUnsafePointer(to: &v4) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    mf_start_daemon(flags, $0, accessHandler, pointer, completedHandler, 64 * 1024, 256, 120)
                }
            }
        } else if inet_pton(AF_INET6, address, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = port.bigEndian
            flags |= UInt32(MHD_USE_IPv6.rawValue)
            started = withUnsafePointer(to: &v6) { address in
                address.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    mf_start_daemon(flags, $0, accessHandler, pointer, completedHandler, 64 * 1024, 256, 120)
                }
            }
        } else {
            throw ServeError("--listen \(address) is not an IPv4 or IPv6 address (e.g. 127.0.0.1, 0.0.0.0, ::1)")
        }
        guard let started else {
            throw ServeError(
                "cannot listen on \(address) port \(port): \(String(cString: strerror(errno))) "
                    + "(is the port taken? --port 0 picks a free one)")
        }
        daemon = started
        self.port = mf_daemon_port(started)
    }

    /// Ends every event stream, then stops the daemon (waiting for its connection threads).
    func stop() {
        let first = stopped.withLock { done in
            defer { done = true }
            return !done
        }
        guard first else { return }
        let streams = context.streams.withLock { Array($0.values) }
        for stream in streams { stream.close() }
        MHD_stop_daemon(daemon)
    }

    deinit { stop() }
}

/// Collects a connection's headers or query arguments.
private final class PairCollector {
    var pairs: [(String, String)] = []
}

private let collectPair: MHD_KeyValueIterator = { context, _, key, value in
    guard let context, let key else { return mf_yes }
    let collector = Unmanaged<PairCollector>.fromOpaque(context).takeUnretainedValue()
    collector.pairs.append((String(cString: key), value.map { String(cString: $0) } ?? ""))
    return mf_yes
}

private func values(_ connection: OpaquePointer, _ kind: MHD_ValueKind) -> [(String, String)] {
    let collector = PairCollector()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values(connection, kind, collectPair, Unmanaged.passUnretained(collector).toOpaque())
    }
    return collector.pairs
}

/// The first call for a request only sets its state (libmicrohttpd keeps the connection alive only when the
/// answer comes on a later call), body chunks are gathered up to the limit, and the last call answers. A body whose
/// declared length is over the limit is answered on the first call, without waiting for bytes that will not be read
/// (libmicrohttpd then closes the connection).
private let accessHandler: MHD_AccessHandlerCallback = {
    context, connection, url, method, _, uploadData, uploadSize, requestContext in
    guard let context, let connection, let requestContext, let uploadSize else { return mf_no }
    let server = Unmanaged<HTTPServer.Context>.fromOpaque(context).takeUnretainedValue()
    guard let existing = requestContext.pointee else {
        let state = HTTPServer.RequestState()
        requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
        let declared = MHD_lookup_connection_value(connection, mf_header_kind, "Content-Length")
            .flatMap { Int(String(cString: $0)) }
        guard let declared, declared > server.maxBody else { return mf_yes }
        state.tooLarge = true
        return answer(connection, url, method, state, server)
    }
    let state = Unmanaged<HTTPServer.RequestState>.fromOpaque(existing).takeUnretainedValue()
    if uploadSize.pointee > 0 {
        let count = uploadSize.pointee
        if !state.tooLarge, state.body.count + count <= server.maxBody, let uploadData {
            uploadData.withMemoryRebound(to: UInt8.self, capacity: count) {
                state.body.append(contentsOf: UnsafeBufferPointer(start: $0, count: count))
            }
        } else {
            state.tooLarge = true
            state.body = []
        }
        uploadSize.pointee = 0
        return mf_yes
    }
    return answer(connection, url, method, state, server)
}

/// Hands the request, as far as it was read, to the handler and queues its answer.
private func answer(
    _ connection: OpaquePointer, _ url: UnsafePointer<CChar>?, _ method: UnsafePointer<CChar>?,
    _ state: HTTPServer.RequestState, _ server: HTTPServer.Context
) -> MHD_Result {
    var headers: [String: String] = [:]
    for (name, value) in values(connection, mf_header_kind) { headers[name.lowercased()] = value }
    let request = HTTPServer.Request(
        method: method.map { String(cString: $0) } ?? "GET",
        path: url.map { String(cString: $0) } ?? "/",
        query: values(connection, mf_argument_kind).map { (name: $0.0, value: $0.1) },
        headers: headers, body: state.body, bodyTooLarge: state.tooLarge)
    let response = server.handler(request)
    return queue(response, on: connection, server)
}

private let completedHandler: MHD_RequestCompletedCallback = { _, _, requestContext, _ in
    guard let requestContext, let state = requestContext.pointee else { return }
    Unmanaged<HTTPServer.RequestState>.fromOpaque(state).release()
    requestContext.pointee = nil
}

private let streamReader: MHD_ContentReaderCallback = { context, _, buffer, max in
    guard let context, let buffer else { return mf_reader_end_with_error }
    let stream = Unmanaged<EventStream>.fromOpaque(context).takeUnretainedValue()
    return stream.read(into: UnsafeMutableRawPointer(buffer), max: max)
}

private let streamFreed: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    let stream = Unmanaged<EventStream>.fromOpaque(context).takeRetainedValue()
    stream.close()
    stream.onFinish?()
    stream.cleanup?()
}

private func queue(
    _ response: HTTPServer.Response, on connection: OpaquePointer, _ server: HTTPServer.Context
)
    -> MHD_Result
{
    let made: OpaquePointer?
    switch response.body {
    case .bytes(let bytes):
        made = bytes.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(
                raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), mf_must_copy)
        }
    case .file(let descriptor, let offset, let length):
        made = MHD_create_response_from_fd_at_offset64(UInt64(length), descriptor, UInt64(offset))
        if made == nil { close(descriptor) }
    case .stream(let stream):
        let id = ObjectIdentifier(stream)
        server.streams.withLock { $0[id] = stream }
        stream.onFinish = { [weak server] in _ = server?.streams.withLock { $0.removeValue(forKey: id) } }
        made = MHD_create_response_from_callback(
            mf_size_unknown, 4096, streamReader, Unmanaged.passRetained(stream).toOpaque(), streamFreed)
    }
    guard let made else { return mf_no }
    for (name, value) in response.headers { MHD_add_response_header(made, name, value) }
    let result = MHD_queue_response(connection, UInt32(response.status), made)
    MHD_destroy_response(made)
    return result
}

/// A server-sent events body: text and changed downloads handed over by any thread, read by the connection's
/// thread, which waits for the next event (sending a comment every 15 s so that proxies and the client know the
/// stream is alive).
///
/// A change costs its sender only a dictionary write: the connection's own thread turns changes into text, so a
/// watcher's JSON never runs on the pipeline's (or the transport's) threads. Changes of one download that wait
/// are merged into its latest, which also bounds what a slow reader can leave unread. Changes go out together, at
/// most one message every ``interval``: a change after a quiet spell goes at once, and a busy run's thousands of
/// changes a second become a few messages, which is what a browser on the same cores can afford to read.
final class EventStream: @unchecked Sendable {
    /// The shortest time between two messages of changes. Each message costs a browser on the same cores a frame
    /// (about 6-8 ms of its CPU on the benchmark's machine, whatever changed); 150 ms cut a watching Chromium's
    /// CPU by 10-20% but moved the run's time by nothing measurable, and put the page's latency at 155 ms instead
    /// of 105 (Benchmarks/README.md, "Serving the web app").
    static let interval: TimeInterval = 0.1

    private let condition = NSCondition()
    private var buffer: [UInt8] = []
    /// How much of `buffer` the connection has taken already: the rest is sent from there, without moving it.
    private var sent = 0
    private var pending: [String: Int] = [:]
    private var changes: [(download: Download, at: Double)] = []
    /// When the last message of changes was made, on the monotonic clock (a step of the wall clock must not
    /// hold messages back).
    private var lastFlush: ContinuousClock.Instant?
    private var closed = false
    /// Turns changes, oldest first, into one event's text (set before the stream is handed to the server).
    var render: (@Sendable ([(download: Download, at: Double)]) -> String)?
    /// Called once the connection has let the stream go: the server's own bookkeeping, and the producer's.
    var onFinish: (@Sendable () -> Void)?
    var cleanup: (@Sendable () -> Void)?

    func send(_ text: String) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return }
        buffer.append(contentsOf: text.utf8)
        condition.signal()
    }

    /// A download changed at `at` (milliseconds since 1970). A change that waits keeps the time of the first
    /// change it replaced, so the time an event carries is never later than the oldest progress it reports.
    func send(_ download: Download, at: Double) {
        condition.lock()
        defer { condition.unlock() }
        guard !closed else { return }
        if let index = pending[download.id] {
            changes[index].download = download
        } else {
            pending[download.id] = changes.count
            changes.append((download, at))
        }
        // Only the first change wakes the reader: the ones after it wait for the same message, and waking the
        // connection's thread for each of thousands a second would cost more than sending them.
        if changes.count == 1 { condition.signal() }
    }

    func close() {
        condition.lock()
        closed = true
        condition.broadcast()
        condition.unlock()
    }

    fileprivate func read(into destination: UnsafeMutableRawPointer, max: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        while buffer.isEmpty && !closed {
            if !changes.isEmpty {
                let waited = lastFlush.map { ContinuousClock.now - $0 } ?? .seconds(Self.interval)
                if waited >= .seconds(Self.interval) { break }
                // Waits out the interval; text (a snapshot) or closing ends the wait early.
                let left = Self.interval - Self.seconds(waited)
                _ = condition.wait(until: Date(timeIntervalSinceNow: left))
                continue
            }
            if !condition.wait(until: Date(timeIntervalSinceNow: 15)) && buffer.isEmpty && changes.isEmpty {
                buffer.append(contentsOf: ": keep-alive\n\n".utf8)
            }
        }
        if buffer.isEmpty && !changes.isEmpty, let render {
            let batch = changes
            changes.removeAll(keepingCapacity: true)
            pending.removeAll(keepingCapacity: true)
            lastFlush = ContinuousClock.now
            // Rendered without the lock: senders never wait for JSON.
            condition.unlock()
            let text = render(batch)
            condition.lock()
            buffer.append(contentsOf: text.utf8)
        }
        if buffer.isEmpty { return mf_reader_end_of_stream }
        let count = min(max, buffer.count - sent)
        buffer.withUnsafeBytes { bytes in
            if let base = bytes.baseAddress { destination.copyMemory(from: base + sent, byteCount: count) }
        }
        sent += count
        if sent == buffer.count {
            buffer.removeAll(keepingCapacity: true)
            sent = 0
        }
        return count
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}

/// `mediafetch serve` could not start, or was asked for something it cannot do.
public struct ServeError: Error, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }
}
