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
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("rate-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: file) }
        let start = ContinuousClock.now
        let result = try await transport.download(
            DownloadRequest(url: server.url(path: "/rate.bin"), destination: file)
        ) { _ in }
        #expect(ContinuousClock.now - start >= .milliseconds(500))
        #expect(result.fileSize == 1_500_000)
        await transport.shutdown()
    }
}
