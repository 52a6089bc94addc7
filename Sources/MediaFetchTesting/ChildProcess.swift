import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A program a test runs as a child process (by default the `mediafetch` built beside the tests), its output
/// kept in files until it ends, waited for on a thread of its own so that the task pool is never blocked. A child
/// still running when the value goes is killed.
public final class ChildProcess: @unchecked Sendable {
    /// How a child ended.
    public struct Outcome: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    /// The running process: a test signals it (`kill(process.processIdentifier, SIGKILL)`) or polls `isRunning`.
    public let process = Process()
    private let scratch: URL

    /// Starts `executable` (default: ``binary()``) with `arguments` in `directory`, with this process's environment
    /// less the `removing` names and plus `environment`, and no standard input.
    public init(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], removing: Set<String> = [],
        executable: URL? = nil
    ) throws {
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("child-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        for name in ["stdout", "stderr"] {
            _ = FileManager.default.createFile(atPath: scratch.appendingPathComponent(name).path, contents: nil)
        }
        process.executableURL = try executable ?? Self.binary()
        process.arguments = arguments
        process.currentDirectoryURL = directory
        if !environment.isEmpty || !removing.isEmpty {
            let inherited = ProcessInfo.processInfo.environment.filter { !removing.contains($0.key) }
            process.environment = inherited.merging(environment) { $1 }
        }
        process.standardOutput = try FileHandle(forWritingTo: scratch.appendingPathComponent("stdout"))
        process.standardError = try FileHandle(forWritingTo: scratch.appendingPathComponent("stderr"))
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(at: scratch)
    }

    /// Starts a child and waits for it to end.
    public static func run(
        _ arguments: [String], in directory: URL, environment: [String: String] = [:], removing: Set<String> = [],
        executable: URL? = nil
    ) async throws -> Outcome {
        try await ChildProcess(
            arguments, in: directory, environment: environment, removing: removing, executable: executable
        ).wait()
    }

    /// What the child has written to its standard output so far (while it runs, for a test that waits for a line).
    public var outputSoFar: String { read("stdout") }

    /// One of the child's output files as text (a character cut in two at the end, as a running child may leave it,
    /// read as a replacement character).
    private func read(_ name: String) -> String {
        String(decoding: (try? Data(contentsOf: scratch.appendingPathComponent(name))) ?? Data(), as: UTF8.self)
    }

    /// Waits on a thread of its own, so that the task pool is never blocked, and reads what the child wrote.
    public func wait() async throws -> Outcome {
        let process = process
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            Thread {
                process.waitUntilExit()
                done.resume()
            }.start()
        }
        return Outcome(status: process.terminationStatus, stdout: read("stdout"), stderr: read("stderr"))
    }

    /// `mediafetch` beside the test bundle in the build folder.
    /// - Throws: ``MockServerError`` when it is not built there.
    public static func binary() throws -> URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("mediafetch")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        throw MockServerError("mediafetch is not built beside the tests: run swift build --build-tests")
    }
}
