import Foundation
import MediaFetchCore
import Synchronization
import MediaFetchTesting
import Testing

@testable import CurlTransport

/// Bodies kept in memory (``DownloadRequest/keepInMemory``): what the s3 sink's small files take instead of the disk.
@Suite("CurlTransport: bodies kept in memory")
struct InMemoryBodyTests {
    @Test func aBodyAllowedInMemoryComesBackWithoutAFile() async throws {
        let transport = try CurlTransport(.init(concurrency: 4))
        try await NginxServer.with { server in
            let content = randomBytes(1_100_000, seed: 11)
            let url = try server.serve(content, at: "files/small.m4a")
            try await withTemporaryDirectory { directory in
                let destination = directory.appendingPathComponent("small.part")
                let asked = Mutex<[Int64]>([])
                var request = DownloadRequest(url: url, destination: destination)
                request.keepInMemory = { announced in
                    asked.withLock { $0.append(announced) }
                    return true
                }
                let result = try await transport.download(request) { _ in }
                #expect(asked.withLock { $0 } == [Int64(content.count)])
                #expect(result.contents == content)
                #expect(result.fileSize == Int64(content.count) && result.bytesWritten == Int64(content.count))
                #expect(!FileManager.default.fileExists(atPath: destination.path))
            }
        }
        await transport.shutdown()
    }

    /// More bodies than the arena holds at once: those that do not fit stream into their files, and every one is
    /// whole either way.
    @Test func bodiesBeyondTheArenaGoToTheirFiles() async throws {
        let transport = try CurlTransport(.init(concurrency: 16))
        try await NginxServer.with { server in
            let contents = (0..<24).map { randomBytes(1_000_000 + $0 * 1_000, seed: UInt64(100 + $0)) }
            let urls = try contents.indices.map { try server.serve(contents[$0], at: "files/\($0).m4a") }
            try await withTemporaryDirectory { directory in
                let results = try await withThrowingTaskGroup(of: (Int, DownloadResult).self) { group in
                    for index in urls.indices {
                        group.addTask {
                            var request = DownloadRequest(
                                url: urls[index], destination: directory.appendingPathComponent("\(index).part"))
                            request.keepInMemory = { _ in true }
                            return (index, try await transport.download(request) { _ in })
                        }
                    }
                    // Held until all are in, so that the arena runs out.
                    var results: [Int: DownloadResult] = [:]
                    for try await (index, result) in group { results[index] = result }
                    return results
                }
                let inMemory = results.values.filter { $0.contents != nil }.count
                #expect(inMemory > 0 && inMemory < contents.count, "\(inMemory) of \(contents.count) in memory")
                for (index, result) in results {
                    let file = directory.appendingPathComponent("\(index).part")
                    if let body = result.contents {
                        #expect(body == contents[index])
                        #expect(!FileManager.default.fileExists(atPath: file.path))
                    } else {
                        #expect(try Data(contentsOf: file) == contents[index])
                    }
                }
            }
        }
        await transport.shutdown()
    }

    /// Cancelled in the middle of a body kept in memory: what arrived is in the file, to resume from.
    @Test func aCancelledBodyKeptInMemoryLeavesWhatArrivedInTheFile() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let song = server.catalog.songs[7]
        let path = server.catalog.previewPath(for: song)
        let served = server.catalog.previewBytes(for: song)
        server.setFaultHook { $0.path == path ? .stall(afterBytes: 20_000, seconds: 60) : nil }
        let transport = try CurlTransport(.init(concurrency: 4))
        try await withTemporaryDirectory { directory in
            let destination = directory.appendingPathComponent("stalled.part")
            var request = DownloadRequest(url: server.previewURL(for: song), destination: destination)
            let asked = Mutex(false)
            request.keepInMemory = { _ in
                asked.withLock { $0 = true }
                return true
            }
            let (firstBytes, arrived) = AsyncStream.makeStream(of: Void.self)
            let download = Task { try await transport.download(request) { _ in arrived.yield() } }
            for await _ in firstBytes { break }
            download.cancel()
            let result = await download.result
            #expect(throws: (any Error).self) { try result.get() }
            #expect(asked.withLock { $0 })
            let kept = [UInt8]((try? Data(contentsOf: destination)) ?? Data())
            #expect(!kept.isEmpty && kept.count <= 20_000, "\(kept.count) bytes kept")
            #expect(kept == Array(served.prefix(kept.count)))
        }
        await transport.shutdown()
    }

    @Test func theArenaHandsOutPiecesAndMergesThemBack() throws {
        let arena = BodyArena(size: 1 << 20)
        #expect(arena.freeBytes == 1 << 20)
        let first = try #require(arena.take(300_000))
        let second = try #require(arena.take(300_000))
        let third = try #require(arena.take(300_000))
        #expect(arena.take(300_000) == nil, "a fourth piece of 300,000 bytes does not fit in 1 MiB")
        // Pieces do not overlap, and start on cache lines.
        let starts = [first, second, third].compactMap { $0.baseAddress.map { Int(bitPattern: $0) } }
        #expect(starts.count == 3 && starts.allSatisfy { $0 % 64 == 0 })
        #expect(starts[1] - starts[0] >= 300_000 && starts[2] - starts[1] >= 300_000)
        arena.give(second)
        arena.give(first)
        // The two given back merged: a piece of twice the size fits where they were.
        let merged = try #require(arena.take(600_000))
        #expect(merged.baseAddress == first.baseAddress)
        arena.give(third)
        arena.give(merged)
        #expect(arena.freeBytes == 1 << 20)
        #expect(arena.take((1 << 20) + 1) == nil)
        // An announced length is the server's word: none that is not a size takes anything (or traps).
        #expect(arena.take(.max) == nil && arena.take(-1) == nil)
        #expect(arena.freeBytes == 1 << 20)
    }
}
