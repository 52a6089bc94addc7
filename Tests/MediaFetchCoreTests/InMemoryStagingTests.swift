import Foundation
import MediaFetchCore
import Synchronization
import Testing

/// Small files for a sink that takes them in memory (``Sink/inMemoryStagingLimit``): they come as
/// ``StagedFile/contents`` with nothing in the staging folder, larger ones as files, and never more at once than
/// the run's budget.
struct InMemoryStagingTests {
    /// Serves each item's bytes (`size(id)`), in memory when the request allows it, else into the file.
    struct SizedTransport: Transport {
        let maxConcurrentTransfers = 4

        static func bytes(_ id: String) -> Data {
            let number = Int(id) ?? 0
            // Every fifth item is over the sink's limit.
            let size = number % 5 == 0 ? 2_000_000 : 1_000_000 + number
            return Data(repeating: UInt8(truncatingIfNeeded: number), count: size)
        }

        func send(_ request: HTTPRequest) async throws -> HTTPResponse {
            throw TransportError(.other, url: request.url)
        }

        func download(
            _ request: DownloadRequest, progress: @escaping @Sendable (DownloadProgress) -> Void
        ) async throws -> DownloadResult {
            let bytes = Self.bytes(request.url.lastPathComponent)
            let size = Int64(bytes.count)
            request.onResponse?(DownloadResponse(status: 200, validator: nil, expectedSize: size, restarts: false))
            let inMemory = request.resumeFrom == 0 && request.keepInMemory?(size) == true
            if !inMemory { try bytes.write(to: request.destination) }
            progress(DownloadProgress(received: size, expected: size))
            return DownloadResult(
                status: 200, headers: [:], url: request.url, bytesWritten: size, fileSize: size, validator: nil,
                restarted: false, contents: inMemory ? bytes : nil)
        }
    }

    /// Holds every store until `expected` have arrived (so that what is held in memory at once is all there),
    /// and records how each came.
    final class HoldingSink: Sink {
        struct Arrival: Sendable {
            var inMemory: Bool
            var fileAtPath: Bool
            var bytes: Data
            var sha256: String?
        }

        /// Stores held until this many have arrived; nil: none held.
        let expected: Int?
        let inMemoryStagingLimit: Int64 = 1_500_000
        let arrivals = Mutex<[String: Arrival]>([:])
        private let waiting = Mutex<[CheckedContinuation<Void, Never>]>([])

        init(expected: Int?) {
            self.expected = expected
        }

        var needsDigests: Bool { true }

        func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
            StoragePlan(item: item.ref, asset: asset, relativePath: "\(item.id).bin")
        }

        func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
            let onDisk = FileManager.default.fileExists(atPath: file.path)
            let bytes = try file.contents ?? Data(contentsOf: file.url)
            let arrival = Arrival(inMemory: file.contents != nil, fileAtPath: onDisk, bytes: bytes, sha256: file.sha256)
            let count = arrivals.withLock {
                $0[plan.relativePath] = arrival
                return $0.count
            }
            if let expected {
                await hold(until: count == expected)
            }
            if onDisk { try FileManager.default.removeItem(at: file.url) }
            return plan.relativePath
        }

        private func hold(until last: Bool) async {
            await withCheckedContinuation { continuation in
                let all = waiting.withLock {
                    $0.append(continuation)
                    return last ? $0 : nil
                }
                all?.forEach { $0.resume() }
            }
        }
    }

    /// Items 1 to `count` through the pipeline into `sink`, from ``SizedTransport``.
    static func run(_ count: Int, into sink: HoldingSink, concurrency: Int) async -> RunSummary {
        let staging = FileManager.default.temporaryDirectory.appendingPathComponent("in-memory-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: staging) }
        let items = (1...count).map { index in
            SourceOutput.item(
                MediaItem(
                    id: String(index), title: "Song \(index)", previewURL: URL(string: "http://127.0.0.1/\(index)")))
        }
        return await Pipeline(
            source: PipelineTests.ListSource(outputs: items), transport: SizedTransport(), sink: sink,
            options: .init(concurrency: concurrency, stagingDirectory: staging)
        ).run()
    }

    @Test func smallFilesComeInMemoryWithinTheBudgetAndTheRestAsFiles() async throws {
        let count = 20
        let sink = HoldingSink(expected: count)
        #expect(await Self.run(count, into: sink, concurrency: 4).stored == count)
        let arrivals = sink.arrivals.withLock { $0 }
        #expect(arrivals.count == count)
        for (path, arrival) in arrivals {
            let id = String(path.dropLast(4))
            let served = SizedTransport.bytes(id)
            #expect(arrival.bytes == served, "\(id): the bytes stored are not those served")
            #expect(arrival.sha256 == SHA256.hex(of: served), "\(id): the digest is not the bytes'")
            // One or the other, never both, and never a file over the limit in memory.
            #expect(
                arrival.inMemory != arrival.fileAtPath,
                "\(id): in memory \(arrival.inMemory), file \(arrival.fileAtPath)")
            if served.count > 1_500_000 { #expect(!arrival.inMemory, "\(id) is over the sink's limit") }
        }
        // Every store was held until all had arrived: what came in memory was all held at once.
        let heldInMemory = arrivals.values.filter(\.inMemory).reduce(0) { $0 + $1.bytes.count }
        #expect(heldInMemory > 0, "nothing came in memory")
        #expect(heldInMemory <= Pipeline.inMemoryStagingBudget, "\(heldInMemory) bytes held in memory at once")
        #expect(arrivals.values.contains { $0.fileAtPath && $0.bytes.count < 1_500_000 }, "the budget was not reached")
    }

    /// One at a time, far more bytes than the budget: each file's memory comes back once it is stored, so every
    /// small one comes in memory.
    @Test func theBudgetComesBackAfterEachStore() async throws {
        let count = 30
        let sink = HoldingSink(expected: nil)
        #expect(await Self.run(count, into: sink, concurrency: 1).stored == count)
        let arrivals = sink.arrivals.withLock { $0 }
        let small = arrivals.filter { $0.value.bytes.count < 1_500_000 }
        #expect(small.count == 24)
        #expect(Int64(small.values.reduce(0) { $0 + $1.bytes.count }) > Pipeline.inMemoryStagingBudget)
        let inMemory = small.values.filter { $0.inMemory }.count
        #expect(
            inMemory == small.count, "\(inMemory) of \(small.count) small files in memory: the budget did not come back")
        for (path, arrival) in arrivals {
            #expect(arrival.bytes == SizedTransport.bytes(String(path.dropLast(4))))
        }
    }
}
