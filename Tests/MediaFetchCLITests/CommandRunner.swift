import Foundation
import MediaFetchTesting
import Testing

/// Runs the built `mediafetch` binary as a user would, and collects what it printed.
struct CommandRunner {
    struct Outcome {
        var status: Int32
        var stdout: String
        var stderr: String
        /// True when a signal ended the process (`status` is then its number).
        var signalled = false
    }

    /// The package's top folder, where `config/demo.yaml` lives.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `mediafetch` beside the test bundle in the build folder.
    static var binary: URL {
        get throws {
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
    }

    /// A child process whose output goes to files, not pipes: a chatty child can never fill a pipe and hang.
    final class Child {
        let process = Process()
        let scratch: URL

        init(_ arguments: [String], in directory: URL, environment: [String: String], executable: URL? = nil) throws {
            scratch = FileManager.default.temporaryDirectory.appendingPathComponent("cli-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            _ = FileManager.default.createFile(atPath: scratch.appendingPathComponent("stdout").path, contents: nil)
            _ = FileManager.default.createFile(atPath: scratch.appendingPathComponent("stderr").path, contents: nil)
            process.executableURL = try executable ?? CommandRunner.binary
            process.arguments = arguments
            process.currentDirectoryURL = directory
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            process.standardOutput = try FileHandle(forWritingTo: scratch.appendingPathComponent("stdout"))
            process.standardError = try FileHandle(forWritingTo: scratch.appendingPathComponent("stderr"))
            process.standardInput = FileHandle.nullDevice
            try process.run()
        }

        deinit {
            if process.isRunning { process.terminate() }
            try? FileManager.default.removeItem(at: scratch)
        }

        /// Waits for the child to end, on a thread of its own: see ``offThePool(_:)``.
        func wait() async throws -> Outcome {
            let process = process
            await CommandRunner.offThePool { process.waitUntilExit() }
            return try outcome()
        }

        /// What the child printed and how it ended; call once it has.
        func outcome() throws -> Outcome {
            Outcome(
                status: process.terminationStatus,
                stdout: String(decoding: try Data(contentsOf: scratch.appendingPathComponent("stdout")), as: UTF8.self),
                stderr: String(decoding: try Data(contentsOf: scratch.appendingPathComponent("stderr")), as: UTF8.self),
                signalled: process.terminationReason == .uncaughtSignal)
        }
    }

    static func start(
        _ arguments: [String], in directory: URL = packageRoot, environment: [String: String] = [:]
    )
        throws -> Child
    {
        try Child(arguments, in: directory, environment: environment)
    }

    /// Runs `mediafetch` (or `executable`) with `arguments` and waits for it.
    static func run(
        _ arguments: [String], in directory: URL = packageRoot, environment: [String: String] = [:],
        executable: URL? = nil
    ) async throws -> Outcome {
        try await Child(arguments, in: directory, environment: environment, executable: executable).wait()
    }

    /// Runs `body`, which blocks (waiting for a child process), on a thread of its own while the calling task
    /// awaits. A test that blocked instead would hold one of the task pool's threads, as many as cores (two
    /// here): while the command-line tests held them, other suites' tasks, and their timed waits, stood still.
    static func offThePool(_ body: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                body()
                continuation.resume()
            }
        }
    }

    /// Runs `mediafetch` with `arguments` on a thread of its own and waits for it; with a `signal`, sends it
    /// that once `condition` holds (looked at every 10 ms, for at most `limit`; the caller checks it again).
    /// The test's task awaits meanwhile instead of blocking: the task pool has as many threads as cores (two
    /// here), and while tests blocked in child runs held them, other suites' timed waits ran out. The moment of
    /// the signal so does not depend on when that pool resumes the test either.
    static func runOnItsOwnThread(
        _ arguments: [String], signal: Int32? = nil, when condition: @escaping @Sendable () -> Bool = { true },
        atMost limit: Duration = .seconds(60)
    ) async throws -> Outcome {
        try await withCheckedThrowingContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(
                    with: Result {
                        let child = try Child(arguments, in: packageRoot, environment: [:])
                        if let signal {
                            let deadline = ContinuousClock.now + limit
                            while !condition() && ContinuousClock.now < deadline { usleep(10_000) }
                            kill(child.process.processIdentifier, signal)
                        }
                        child.process.waitUntilExit()
                        return try child.outcome()
                    })
            }
        }
    }

    /// What a shell pipeline printed (it must succeed).
    static func shell(_ command: String) async throws -> String {
        let outcome = try await run(["sh", "-c", command], executable: URL(fileURLWithPath: "/usr/bin/env"))
        #expect(outcome.status == 0, "\(command): \(outcome.stderr)")
        return outcome.stdout
    }

    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("mediafetch-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The files of a tar archive, by path, read back with GNU tar; an archive tar cannot read fails the test.
    /// Also checks that no name is in the archive twice.
    static func extract(_ archive: URL, into scratch: URL) async throws -> [String: Data] {
        let gnuTar = try RequiredProgram.gnuTar.locate()
        let list = Process()
        list.executableURL = gnuTar
        list.arguments = ["-tf", archive.path]
        let names = scratch.appendingPathComponent("names.txt")
        _ = FileManager.default.createFile(atPath: names.path, contents: nil)
        list.standardOutput = try FileHandle(forWritingTo: names)
        try list.run()
        await offThePool { list.waitUntilExit() }
        #expect(list.terminationStatus == 0, "tar cannot list \(archive.path)")
        let entries = String(decoding: try Data(contentsOf: names), as: UTF8.self).split(separator: "\n")
        #expect(Set(entries).count == entries.count, "an entry is in the archive twice")

        let folder = scratch.appendingPathComponent("extracted-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let tar = Process()
        tar.executableURL = gnuTar
        tar.arguments = ["-xf", archive.path, "-C", folder.path]
        try tar.run()
        await offThePool { tar.waitUntilExit() }
        #expect(tar.terminationStatus == 0, "tar cannot extract \(archive.path)")
        return try tree(folder)
    }

    /// The size of the file at `url`.
    static func size(of url: URL) throws -> Int64 {
        Int64(try url.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0)
    }

    /// Bytes of every plain file under `root`.
    static func bytes(under root: URL) throws -> Int64 {
        let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.fileSizeKey])
        var total: Int64 = 0
        while let url = walker?.nextObject() as? URL { total += try size(of: url) }
        return total
    }

    /// Every regular file under `root`, by relative path.
    static func tree(_ root: URL) throws -> [String: Data] {
        var files: [String: Data] = [:]
        let base = root.resolvingSymlinksInPath().path
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        else { return files }
        for case let url as URL in walker {
            guard try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { continue }
            let path = url.resolvingSymlinksInPath().path
            files[String(path.dropFirst(base.count + 1))] = try Data(contentsOf: url)
        }
        return files
    }
}
