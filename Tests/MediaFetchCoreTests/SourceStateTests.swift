import Foundation
import Synchronization
import Testing

@testable import MediaFetchCore

/// The key-value store a source keeps in the ledger between runs.
@Suite(.removesScratch)
struct SourceStateTests {
    @Test func valuesSurviveReopeningAndAreScopedBySource() throws {
        let folder = try scratchFolder("state")
        let feed = Data("<rss/>".utf8)
        do {
            let ledger = try Ledger(directory: folder)
            let podcast = SourceState(ledger: ledger, source: "podcast")
            try podcast.set([("feed a", Data("{\"etag\":\"x\"}".utf8)), ("body a", feed), ("empty", Data())])
        }
        let ledger = try Ledger(directory: folder)
        let podcast = SourceState(ledger: ledger, source: "podcast")
        #expect(try podcast.value(forKey: "body a") == feed)
        #expect(try podcast.value(forKey: "empty") == Data())
        #expect(try podcast.value(forKey: "missing") == nil)
        #expect(try SourceState(ledger: ledger, source: "other").value(forKey: "body a") == nil)
        // A nil value removes its key; the others of the call are written with it.
        try podcast.set([("body a", nil), ("feed a", Data("2".utf8))])
        #expect(try podcast.value(forKey: "body a") == nil)
        #expect(try podcast.value(forKey: "feed a") == Data("2".utf8))
    }

    @Test func aRefetchReadsNothingButStillWrites() throws {
        let ledger = try Ledger(directory: try scratchFolder("state"))
        try SourceState(ledger: ledger, source: "podcast").set([("k", Data("old".utf8))])
        let refetching = SourceState(ledger: ledger, source: "podcast", readsStoredValues: false)
        #expect(try refetching.value(forKey: "k") == nil)
        try refetching.set([("k", Data("new".utf8))])
        #expect(try SourceState(ledger: ledger, source: "podcast").value(forKey: "k") == Data("new".utf8))
    }

    @Test func cleanAllForgetsIt() throws {
        let ledger = try Ledger(directory: try scratchFolder("state"))
        let state = SourceState(ledger: ledger, source: "podcast")
        try state.set([("k", Data("v".utf8))])
        try ledger.removeAll()
        #expect(try state.value(forKey: "k") == nil)
    }

    @Test func aLedgerOfSchemaFourGainsTheStoreAndKeepsItsRows() throws {
        let (folder, path) = try LedgerTests.oldLedger(
            version: 4,
            row: "INSERT INTO items (source, item_id, asset, url, status, updated_at) "
                + "VALUES ('podcast', 'e1', 'preview', 'http://127.0.0.1/e1.mp3', 'stored', 0)")
        let ledger = try Ledger(directory: folder)
        #expect(try ledger.entry(LedgerKey(source: "podcast", itemID: "e1", asset: .preview))?.status == .stored)
        try SourceState(ledger: ledger, source: "podcast").set([("k", Data([0, 1, 2]))])
        #expect(try SourceState(ledger: ledger, source: "podcast").value(forKey: "k") == Data([0, 1, 2]))
        #expect(try SQLiteDatabase(path: path).userVersion == Ledger.migrations.count)
    }

    @Test func aPipelineHandsTheSourceItsStore() async throws {
        let folder = try scratchFolder("state")
        let ledger = try Ledger(directory: folder)
        try SourceState(ledger: ledger, source: "remembering").set([("seen", Data("yes".utf8))])
        let source = RememberingSource()
        _ = await Pipeline(
            source: source, transport: RememberingSource.NoTransport(), sink: RememberingSource.NoSink(),
            options: .init(
                concurrency: 1, stagingDirectory: folder.appendingPathComponent("staging"),
                sourceName: "remembering", ledger: ledger)
        ).run()
        #expect(source.read.withLock { $0 } == Data("yes".utf8))
    }
}

/// A source that reads what an earlier run left in its store, and finds nothing to emit.
final class RememberingSource: Source {
    let read = Mutex<Data?>(nil)

    func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
        let value = try context.state?.value(forKey: "seen")
        read.withLock { $0 = value }
    }

    struct NoTransport: Transport {
        var maxConcurrentTransfers: Int { 1 }
        func send(_ request: HTTPRequest) async throws -> HTTPResponse {
            throw TransportError(.other, url: request.url)
        }
        func download(
            _ request: DownloadRequest, progress: @escaping @Sendable (DownloadProgress) -> Void
        ) async throws -> DownloadResult {
            throw TransportError(.other, url: request.url)
        }
    }

    struct NoSink: Sink {
        func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
            StoragePlan(item: item.ref, asset: asset, relativePath: item.id)
        }
        func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String { plan.relativePath }
    }
}
