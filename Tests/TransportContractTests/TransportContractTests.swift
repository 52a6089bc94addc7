import CurlTransport
import Foundation
import FoundationTransport
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// What every transport must do, checked against the loopback mock server. A new transport joins
/// by adding a case to ``TransportUnderTest``.
///
/// Named exceptions: none yet. A clause a transport cannot meet is listed in
/// ``TransportUnderTest/exceptions`` with the reason, never skipped silently.
enum TransportUnderTest: String, CaseIterable, CustomStringConvertible, Sendable {
    case curl
    case foundation

    var description: String { rawValue }

    /// - Parameter idleTimeout: how long a transfer may go without bytes (curl: its low-speed time).
    func make(
        concurrency: Int = 8, idleTimeout: Duration = .seconds(30), maxRedirects: Int = 10
    ) throws
        -> any Transport
    {
        switch self {
        case .curl:
            try CurlTransport(
                .init(concurrency: concurrency, lowSpeedLimit: 1, lowSpeedTime: idleTimeout, maxRedirects: maxRedirects)
            )
        case .foundation:
            FoundationTransport(.init(concurrency: concurrency, idleTimeout: idleTimeout, maxRedirects: maxRedirects))
        }
    }
}

@Suite(.serialized)
struct TransportContractTests {
    static let server: MockCatalogServer = {
        do {
            return try MockCatalogServer()
        } catch {
            fatalError("the mock server cannot start: \(error)")
        }
    }()

    static func scratchFile() -> URL {
        FileManager.default.temporaryDirectory.appendingPathComponent("contract-\(UUID().uuidString).part")
    }

    static func song(_ index: Int = 0) -> (url: URL, path: String, bytes: [UInt8]) {
        let song = server.catalog.songs[index]
        let path = server.catalog.previewPath(for: song)
        return (server.previewURL(for: song), path, server.catalog.previewBytes(for: song))
    }

    static func bytes(_ file: URL) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: file))
    }

    @Test(arguments: TransportUnderTest.allCases)
    func sendReturnsStatusHeadersAndBodyWhateverTheStatus(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        let search = try #require(URL(string: Self.server.baseURL.absoluteString + "/search?term=love&limit=3"))
        let response = try await transport.send(HTTPRequest(url: search))
        #expect(response.status == 200)
        #expect(response.headers["content-type"]?.hasPrefix("text/javascript") == true)
        #expect(String(decoding: response.body, as: UTF8.self).contains("\"resultCount\":3"))

        let missing = try await transport.send(HTTPRequest(url: Self.server.url(path: "/no/such/thing")))
        #expect(missing.status == 404)
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aDownloadStreamsTheExactBytesAndReportsTheValidator(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        let song = Self.song(1)
        let file = Self.scratchFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let reports = Mutex<[DownloadProgress]>([])
        let result = try await transport.download(DownloadRequest(url: song.url, destination: file)) { progress in
            reports.withLock { $0.append(progress) }
        }
        #expect(result.status == 200)
        #expect(result.fileSize == Int64(song.bytes.count))
        #expect(result.bytesWritten == Int64(song.bytes.count))
        #expect(!result.restarted)
        #expect(result.validator?.etag == Self.server.etag(path: song.path))
        #expect(try Self.bytes(file) == song.bytes)
        #expect(
            reports.withLock { $0.last }
                == DownloadProgress(
                    received: Int64(song.bytes.count),
                    expected: Int64(song.bytes.count)))
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aResumeWithTheSameValidatorAppendsAfterTheKeptBytes(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        let song = Self.song(2)
        let file = Self.scratchFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let kept = 100_000
        try Data(song.bytes[0..<kept]).write(to: file)
        let validator = Validator(etag: Self.server.etag(path: song.path))
        Self.server.resetLog()
        let result = try await transport.download(
            DownloadRequest(url: song.url, destination: file, resumeFrom: Int64(kept), validator: validator)
        ) { _ in }
        #expect(result.status == 206)
        #expect(!result.restarted)
        #expect(result.bytesWritten == Int64(song.bytes.count - kept))
        #expect(result.fileSize == Int64(song.bytes.count))
        #expect(try Self.bytes(file) == song.bytes)
        let request = try #require(Self.server.requests.last)
        #expect(request.headers["Range"] == "bytes=\(kept)-")
        #expect(request.headers["If-Range"] == validator.etag)
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aChangedResourceRestartsFromZeroCleanly(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        let song = Self.song(3)
        let file = Self.scratchFile()
        defer { try? FileManager.default.removeItem(at: file) }
        // Kept bytes that are not the file's: a splice would show.
        try Data(repeating: 0xAA, count: 50_000).write(to: file)
        let result = try await transport.download(
            DownloadRequest(url: song.url, destination: file, resumeFrom: 50_000, validator: Validator(etag: "\"old\""))
        ) { _ in }
        #expect(result.status == 200)
        #expect(result.restarted)
        #expect(result.fileSize == Int64(song.bytes.count))
        #expect(try Self.bytes(file) == song.bytes)
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func anErrorStatusLeavesTheKeptBytesAlone(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        let file = Self.scratchFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let kept = Data("kept bytes".utf8)
        try kept.write(to: file)
        let error = await #expect(throws: TransportError.self) {
            _ = try await transport.download(
                DownloadRequest(url: Self.server.url(path: "/missing.m4a"), destination: file, resumeFrom: 10)
            ) { _ in }
        }
        #expect(error?.status == 404)
        #expect(try Data(contentsOf: file) == kept)
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func redirectsAreFollowedOnlyToHTTP(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make(maxRedirects: 3)
        let song = Self.song(4)
        let file = Self.scratchFile()
        defer { try? FileManager.default.removeItem(at: file) }
        Self.server.setFaultHook { request in
            switch request.path {
            case "/moved.m4a": .redirect(status: 302, location: song.path)
            case "/to-file.m4a": .redirect(status: 302, location: "file:///etc/passwd")
            case "/to-ftp.m4a": .redirect(status: 301, location: "ftp://127.0.0.1/x.m4a")
            case "/loop.m4a": .redirect(status: 302, location: "/loop.m4a")
            default: nil
            }
        }
        defer { Self.server.setFaultHook(nil) }

        let result = try await transport.download(
            DownloadRequest(url: Self.server.url(path: "/moved.m4a"), destination: file)
        ) { _ in }
        #expect(result.url.path == song.path)
        #expect(try Self.bytes(file) == song.bytes)

        for path in ["/to-file.m4a", "/to-ftp.m4a"] {
            let error = await #expect(throws: TransportError.self, "\(path)") {
                _ = try await transport.download(DownloadRequest(url: Self.server.url(path: path), destination: file)) {
                    _ in
                }
            }
            guard case .unsupportedScheme = error?.code else {
                Issue.record("\(kind) \(path): expected a refused scheme, got \(String(describing: error))")
                continue
            }
        }
        let loop = await #expect(throws: TransportError.self) {
            _ = try await transport.download(
                DownloadRequest(url: Self.server.url(path: "/loop.m4a"), destination: file)
            ) { _ in }
        }
        guard case .tooManyRedirects = loop?.code else {
            Issue.record("\(kind): a redirect loop gave \(String(describing: loop))")
            return
        }
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aNonHTTPURLIsRefusedBeforeAnythingIsSent(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        for text in ["file:///etc/passwd", "ftp://127.0.0.1/x"] {
            let url = try #require(URL(string: text))
            await #expect(throws: TransportError.self) {
                _ = try await transport.download(DownloadRequest(url: url, destination: Self.scratchFile())) { _ in }
            }
            await #expect(throws: TransportError.self) { _ = try await transport.send(HTTPRequest(url: url)) }
        }
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aTruncatedOrResetBodyIsAnErrorNeverAShortSuccess(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        let song = Self.song(5)
        Self.server.setFaultHook { request in
            switch request.query("fault") {
            case "truncate": .truncate(afterBytes: 70_000)
            case "reset": .reset(afterBytes: 70_000)
            default: nil
            }
        }
        defer { Self.server.setFaultHook(nil) }
        for fault in ["truncate", "reset"] {
            let file = Self.scratchFile()
            defer { try? FileManager.default.removeItem(at: file) }
            let url = try #require(URL(string: song.url.absoluteString + "?fault=\(fault)"))
            await #expect(throws: TransportError.self, "\(kind) \(fault)") {
                _ = try await transport.download(DownloadRequest(url: url, destination: file)) { _ in }
            }
            // What arrived is kept for a resume, and is a true prefix of the file.
            let partial = (try? Self.bytes(file)) ?? []
            #expect(partial.count < song.bytes.count)
            #expect(Array(song.bytes.prefix(partial.count)) == partial)
        }
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aStalledTransferEndsWithATimeout(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make(idleTimeout: .seconds(1))
        let song = Self.song(6)
        Self.server.setFaultHook { $0.path == song.path ? .stall(afterBytes: 10_000, seconds: 20) : nil }
        defer { Self.server.setFaultHook(nil) }
        let file = Self.scratchFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let error = await #expect(throws: TransportError.self) {
            _ = try await transport.download(DownloadRequest(url: song.url, destination: file)) { _ in }
        }
        #expect(error?.code == .timedOut)
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func cancellationReachesAnInFlightTransfer(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make()
        let song = Self.song(7)
        Self.server.setFaultHook { $0.path == song.path ? .stall(afterBytes: 20_000, seconds: 60) : nil }
        defer { Self.server.setFaultHook(nil) }
        let file = Self.scratchFile()
        defer { try? FileManager.default.removeItem(at: file) }
        let (firstBytes, arrived) = AsyncStream.makeStream(of: Void.self)
        let download = Task {
            try await transport.download(DownloadRequest(url: song.url, destination: file)) { _ in arrived.yield() }
        }
        // Cancel once bytes are flowing: the transfer is then surely in flight, and stalled.
        for await _ in firstBytes { break }
        download.cancel()
        let outcome = await download.result
        guard case .failure(let error) = outcome else {
            Issue.record("\(kind): a cancelled transfer succeeded")
            return
        }
        #expect(error is CancellationError || (error as? TransportError)?.code == .cancelled)
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func aHundredConcurrentTransfersAllArriveWhole(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make(concurrency: 100)
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("contract-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<100 {
                group.addTask {
                    let song = Self.song(index)
                    let file = directory.appendingPathComponent("\(index).m4a")
                    _ = try await transport.download(DownloadRequest(url: song.url, destination: file)) { _ in }
                    #expect(try Self.bytes(file) == song.bytes, "\(kind) transfer \(index)")
                }
            }
            try await group.waitForAll()
        }
        await transport.shutdown()
    }

    @Test(arguments: TransportUnderTest.allCases)
    func connectionsAreReusedAcrossTransfers(_ kind: TransportUnderTest) async throws {
        let transport = try kind.make(concurrency: 2)
        let before = Self.server.connectionsAccepted
        for index in 0..<20 {
            let file = Self.scratchFile()
            defer { try? FileManager.default.removeItem(at: file) }
            _ = try await transport.download(DownloadRequest(url: Self.song(index).url, destination: file)) { _ in }
        }
        // Twenty sequential transfers on a keep-alive connection need one or two connections, not twenty.
        #expect(Self.server.connectionsAccepted - before <= 2)
        await transport.shutdown()
    }
}
