import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// `mediafetch status CONFIG --follow` from another process: redraws while a run goes on, ends when it ends.
@Suite(.serialized) struct StatusFollowTests {
    @Test func followsABatchRunUntilItEnds() async throws {
        let catalog = try MockCatalogServer(catalog: MockCatalog.standard.withRealAudio())
        // Slow enough that the run lasts a few seconds, so that status sees it under way.
        catalog.setFaultHook { $0.path.hasSuffix(".m4a") ? .drip(bytesPerSecond: 5_000) : nil }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("follow-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let config = folder.appendingPathComponent("run.yaml")
        try """
            source:
              {use: itunes, term: love, max-items: 3, endpoint: "\(catalog.baseURL.absoluteString)", requests-per-minute: 0}
            transport: {use: curl, concurrency: 2}
            sink: {use: directory, path: out}
            state: state
            """.write(to: config, atomically: true, encoding: .utf8)
        let binary = try BrowserTests.binary()

        func child(_ arguments: [String], _ name: String) throws -> (Process, URL) {
            let process = Process()
            process.executableURL = binary
            process.arguments = arguments
            let output = folder.appendingPathComponent(name)
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            process.standardOutput = try FileHandle(forWritingTo: output)
            process.standardError = try FileHandle(forWritingTo: output)
            try process.run()
            return (process, output)
        }

        let (run, _) = try child(["run", config.path, "--quiet"], "run.out")
        let lock = folder.appendingPathComponent("state/lock")
        let deadline = ContinuousClock.now + .seconds(60)
        while (try? String(contentsOf: lock, encoding: .utf8))?.contains(String(run.processIdentifier)) != true,
            run.isRunning, ContinuousClock.now < deadline
        {
            try await Task.sleep(for: .milliseconds(10))
        }
        let (status, statusOutput) = try child(["status", config.path, "--follow"], "status.out")
        let end = ContinuousClock.now + .seconds(120)
        while status.isRunning || run.isRunning, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(20))
        }
        if status.isRunning { status.terminate() }
        #expect(run.terminationStatus == 0)
        #expect(status.terminationStatus == 0)
        let text = try String(contentsOf: statusOutput, encoding: .utf8)
        #expect(text.contains("a run is going on (process \(run.processIdentifier))"), "\(text)")
        let last = text.components(separatedBy: "\n\n").last ?? ""
        #expect(last.contains("stored: 3"), "\(last)")
        #expect(last.contains("no run is going on"), "\(last)")
        // Redrawn, not printed once: more than one status was shown.
        #expect(text.components(separatedBy: "stored: ").count > 2, "\(text)")
    }
}
