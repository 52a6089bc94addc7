import CurlTransport
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

struct MaxRateTests {
    /// A lower bound only, which load can never break: 1.5 MB at 2 MB/s cannot arrive in under half a second.
    @Test func maxRateSlowsATransferDown() async throws {
        let server = try MockCatalogServer()
        server.addFile(path: "/rate.bin", size: 1_500_000, seed: 3)
        let transport = try CurlTransport(.init(concurrency: 1, maxRate: 2_000_000))
        try await withTemporaryDirectory { folder in
            let start = ContinuousClock.now
            let result = try await transport.download(
                DownloadRequest(url: server.url(path: "/rate.bin"), destination: folder.appendingPathComponent("rate"))
            ) { _ in }
            #expect(ContinuousClock.now - start >= .milliseconds(500))
            #expect(result.fileSize == 1_500_000)
        }
        await transport.shutdown()
    }

    /// The limit is for all downloads together, across both engine threads: four 500 KB files at 2 MB/s in
    /// all cannot arrive in under (2 MB - one burst of 200 KB) / 2 MB/s = 0.9 s. And the downloads take
    /// turns: had one of them taken the bandwidth while the others waited, it would have been done by about
    /// 0.3 s; sharing, even one that got the whole first burst needs (500 - 200) KB at 500 KB/s = 0.6 s.
    @Test(.timeLimit(.minutes(1)))
    func maxRateHoldsForAllDownloadsTogether() async throws {
        let server = try MockCatalogServer()
        for index in 0..<4 { server.addFile(path: "/rate\(index).bin", size: 500_000, seed: UInt64(index)) }
        let transport = try CurlTransport(.init(concurrency: 4, maxRate: 2_000_000))
        try await withTemporaryDirectory { folder in
            let start = ContinuousClock.now
            let results = try await withThrowingTaskGroup(of: (size: Int64, done: Duration).self) { group in
                for index in 0..<4 {
                    group.addTask {
                        let size = try await transport.download(
                            DownloadRequest(
                                url: server.url(path: "/rate\(index).bin"),
                                destination: folder.appendingPathComponent("\(index)"))
                        ) { _ in }.fileSize
                        return (size, ContinuousClock.now - start)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(ContinuousClock.now - start >= .milliseconds(900))
            #expect(results.map(\.size) == [500_000, 500_000, 500_000, 500_000])
            let firstDone = try #require(results.map(\.done).min())
            #expect(firstDone >= .milliseconds(500), "one download finished long before the others: \(results)")
            for index in 0..<4 {
                let bytes = try Data(contentsOf: folder.appendingPathComponent("\(index)"))
                #expect(bytes == Data(server.contentBytes(path: "/rate\(index).bin") ?? []))
            }
        }
        await transport.shutdown()
    }
}
