import Foundation
import MediaFetchCore

/// An in-process HTTP/1.1 server on 127.0.0.1 that answers like Apple's iTunes Search API and serves the
/// preview and artwork files its records point at, for tests and for the CLI's offline `demo` and
/// `mock-server` commands.
///
/// ```swift
/// let server = try MockCatalogServer()            // random free port
/// let url = server.baseURL.appending(path: "search")  // http://127.0.0.1:PORT/search?term=love
/// defer { server.stop() }
/// ```
///
/// Endpoints: `GET /search` and `GET /lookup` (JSON as Apple sends it, `text/javascript; charset=utf-8`),
/// every song's `previewUrl` path, artwork at `/image/thumb/<collectionId>/<N>x<N>bb.jpg` for any N, the files
/// behind the catalog's recorded answers at `/recorded/...` (``MockRecordedAnswer``), and files added with
/// ``addFile(path:bytes:contentType:)`` or ``addFile(path:size:seed:contentType:)``. Files answer
/// GET and HEAD with `ETag`, `Last-Modified`, `Accept-Ranges` and single byte ranges (206, 416, `If-Range`), and
/// answer a conditional GET of the version they serve (`If-None-Match`, `If-Modified-Since`) with 304.
///
/// One accept thread plus one thread per connection, blocking sockets: independent of Swift concurrency, so
/// a test blocking its own threads cannot stall the server. Every request is logged (``requests``), and
/// ``setFaultHook(_:)`` makes chosen requests fail in chosen ways.
///
/// To serve until interrupted (the CLI's `mock-server`), call ``waitUntilStopped()`` on the main thread after
/// arranging for ``stop()`` on SIGINT, e.g. with `signal(SIGINT, SIG_IGN)` and a `DispatchSource`
/// signal source whose handler calls `server.stop()`.
public final class MockCatalogServer: Sendable {
    let core: MockServerCore

    /// Starts listening on 127.0.0.1 (or `address`).
    /// - Parameters:
    ///   - catalog: the songs to serve.
    ///   - port: 0 (the default) picks a free port; read it back from ``port``.
    ///   - address: the IPv4 address to listen on: 127.0.0.1 unless a test joins hosts by a network of its own
    ///     (network namespaces); ``baseURL`` names it.
    /// - Throws: ``MockServerError`` when the socket cannot be bound (e.g. the port is taken).
    public init(catalog: MockCatalog = .standard, port: UInt16 = 0, address: String = "127.0.0.1") throws {
        core = try MockServerCore(catalog: catalog, port: port, address: address)
    }

    deinit {
        core.stop()
    }

    /// Logs `request` as if it had arrived, and answers the fault the hook gives it (for ``ScriptedTransport``).
    func record(_ request: MockRequest) -> MockFault? { core.record(request) }

    /// What `request` asks for, before faults and ranges (for ``ScriptedTransport``).
    func resolve(_ request: MockRequest) -> MockRoute { core.resolve(request) }

    /// The port the server listens on.
    public var port: UInt16 { core.port }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    public var baseURL: URL { core.baseURL }

    /// The catalog being served.
    public var catalog: MockCatalog { core.catalog }

    /// Stops listening, closes every connection and returns once every server thread has ended. Safe to call
    /// more than once; `deinit` calls it too. Do not call it from inside a fault hook (the hook's thread would
    /// wait for itself).
    public func stop() {
        core.stop()
    }

    /// Blocks the calling thread until ``stop()`` has finished (from another thread or a signal handler's
    /// dispatch source). For serving until interrupted.
    public func waitUntilStopped() {
        core.waitUntilStopped()
    }

    // MARK: - Request log

    /// Every request received since start or the last ``resetLog()``, in arrival order.
    public var requests: [MockRequest] { core.requests }

    /// How many connections were accepted since start or the last ``resetLog()``.
    public var connectionsAccepted: Int { core.connectionsAccepted }

    /// Response body bytes (files, ranges of them, API answers; not headers) sent since start or the last
    /// ``resetLog()``, whether or not the client read them. Each piece is counted as it is handed to the socket,
    /// so a client that went away may be counted for up to 64 KiB per connection it never received.
    public var bytesServed: Int64 { core.bytesServed }

    /// Forgets logged requests and sets the connection count and ``bytesServed`` to zero. Connection numbers in later requests
    /// start again from 1 only for connections accepted after the reset.
    public func resetLog() {
        core.resetLog()
    }

    // MARK: - Faults

    /// Installs a hook asked about every request (after it is logged): return a ``MockFault`` to make that
    /// request go wrong, or nil to answer normally. Pass nil to remove the hook. The hook runs on a connection
    /// thread, possibly many at once: keep its state behind a lock.
    public func setFaultHook(_ hook: (@Sendable (MockRequest) -> MockFault?)?) {
        core.setFaultHook(hook)
    }

    // MARK: - Extra files

    /// Serves `bytes` at `path` (a decoded path such as `/files/a b.bin`), replacing an earlier file there.
    public func addFile(path: String, bytes: [UInt8], contentType: String = "application/octet-stream") {
        core.addFile(path: path, file: MockFile(content: MockContent(bytes: bytes), contentType: contentType))
    }

    /// Serves `size` generated bytes at `path`: deterministic from `seed`, produced while sending, so even a
    /// 512 MiB file costs no memory. Read expected bytes back with ``contentBytes(path:range:)``.
    public func addFile(path: String, size: Int64, seed: UInt64, contentType: String = "application/octet-stream") {
        core.addFile(path: path, file: MockFile(content: MockContent(size: size, seed: seed), contentType: contentType))
    }

    /// Stops serving a file added earlier.
    public func removeFile(path: String) {
        core.removeFile(path: path)
    }

    // MARK: - Expectations for tests

    /// The absolute URL of `path` on this server; `path` is used as given, so percent-encode it as needed.
    public func url(path: String) -> URL {
        URL(string: MockSong.trimmedBase(baseURL) + (path.hasPrefix("/") ? path : "/" + path)) ?? baseURL
    }

    /// The URL of `song`'s preview, as its `previewUrl` says.
    public func previewURL(for song: MockSong) -> URL {
        url(path: song.previewPath)
    }

    /// The size of the file served at `path` (a preview, artwork or added file), or nil when there is none.
    public func contentSize(path: String) -> Int64? {
        core.file(at: path)?.content.count
    }

    /// The bytes the server sends for `path` (all of them, or `range`), or nil when it serves no file there.
    /// For big generated files ask for ranges, not the whole.
    public func contentBytes(path: String, range: Range<Int64>? = nil) -> [UInt8]? {
        guard let file = core.file(at: path) else { return nil }
        return file.content.bytes(in: range ?? 0..<file.content.count)
    }

    /// The `ETag` the server sends for `path` (quoted), or nil when it serves no file there.
    public func etag(path: String) -> String? {
        core.file(at: path)?.etag
    }

    /// The `Last-Modified` every served file carries.
    public static let lastModified = MockFile.lastModified
}
