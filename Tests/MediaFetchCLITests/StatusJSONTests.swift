import Foundation
import MediaFetchCore
import Testing

@testable import MediaFetchCLI

/// `mediafetch status --json` writes the ledger's entries as they are read, a batch at a time, and the text is what
/// encoding them all at once gives.
struct StatusJSONTests {
    @Test func theListIsTheWholeArrayEncodedAtOnceAcrossBatches() async throws {
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let state = scratch.appendingPathComponent("state")
        let ledger = try Ledger(directory: state)
        // More than two batches, the last one short, with every status and some optional fields left out.
        let count = StatusCommand.jsonBatch * 2 + 7
        let url = URL(fileURLWithPath: "/x")
        for index in 0..<count {
            let key = LedgerKey(source: "s", itemID: String(format: "id %05d \"quoted\" é/ü", index), asset: .preview)
            ledger.begin(key, title: "Title \(index)", url: url)
            switch index % 4 {
            case 0: ledger.stored(key, StoredRecord(location: "dir/\(index).m4a", size: Int64(index), sha256: "ab"))
            case 1: ledger.failed(key, reason: "HTTP 404\nwith a line break", receivedBytes: 0)
            case 2:
                ledger.responded(key, validator: Validator(etag: "\"e\(index)\"", lastModified: nil), expectedBytes: 9)
                ledger.paused(key, receivedBytes: 3)
            default: break
            }
        }
        try ledger.flush()
        let whole = try RunCommand.jsonEncoder().encode(try ledger.entries().map(StatusEntry.init))
        let expected = String(decoding: whole, as: UTF8.self) + "\n"

        let arguments = ["status", "config/demo.yaml", "--json", "--set", "state=\(state.path)"]
        let listed = try await CommandRunner.run(arguments)
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout == expected)
        #expect(try JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [Any] != nil)

        try ledger.removeAll()
        let empty = try await CommandRunner.run(arguments)
        #expect(empty.stdout == "[]\n")
    }
}
