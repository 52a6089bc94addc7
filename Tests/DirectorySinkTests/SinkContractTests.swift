import DirectorySink
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// The directory sink keeps the public ``SinkContract``, through the same function a third party calls, with
/// durable stores and without; and the contract catches a sink that writes in place.
struct DirectorySinkContractTests {
    @Test(arguments: [true, false])
    func theDirectorySinkKeepsTheContract(sync: Bool) async throws {
        try await SinkContract.run { root in
            DirectorySink(root: root, layout: try LayoutTemplate(LayoutTemplate.defaultLayout), sync: sync)
        }
    }

    @Test func theDirectorySinkWithItsCollectionExtrasKeepsTheContract() async throws {
        try await SinkContract.run { root in
            DirectorySink(
                root: root, layout: try LayoutTemplate(LayoutTemplate.defaultLayout),
                collection: CollectionOptions(writesManifest: true, writesPlaylist: true))
        }
    }

    /// A sink that copies the staged file straight to its final name, following whatever the path holds, is
    /// caught: a store that fails halfway leaves a partial file under a final name, and a planted link carries a
    /// file outside the root.
    @Test func aSinkThatWritesInPlaceIsCaught() async throws {
        let error = await #expect(throws: ContractFailure.self) {
            try await SinkContract.run(clauses: [.wholeOrAbsentDuringStores, .nothingOutsideTheRoot]) { root in
                InPlaceSink(root: root)
            }
        }
        #expect(error?.broken.map(\.clause).count == 2, "\(String(describing: error))")
    }
}

/// What not to do: names straight from the metadata, bytes written in pieces under the final name.
private struct InPlaceSink: Sink {
    let root: URL

    func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        StoragePlan(item: item.ref, asset: asset, relativePath: "\(item.artist ?? "")/\(item.title).m4a")
    }

    func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        let target = root.appendingPathComponent(plan.relativePath)
        try FileManager.default.createDirectory(
            at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
        let bytes = try Data(contentsOf: file.url)
        _ = FileManager.default.createFile(atPath: target.path, contents: nil)
        let handle = try FileHandle(forWritingTo: target)
        defer { try? handle.close() }
        // A large file meets a full disk halfway, and what was written stays under the final name.
        let end = bytes.count > 512 << 10 ? bytes.count / 2 : bytes.count
        for start in stride(from: 0, to: end, by: 64 << 10) {
            try handle.write(contentsOf: bytes[start..<min(start + (64 << 10), end)])
            await Task.yield()
        }
        if end < bytes.count { throw SinkError("no space left on the device") }
        return plan.relativePath
    }
}
