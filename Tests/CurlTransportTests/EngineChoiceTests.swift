import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import CurlTransport

/// Small bodies on the first engine alone, large ones on all: the choice, and what it does to the engines and
/// their connections against nginx.
@Suite("CurlTransport: one engine for small bodies")
struct EngineChoiceTests {
    @Test func smallBodiesChooseOneEngineAndLargeOnesAllOfThem() {
        var choice = EngineChoice()
        // Nothing changes before a window of bodies is in.
        for _ in 1..<EngineChoice.window {
            let changed = choice.record(bytes: 10_000)
            #expect(!changed && !choice.single)
        }
        let changed = choice.record(bytes: 10_000)
        #expect(changed && choice.single)
        // One large body among small ones moves nothing.
        #expect(!choice.record(bytes: 1_000_000) && choice.single)
        #expect(!choice.record(bytes: 10_000) && choice.single)
        // Each large body pulls the average a 32nd of the way up: a few in a row turn the choice.
        var changes = 0
        var large = 0
        while choice.single && large < 20 {
            if choice.record(bytes: 1_000_000) { changes += 1 }
            large += 1
        }
        #expect(!choice.single && changes == 1)
        #expect(large > 1 && large < 8, "\(large) large bodies turned the choice")
    }

    /// Sizes that alternate around the thresholds settle on one choice instead of flipping with every body.
    @Test func mixedSizesDoNotFlipTheChoiceEachTime() {
        var choice = EngineChoice()
        var changes = 0
        for index in 0..<1_000 where choice.record(bytes: index % 2 == 0 ? 40_000 : 120_000) {
            changes += 1
        }
        #expect(changes <= 1)
    }

    /// Many small files move every transfer onto the first engine, whose limits grow to the whole; the second
    /// closes its connections, so the host never holds more than `concurrency`. Large files bring the second back.
    @Test func smallFilesRunOnOneEngineAndLargeOnesOnBoth() async throws {
        let concurrency = 8
        let transport = try CurlTransport(.init(concurrency: concurrency, timeout: .seconds(60), threads: 2))
        try await NginxServer.with { server in
            let small = try (0..<240).map { try server.serve(randomBytes(2_000 + $0, seed: UInt64($0)), at: "s/\($0)") }
            let large = try (0..<40).map {
                try server.serve(randomBytes(300_000 + $0, seed: UInt64(500 + $0)), at: "l/\($0)")
            }
            try await withTemporaryDirectory { directory in
                try await download(small[..<120], into: directory, with: transport, atOnce: concurrency)
                #expect(transport.usesOneEngine)
                let before = transport.startedByEngine
                try await download(small[120...], into: directory, with: transport, atOnce: concurrency)
                let after = transport.startedByEngine
                #expect(after[0] - before[0] == 120 && after[1] == before[1], "\(before) then \(after)")
                try await expectConnections(atMost: concurrency, to: server.port)

                try await download(large[...], into: directory, with: transport, atOnce: concurrency)
                let last = transport.startedByEngine
                #expect(!transport.usesOneEngine)
                #expect(last[1] > after[1], "\(after) then \(last)")
                try await expectConnections(atMost: concurrency, to: server.port)
            }
        }
        await transport.shutdown()
    }

    /// A per-host limit below the whole keeps both engines, each with its share, whatever the sizes.
    @Test func aPerHostLimitKeepsTheEnginesSplit() async throws {
        let transport = try CurlTransport(.init(concurrency: 8, perHost: 4, timeout: .seconds(60), threads: 2))
        try await NginxServer.with { server in
            let small = try (0..<60).map { try server.serve(randomBytes(1_000, seed: UInt64($0)), at: "s/\($0)") }
            try await withTemporaryDirectory { directory in
                try await download(small[...], into: directory, with: transport, atOnce: 8)
            }
            #expect(!transport.usesOneEngine)
            #expect(transport.startedByEngine.allSatisfy { $0 > 0 }, "\(transport.startedByEngine)")
        }
        await transport.shutdown()
    }

    /// Downloads `urls`, `atOnce` at a time, each checked whole.
    private func download(
        _ urls: ArraySlice<URL>, into directory: URL, with transport: CurlTransport, atOnce: Int
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = urls.startIndex
            func add() {
                let index = next
                next += 1
                group.addTask {
                    let destination = directory.appendingPathComponent("\(index).bin")
                    let result = try await transport.download(DownloadRequest(url: urls[index], destination: destination)) { _ in }
                    #expect(result.status == 200)
                    #expect(result.bytesWritten == Int64((try? Data(contentsOf: destination))?.count ?? -1))
                }
            }
            while next < urls.endIndex && next - urls.startIndex < atOnce { add() }
            while try await group.next() != nil {
                if next < urls.endIndex { add() }
            }
        }
    }

    /// Waits (up to 10 s) until this host's open TCP connections to `port` on loopback are at most `limit`:
    /// connections are closed by the engine thread a moment after the transfers that the caller saw end.
    private func expectConnections(atMost limit: Int, to port: Int) async throws {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(10)
        var open = try establishedConnections(to: port)
        while open > limit && clock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            open = try establishedConnections(to: port)
        }
        #expect(open <= limit, "\(open) connections open to port \(port), at most \(limit) expected")
    }

    /// Connections in state ESTABLISHED whose remote end is `port` (the client side), from /proc/net/tcp (read to
    /// its end: the kernel makes it a page at a time, and a file of size 0 is read once by `String(contentsOfFile:)`).
    private func establishedConnections(to port: Int) throws -> Int {
        let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: "/proc/net/tcp"))
        defer { try? handle.close() }
        let table = String(decoding: try handle.readToEnd() ?? Data(), as: UTF8.self)
        let remote = String(format: ":%04X", port)
        return table.split(separator: "\n").dropFirst().filter { line in
            let fields = line.split(separator: " ")
            return fields.count > 3 && fields[2].hasSuffix(remote) && fields[3] == "01"
        }.count
    }
}
