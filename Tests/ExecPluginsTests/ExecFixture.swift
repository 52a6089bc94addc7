import ExecPlugins
import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// A scratch folder holding a config, the plugins it runs and what they store, and a mock server with files to
/// fetch: what every test of this target starts from.
final class ExecFixture {
    let folder: URL
    let server: MockCatalogServer
    /// The files the server serves for the `urls` list, in list order: `/files/f1.bin` ...
    let paths: [String]

    /// The package's top folder, where `Examples/exec` is.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    static func example(_ name: String) -> URL {
        packageRoot.appendingPathComponent("Examples/exec").appendingPathComponent(name)
    }

    /// - Parameter files: how many files the server serves and `urls.txt` lists.
    init(files: Int = 4) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("exec-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        server = try MockCatalogServer()
        paths = (1...max(1, files)).map { "/files/f\($0).bin" }
        for (index, path) in paths.enumerated() {
            server.addFile(path: path, size: Int64(40_000 + index * 7_001), seed: UInt64(index + 1))
        }
        try write("urls.txt", paths.map { server.url(path: $0).absoluteString }.joined(separator: "\n") + "\n")
    }

    deinit {
        server.stop()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Writes `text` to `name` in the folder.
    @discardableResult
    func write(_ name: String, _ text: String) throws -> URL {
        let url = folder.appendingPathComponent(name)
        try Data(text.utf8).write(to: url)
        return url
    }

    /// Writes an executable script.
    @discardableResult
    func script(_ name: String, _ text: String) throws -> URL {
        let url = try write(name, text)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: url.path)
        return url
    }

    /// The config `yaml` (in the folder, so relative paths are relative to it), loaded with the bundled plugins.
    func spec(_ yaml: String) throws -> PipelineSpec {
        try ConfigLoader.load(text: yaml, path: "exec.yaml", baseDirectory: folder, registry: BundledPlugins.registry)
    }

    /// A run of `yaml`, with what it reported.
    func run(_ yaml: String, registry: PluginRegistry = BundledPlugins.registry) async throws -> Outcome {
        let spec = try ConfigLoader.load(text: yaml, path: "exec.yaml", baseDirectory: folder, registry: registry)
        let failures = Mutex<[String: String]>([:])
        let skips = Mutex<[String: String]>([:])
        let started = ContinuousClock.now
        let summary = try await Runner(spec: spec, registry: registry).run { event in
            switch event {
            case .failed(let ref, _, let reason): failures.withLock { $0[ref.id] = reason }
            case .skipped(let ref, let reason): skips.withLock { $0[ref.id] = reason }
            default: break
            }
        }
        return Outcome(
            summary: summary, failures: failures.withLock { $0 }, skips: skips.withLock { $0 },
            seconds: (ContinuousClock.now - started).seconds)
    }

    struct Outcome {
        var summary: RunSummary
        /// Each failed item's reason, by item id.
        var failures: [String: String]
        var skips: [String: String]
        var seconds: Double
    }

    /// A source section listing the served files, one item each (named f1, f2, ...).
    var urlSource: String {
        "source: {use: urls, file: urls.txt}"
    }

    /// The bytes the server serves at `path`.
    func served(_ path: String) throws -> Data {
        Data(try #require(server.contentBytes(path: path)))
    }

    /// Every regular file under `folder/name`, by relative path.
    func tree(_ name: String) throws -> [String: Data] {
        let root = folder.appendingPathComponent(name).resolvingSymlinksInPath()
        var files: [String: Data] = [:]
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        else { return files }
        for case let url as URL in walker {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            files[String(url.resolvingSymlinksInPath().path.dropFirst(root.path.count + 1))] = try Data(contentsOf: url)
        }
        return files
    }

    /// A sink in Python for the failure tests: stores files under its `folder` option at the suggested path (or at
    /// `path`, when that option is given), kills itself with SIGKILL at the store request numbered `crash-at`, and
    /// answers a store of a path containing `refuse` with an error.
    static let testSink = """
        import json, os, shutil, sys

        def send(message):
            sys.stdout.write(json.dumps(message) + "\\n")
            sys.stdout.flush()

        stores = 0
        for line in sys.stdin:
            request = json.loads(line)
            kind = request["type"]
            if kind == "hello":
                options = request["options"]
                send({"type": "hello", "protocol": 1})
            elif kind == "plan":
                send({"type": "planned", "id": request["id"], "path": options.get("path", request["suggested"])})
            elif kind == "store":
                stores += 1
                if str(stores) == options.get("crash-at"):
                    os.kill(os.getpid(), 9)
                if options.get("refuse") and options["refuse"] in request["path"]:
                    send({"type": "error", "id": request["id"], "message": "no room for " + request["path"]})
                    continue
                target = os.path.join(options["folder"], request["path"])
                os.makedirs(os.path.dirname(target), exist_ok=True)
                shutil.move(request["file"], target)
                send({"type": "stored", "id": request["id"], "location": request["path"]})
            elif kind == "keep":
                target = os.path.join(options["folder"], request["path"])
                kept = os.path.isfile(target) and os.path.getsize(target) == request["size"]
                send({"type": "kept", "id": request["id"], "keep": kept})
            elif kind == "finish":
                send({"type": "finished", "id": request["id"]})
        """

    /// Writes ``testSink`` as `test-sink.py`, after checking that python3 is there to run it.
    func writeTestSink() throws {
        _ = try RequiredProgram.python3.locate()
        try write("test-sink.py", Self.testSink)
    }
}

/// Runs the built `mediafetch` binary as a user would, its output going to files (a pipe could fill and hang).
enum Binary {
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// `mediafetch` beside the test bundle in the build folder.
    static var url: URL {
        get throws {
            var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            for _ in 0..<4 {
                let candidate = directory.appendingPathComponent("mediafetch")
                if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
                directory = directory.deletingLastPathComponent()
            }
            let built = ExecFixture.packageRoot.appendingPathComponent(".build/debug/mediafetch")
            try #require(FileManager.default.isExecutableFile(atPath: built.path), "build mediafetch first")
            return built
        }
    }

    static func run(_ arguments: [String], in folder: URL) throws -> Outcome {
        let out = folder.appendingPathComponent("binary-\(UUID().uuidString).out")
        let err = folder.appendingPathComponent("binary-\(UUID().uuidString).err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        defer {
            try? FileManager.default.removeItem(at: out)
            try? FileManager.default.removeItem(at: err)
        }
        let process = Process()
        process.executableURL = try url
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = try FileHandle(forWritingTo: out)
        process.standardError = try FileHandle(forWritingTo: err)
        try process.run()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus,
            stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
    }
}
