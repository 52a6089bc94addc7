import CurlTransport
import Foundation
import MediaFetchCore
import Testing

/// The `ca-file` and `http2` options, against nginx serving https with a certificate from a throwaway authority.
@Suite("CurlTransport over https with a private certificate authority")
struct CurlTLSTests {
    @Test func trustsTheServerWhenGivenItsAuthorityAsCAFile() async throws {
        try await NginxServer.with(tls: true) { server in
            let tls = try #require(server.tls)
            let content = randomBytes(700_000, seed: 21)
            try server.serve(content, at: "files/a.bin")
            let transport = try CurlTransport(.init(caFile: tls.caFile.path))
            try await withTemporaryDirectory { directory in
                let destination = directory.appendingPathComponent("a.bin")
                let url = server.httpsBaseURL.appendingPathComponent("files/a.bin")
                let result = try await transport.download(DownloadRequest(url: url, destination: destination)) { _ in }
                #expect(result.status == 200)
                #expect(result.bytesWritten == Int64(content.count))
                #expect(try Data(contentsOf: destination) == content)
            }
            await transport.shutdown()
        }
    }

    @Test func refusesTheServerWithoutCAFileAndStoresNothing() async throws {
        try await NginxServer.with(tls: true) { server in
            try server.serve(randomBytes(10_000, seed: 22), at: "files/a.bin")
            let transport = try CurlTransport()
            try await withTemporaryDirectory { directory in
                let destination = directory.appendingPathComponent("a.bin")
                let url = server.httpsBaseURL.appendingPathComponent("files/a.bin")
                let error = await transportError {
                    try await transport.download(DownloadRequest(url: url, destination: destination)) { _ in }
                }
                #expect(error?.code == .connectionFailed)
                // libcurl's words: "SSL certificate problem: unable to get local issuer certificate".
                #expect(error?.description.contains("certificate problem") == true, "\(String(describing: error))")
                #expect(!FileManager.default.fileExists(atPath: destination.path))
            }
            await transport.shutdown()
            // The handshake failed, so nginx never saw that request: after one that is trusted (with the
            // CA), its log holds that one line only.
            let tls = try #require(server.tls)
            let trusting = try CurlTransport(.init(caFile: tls.caFile.path))
            _ = try await trusting.send(HTTPRequest(url: server.httpsBaseURL.appendingPathComponent("files/a.bin")))
            await trusting.shutdown()
            let lines = try server.logLines(server.tlsLog, atLeast: 1)
            #expect(lines.count == 1, "\(lines)")
        }
    }

    /// max-rate pauses downloads that share one HTTP/2 connection (PIPEWAIT, one engine): each must still
    /// finish, whole, at the limit: 1.2 MB at 2 MB/s, less one burst of 200 KB, is at least 0.5 s.
    @Test(.timeLimit(.minutes(1)))
    func maxRateWorksForDownloadsSharingAnHTTP2Connection() async throws {
        try await NginxServer.with(tls: true) { server in
            let tls = try #require(server.tls)
            let transport = try CurlTransport(
                .init(concurrency: 4, caFile: tls.caFile.path, http2: true, maxRate: 2_000_000, threads: 1))
            let contents = (0..<4).map { randomBytes(300_000, seed: 40 + UInt64($0)) }
            let urls = try server.serveOverHTTPS(contents, named: "files/r")
            let start = ContinuousClock.now
            try await withTemporaryDirectory { directory in
                try await downloadAll(urls, expecting: contents, into: directory, with: transport)
            }
            #expect(ContinuousClock.now - start >= .milliseconds(500))
            let lines = try server.logLines(server.tlsLog, atLeast: contents.count)
            #expect(lines.allSatisfy { $0.contains("HTTP/2.0") }, "\(lines)")
            await transport.shutdown()
        }
    }

    @Test func aMissingCAFileIsAnErrorThatNamesIt() async throws {
        try await NginxServer.with(tls: true) { server in
            try server.serve(randomBytes(10_000, seed: 23), at: "files/a.bin")
            let missing = server.directory.appendingPathComponent("no-such-ca.pem").path
            let transport = try CurlTransport(.init(caFile: missing))
            let url = server.httpsBaseURL.appendingPathComponent("files/a.bin")
            let error = await transportError { try await transport.send(HTTPRequest(url: url)) }
            #expect(error?.code == .connectionFailed)
            #expect(error?.description.contains(missing) == true, "\(String(describing: error))")
            await transport.shutdown()
        }
    }

    @Test(arguments: [(true, "HTTP/2.0"), (false, "HTTP/1.1")])
    func speaksTheHTTPVersionTheHTTP2OptionAsksFor(http2: Bool, expected: String) async throws {
        try await NginxServer.with(tls: true) { server in
            let tls = try #require(server.tls)
            let content = randomBytes(200_000, seed: 24)
            try server.serve(content, at: "files/a.bin")
            let transport = try CurlTransport(.init(caFile: tls.caFile.path, http2: http2))
            try await withTemporaryDirectory { directory in
                let destination = directory.appendingPathComponent("a.bin")
                let url = server.httpsBaseURL.appendingPathComponent("files/a.bin")
                _ = try await transport.download(DownloadRequest(url: url, destination: destination)) { _ in }
                #expect(try Data(contentsOf: destination) == content)
            }
            let lines = try server.logLines(server.tlsLog, atLeast: 1).map(TLSLogLine.init)
            #expect(lines.map(\.protocolName) == [expected])
            await transport.shutdown()
        }
    }

    /// Over HTTP/2 downloads running at once are streams of one connection; over HTTP/1.1 each needs its own.
    ///
    /// One engine thread, so one connection cache. The downloads start together, before any handshake has
    /// finished: over HTTP/2 they wait for the first connection (`CURLOPT_PIPEWAIT`) and share it, instead of
    /// each opening its own.
    @Test(arguments: [true, false])
    func concurrentDownloadsShareAConnectionOnlyOverHTTP2(http2: Bool) async throws {
        try await NginxServer.with(tls: true) { server in
            let tls = try #require(server.tls)
            let transport = try CurlTransport(.init(concurrency: 8, caFile: tls.caFile.path, http2: http2, threads: 1))
            // The server sends 64 KiB at once and then 64 KiB a second: each of these takes about a second,
            // long enough that all of them are in flight together.
            let contents = (0..<6).map { randomBytes(130_000, seed: 30 + UInt64($0)) }
            let urls = try server.serveOverHTTPS(contents, named: "slow/")
            try await withTemporaryDirectory { directory in
                try await downloadAll(urls, expecting: contents, into: directory, with: transport)
            }
            let lines = try server.logLines(server.tlsLog, atLeast: contents.count).map(TLSLogLine.init)
            try #require(lines.count == contents.count)
            let concurrent = lines.filter { $0.path.hasPrefix("/slow/") }
            // Every slow download started before any of them ended.
            let lastStart = try #require(concurrent.map(\.start).max())
            let firstEnd = try #require(concurrent.map(\.end).min())
            #expect(lastStart < firstEnd)
            let connections = Set(concurrent.map(\.connection))
            if http2 {
                #expect(lines.allSatisfy { $0.protocolName == "HTTP/2.0" })
                #expect(connections.count == 1)
            } else {
                #expect(lines.allSatisfy { $0.protocolName == "HTTP/1.1" })
                #expect(connections.count == contents.count)
            }
            await transport.shutdown()
        }
    }

    /// A handle whose HTTP/2 download ended while other streams still used its connection serves the next download.
    /// libcurl 7.88 refuses such a handle a new receive-buffer size (its clean-up stops early while the connection is
    /// in use), and the transport used to replace it: a handle made and freed for most downloads over HTTP/2. Six
    /// rounds of eight downloads at once use eight handles, and every body, larger than the 16 KiB a reused handle
    /// then reads at a time, arrives whole.
    @Test func http2DownloadsReuseTheirHandles() async throws {
        try await NginxServer.with(tls: true) { server in
            let tls = try #require(server.tls)
            let transport = try CurlTransport(.init(concurrency: 8, caFile: tls.caFile.path, http2: true, threads: 1))
            let contents = (0..<8).map { randomBytes(100_000, seed: 60 + UInt64($0)) }
            let urls = try server.serveOverHTTPS(contents, named: "files/reuse-")
            try await withTemporaryDirectory { directory in
                for round in 0..<6 {
                    let folder = directory.appendingPathComponent("\(round)")
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                    try await downloadAll(urls, expecting: contents, into: folder, with: transport)
                }
            }
            let lines = try server.logLines(server.tlsLog, atLeast: 48).map(TLSLogLine.init)
            #expect(lines.count == 48 && lines.allSatisfy { $0.protocolName == "HTTP/2.0" })
            #expect(transport.easyHandlesUsed == 8)
            await transport.shutdown()
        }
    }

    /// A handle whose HTTP/2 download failed is not reused when libcurl refuses it a new buffer size: the clean-up
    /// libcurl skipped may also keep bytes it held for that transfer (one stopped while paused by `max-rate`), which
    /// the next transfer to pause would write out as its own. Of eight downloads at once that time out, all but the
    /// last to end leave their handles behind (the last finds its connection free, and libcurl's clean-up runs
    /// whole), and the eight after them, which arrive whole, take new ones for those: more than eight handles in all.
    @Test func failedHTTP2DownloadsDoNotPassOnTheirHandles() async throws {
        try await NginxServer.with(tls: true) { server in
            let tls = try #require(server.tls)
            let transport = try CurlTransport(
                .init(concurrency: 8, timeout: .milliseconds(1500), caFile: tls.caFile.path, http2: true, threads: 1))
            // nginx sends 64 KiB of each at once and then 64 KiB a second: none ends within three seconds, and the
            // files after them have a second and a half on a busy machine.
            let slow = try server.serveOverHTTPS(
                (0..<8).map { randomBytes(300_000, seed: 80 + UInt64($0)) }, named: "slow/stopped-")
            let contents = (0..<8).map { randomBytes(100_000, seed: 90 + UInt64($0)) }
            let urls = try server.serveOverHTTPS(contents, named: "files/after-")
            try await withTemporaryDirectory { directory in
                try await withThrowingTaskGroup(of: TransportError?.self) { group in
                    for (index, url) in slow.enumerated() {
                        group.addTask {
                            let request = DownloadRequest(
                                url: url, destination: directory.appendingPathComponent("stopped-\(index).part"))
                            return await transportError { try await transport.download(request) { _ in } }
                        }
                    }
                    for try await error in group { #expect(error?.code == .timedOut) }
                }
                try await downloadAll(urls, expecting: contents, into: directory, with: transport)
            }
            #expect(transport.easyHandlesUsed > 8)
            await transport.shutdown()
        }
    }
}

extension NginxServer {
    /// Serves each of `contents` at `<prefix><index>.bin` and answers their https URLs, in order.
    fileprivate func serveOverHTTPS(_ contents: [Data], named prefix: String) throws -> [URL] {
        try contents.indices.map { index in
            try serve(contents[index], at: "\(prefix)\(index).bin")
            return httpsBaseURL.appendingPathComponent("\(prefix)\(index).bin")
        }
    }
}

/// One line of ``NginxServer/tlsLog``: `$connection $server_protocol $msec $request_time $status $request_uri`.
private struct TLSLogLine {
    var connection: String
    var protocolName: String
    /// When nginx finished the request, and when it began (seconds, to the millisecond).
    var end: Double
    var start: Double
    var path: String

    init(_ line: String) throws {
        let fields = line.split(separator: " ").map(String.init)
        guard fields.count == 6, let end = Double(fields[2]), let duration = Double(fields[3]) else {
            throw ServerError("not a line of the TLS log: \(line)")
        }
        connection = fields[0]
        protocolName = fields[1]
        self.end = end
        start = end - duration
        path = fields[5]
    }
}
