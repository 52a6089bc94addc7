import CurlTransport
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// A finished easy handle serves the next transfer, reset (`curl_easy_reset`) and set up again: whatever the order, a
/// request carries nothing of the one before it. (Keeping a plain download's handle as it was for the next one saved
/// 2% of a small-file run's instructions, and carried libcurl's count of retries from transfer to transfer: see
/// ``retriesOnADroppedConnectionDoNotAddUpAcrossTransfers()``.)
@Suite("CurlTransport's reused handles")
struct HandleReuseTests {
    /// One transfer at a time on one engine, so that each takes the handle the one before it gave back.
    @Test func aReusedHandleCarriesNothingOfTheTransferBefore() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let paths = (0..<4).map { "/files/\($0).bin" }
        for (index, path) in paths.enumerated() {
            server.addFile(path: path, size: 40_000, seed: UInt64(index + 1))
        }
        let transport = try CurlTransport(.init(concurrency: 1, threads: 1))
        try await withTemporaryDirectory { directory in
            var count = 0
            /// Downloads `path` whole from the start, with `headers` of its own (none: a plain download), and checks
            /// the bytes.
            func download(_ path: String, headers: HTTPHeaders = [:]) async throws {
                count += 1
                var request = DownloadRequest(
                    url: server.url(path: path), destination: directory.appendingPathComponent("\(count).bin"))
                request.headers = headers
                let result = try await transport.download(request) { _ in }
                #expect(result.status == 200)
                #expect(try Data(contentsOf: request.destination) == Data(server.contentBytes(path: path) ?? []))
            }

            try await download(paths[0])
            // A resume: a range and the validator to resume against.
            let resumed = directory.appendingPathComponent("resumed.bin")
            try Data((server.contentBytes(path: paths[0]) ?? []).prefix(1_000)).write(to: resumed)
            let ranged = DownloadRequest(
                url: server.url(path: paths[0]), destination: resumed, resumeFrom: 1_000,
                validator: Validator(etag: server.etag(path: paths[0])))
            #expect(try await transport.download(ranged) { _ in }.status == 206)
            try await download(paths[1])
            // A header of its own, then a HEAD and a GET that may be compressed.
            try await download(paths[2], headers: ["X-Only-Once": "1"])
            try await download(paths[2])
            let head = try await transport.send(HTTPRequest(method: .head, url: server.url(path: paths[3])))
            #expect(head.status == 200 && head.body.isEmpty)
            try await download(paths[3])
            _ = try await transport.send(HTTPRequest(url: server.url(path: paths[1])))
            try await download(paths[1])
            // A plain download redirected elsewhere, then another from its own URL.
            server.setFaultHook { $0.path == "/moved.bin" ? .redirect(status: 302, location: paths[3]) : nil }
            let moved = DownloadRequest(
                url: server.url(path: "/moved.bin"), destination: directory.appendingPathComponent("moved.bin"))
            let redirected = try await transport.download(moved) { _ in }
            #expect(redirected.url == server.url(path: paths[3]))
            try await download(paths[0])
            // A plain download cut off in its body, then another on the handle it leaves.
            server.setFaultHook { $0.path == paths[2] ? .reset(afterBytes: 10_000) : nil }
            await #expect(throws: TransportError.self) { try await download(paths[2]) }
            server.setFaultHook(nil)
            try await download(paths[3])
        }
        await transport.shutdown()

        let requests = server.requests
        try #require(requests.count == 14)
        let plain = [0, 2, 4, 6, 8, 9, 10, 11, 12, 13].map { requests[$0] }
        for request in plain {
            #expect(request.method == "GET", "\(request.target)")
            #expect(request.headers["Range"] == nil && request.headers["If-Range"] == nil, "\(request.target)")
            #expect(request.headers["X-Only-Once"] == nil, "\(request.target)")
            #expect(request.headers["Accept-Encoding"] == "identity", "\(request.target)")
        }
        #expect(requests[1].headers["Range"] == "bytes=1000-")
        #expect(requests[3].headers["X-Only-Once"] == "1")
        #expect(requests[5].method == "HEAD")
        #expect(requests[7].method == "GET" && requests[7].headers["Accept-Encoding"] != "identity")
        #expect(requests.suffix(5).map(\.path) == ["/moved.bin", paths[3], paths[0], paths[2], paths[3]])
    }

    /// A kept connection the server has dropped is tried again on a fresh one, up to five times a transfer. libcurl
    /// 7.88 counts those retries in the handle and only `curl_easy_reset` sets the count back, so a handle reused
    /// without it failed its sixth retry in all ("Connection died, tried 5 times before giving up") however few each
    /// transfer made.
    @Test func retriesOnADroppedConnectionDoNotAddUpAcrossTransfers() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        server.addFile(path: "/files/a.bin", size: 20_000, seed: 7)
        // Every request after the first on a connection finds it closed: each download but the first retries once.
        server.setFaultHook { $0.sequenceOnConnection > 1 ? .dropConnection : nil }
        let transport = try CurlTransport(.init(concurrency: 1, threads: 1))
        try await withTemporaryDirectory { directory in
            for index in 0..<10 {
                let request = DownloadRequest(
                    url: server.url(path: "/files/a.bin"),
                    destination: directory.appendingPathComponent("\(index).bin"))
                let result = try await transport.download(request) { _ in }
                #expect(result.status == 200, "download \(index + 1)")
            }
        }
        await transport.shutdown()
        #expect(server.requests.filter { $0.sequenceOnConnection > 1 }.count == 9)
    }
}
