import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// `kill -9` at random moments, then a re-run: every item stored exactly once with the right bytes,
/// nothing stored re-downloaded, partial bytes reused, the ledger telling the truth.
struct CrashTests {
    @Test(arguments: ["curl", "foundation"], ["directory", "tar"])
    func killedRunsLeaveNothingARerunCannotFinish(transport: String, sink: String) async throws {
        let server = try MockCatalogServer()
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let output = scratch.appendingPathComponent(sink == "tar" ? "out.tar" : "out")
        let state = scratch.appendingPathComponent("state")
        let count = 300
        let arguments =
            [
                "run", "config/demo.yaml", "--quiet",
                "--set", "source.endpoint=\(server.baseURL.absoluteString)",
                "--set", "source.term=a", "--set", "source.max-items=\(count)",
                "--set", "transport.use=\(transport)", "--set", "sink.use=\(sink)", "--set", "sink.path=\(output.path)",
                "--set", "state=\(state.path)", "--set", "download.verify=sha256",
            ] + (sink == "tar" ? ["--set", "sink.manifest=false", "--set", "sink.playlist=false"] : [])
        // Kill moments drawn from a fixed seed, spread over a run's length, so the test is the same each time.
        var random = SplitMix64(seed: 9)
        for _ in 0..<8 {
            let child = try CommandRunner.start(arguments)
            try await Task.sleep(for: .microseconds(random.next() % 600_000))
            kill(child.process.processIdentifier, SIGKILL)
            _ = try await child.wait()
        }

        let ledger = try Ledger(directory: state)
        let before = try ledger.entries()
        let storedBefore = Set(before.filter { $0.status == .stored }.map(\.url))
        let partialBefore = before.filter { $0.status != .stored }.count
        server.resetLog()
        let final = try await CommandRunner.run(arguments)
        #expect(final.status == 0, "\(final.stdout)\(final.stderr)")

        let catalog = server.catalog
        let songs = catalog.search(term: "a").prefix(count)
        let tree = try await sink == "tar" ? CommandRunner.extract(output, into: scratch) : CommandRunner.tree(output)
        #expect(tree.count == count)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: scratch.path).allSatisfy { !$0.contains(".partial-") })
        #expect(Set(tree.values) == Set(songs.map { Data(catalog.previewBytes(for: $0)) }))
        let entries = try Ledger(directory: state).entries()
        #expect(entries.count == count)
        for entry in entries {
            #expect(entry.status == .stored, "\(entry.key): \(entry.status)")
            let location = try #require(entry.location)
            #expect(SHA256.hex(of: tree[location] ?? Data()) == entry.sha256, "\(location)")
        }
        // What the ledger said was stored was not fetched again.
        let fetched = Set(server.requests.map { server.baseURL.absoluteString + $0.target })
        #expect(storedBefore.isDisjoint(with: fetched))
        if partialBefore > 0 {
            #expect(final.stdout.contains("stored"))
        }
    }
}
