import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// The page in a real browser: headless Chromium driven by Selenium (browser/serve_page.py) against
/// `mediafetch serve` run as its own process over the mock catalog (real AAC previews, a hostile title, previews
/// sent slowly so progress is seen), with a restart of serve in between. Saves a screenshot; with
/// `UPDATE_SCREENSHOT=1`, the README's (Documentation/serve-screenshot.png).
@Suite(.serialized) struct BrowserTests {
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let chromium = RequiredProgram("chromium", debianPackage: "chromium")
    static let chromedriver = RequiredProgram("chromedriver", debianPackage: "chromium-driver")

    /// `mediafetch` beside the test bundle in the build folder.
    static func binary() throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("mediafetch")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        let built = packageRoot.appendingPathComponent(".build/debug/mediafetch")
        try #require(FileManager.default.isExecutableFile(atPath: built.path), "build mediafetch first")
        return built
    }

    /// Selenium's Python, in the virtual environment Scripts/install-python-tools makes.
    static func seleniumPython() throws -> URL {
        let python = packageRoot.appendingPathComponent(".build/tools/bin/python")
        let probe = Process()
        probe.executableURL = python
        probe.arguments = ["-c", "import selenium"]
        probe.standardError = FileHandle.nullDevice
        let runs = FileManager.default.isExecutableFile(atPath: python.path) && (try? probe.run()) != nil
        if runs { probe.waitUntilExit() }
        guard runs, probe.terminationStatus == 0 else {
            throw SeleniumMissing(python: python.path)
        }
        return python
    }

    /// `mediafetch serve` as a child, its output in files.
    final class ServeProcess {
        let process = Process()
        let output: URL

        init(binary: URL, config: URL, port: Int, token: String, folder: URL, generation: Int) throws {
            output = folder.appendingPathComponent("serve-\(generation).out")
            _ = FileManager.default.createFile(atPath: output.path, contents: nil)
            process.executableURL = binary
            process.arguments = ["serve", config.path, "--port", String(port), "--token", token]
            process.currentDirectoryURL = folder
            process.standardOutput = try FileHandle(forWritingTo: output)
            process.standardError = try FileHandle(
                forWritingTo: {
                    let url = folder.appendingPathComponent("serve-\(generation).err")
                    _ = FileManager.default.createFile(atPath: url.path, contents: nil)
                    return url
                }())
            try process.run()
        }

        /// The URL serve printed first, once it has (generous bound).
        func url() async throws -> URL {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
                if let line = text.split(separator: "\n").first, let url = URL(string: String(line)) { return url }
                guard process.isRunning else { break }
                try await Task.sleep(for: .milliseconds(20))
            }
            throw ServeStartFailure(output: (try? String(contentsOf: output, encoding: .utf8)) ?? "")
        }

        /// Ctrl-C, then waits for the exit.
        func stop() async {
            guard process.isRunning else { return }
            process.interrupt()
            let deadline = ContinuousClock.now + .seconds(60)
            while process.isRunning, ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(20)) }
            if process.isRunning { process.terminate() }
        }
    }

    struct SeleniumMissing: Error, CustomStringConvertible {
        var python: String
        var description: String {
            "selenium is not installed in \(python); install it with `Scripts/install-python-tools` (PyPI's selenium "
                + "into .build/tools), or run `Scripts/test`, which installs everything the tests need"
        }
    }

    struct ServeStartFailure: Error, CustomStringConvertible {
        var output: String
        var description: String { "mediafetch serve printed no URL: \(output)" }
    }

    @Test func searchDownloadPauseResumeCancelRestartAndPlayInChromium() async throws {
        _ = try Self.chromium.locate()
        _ = try Self.chromedriver.locate()
        let python = try Self.seleniumPython()
        let hostile = MockSong(
            trackId: 1_999_999_001, artistName: "</td><b>Bold</b> & \"Quotes\" 日本語",
            collectionName: "Album \u{202E}desrever",
            trackName: "Love <img src=x onerror=\"window.__pwned=1\"><script>window.__pwned=2</script>")
        let catalog = try MockCatalogServer(
            catalog: MockCatalog(songs: [hostile] + MockCatalog.standard.songs, servesRealAudio: true))
        // Slow previews (a few seconds each), so that a progress bar is seen moving and a row can be paused mid-way
        // on a loaded machine too.
        catalog.setFaultHook { $0.path.hasSuffix(".m4a") ? .drip(bytesPerSecond: 2_000) : nil }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("browser-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let config = folder.appendingPathComponent("serve.yaml")
        try """
        source: {use: itunes, term: unused, endpoint: "\(catalog.baseURL.absoluteString)", requests-per-minute: 0}
        transport: {use: curl, concurrency: 4}
        sink: {use: directory, path: library}
        state: state
        """.write(to: config, atomically: true, encoding: .utf8)
        let token = "browser-test-token-0123456789"
        let binary = try Self.binary()
        var serve = try ServeProcess(
            binary: binary, config: config, port: 0, token: token, folder: folder, generation: 1)
        let url = try await serve.url()
        let port = try #require(url.port)

        // The README's picture when asked for (UPDATE_SCREENSHOT=1), so that a test run leaves the tree as it was.
        let screenshot =
            ProcessInfo.processInfo.environment["UPDATE_SCREENSHOT"] == "1"
            ? Self.packageRoot.appendingPathComponent("Documentation/serve-screenshot.png")
            : folder.appendingPathComponent("serve-screenshot.png")
        let driver = Process()
        driver.executableURL = python
        driver.arguments = [
            Self.packageRoot.appendingPathComponent("Tests/MediaFetchServeTests/browser/serve_page.py").path,
            url.absoluteString, screenshot.path,
        ]
        let driverOutput = folder.appendingPathComponent("driver.out")
        let driverErrors = folder.appendingPathComponent("driver.err")
        _ = FileManager.default.createFile(atPath: driverOutput.path, contents: nil)
        _ = FileManager.default.createFile(atPath: driverErrors.path, contents: nil)
        driver.standardOutput = try FileHandle(forWritingTo: driverOutput)
        driver.standardError = try FileHandle(forWritingTo: driverErrors)
        let input = Pipe()
        driver.standardInput = input
        var environment = ProcessInfo.processInfo.environment
        environment["SE_OFFLINE"] = "true"
        driver.environment = environment
        try driver.run()

        var restarted = false
        let deadline = ContinuousClock.now + .seconds(400)
        while driver.isRunning, ContinuousClock.now < deadline {
            let said = (try? String(contentsOf: driverOutput, encoding: .utf8)) ?? ""
            if !restarted, said.contains("RESTART") {
                restarted = true
                await serve.stop()
                serve = try ServeProcess(
                    binary: binary, config: config, port: port, token: token, folder: folder, generation: 2)
                _ = try await serve.url()
                input.fileHandleForWriting.write(Data("RESTARTED\n".utf8))
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        if driver.isRunning { driver.terminate() }
        await serve.stop()
        let said = (try? String(contentsOf: driverOutput, encoding: .utf8)) ?? ""
        let errors = (try? String(contentsOf: driverErrors, encoding: .utf8)) ?? ""
        #expect(restarted, "the page test never asked for the restart: \(said) \(errors)")
        #expect(driver.terminationStatus == 0, "\(errors.suffix(3000))")
        #expect(said.contains("OK"), "\(said) \(errors.suffix(2000))")
        #expect(FileManager.default.fileExists(atPath: screenshot.path))
        if let latency = said.split(separator: "\n").first(where: { $0.hasPrefix("LATENCY") }) {
            print("browser test: event \(latency)")
        }
    }
}
