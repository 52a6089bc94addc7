import Foundation
import MediaFetchCore
import Testing

/// Bytes that compress badly and differ per seed, made fast enough for megabytes.
func randomBytes(_ count: Int, seed: UInt64) -> Data {
    var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
    var bytes = [UInt8](repeating: 0, count: count)
    bytes.withUnsafeMutableBufferPointer { buffer in
        for index in 0..<count {
            // xorshift64*: deterministic, so a failing test fails the same way again.
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            buffer[index] = UInt8(truncatingIfNeeded: (state &* 0x2545_F491_4F6C_DD1D) >> 56)
        }
    }
    return Data(bytes)
}

/// A fresh directory for downloads, removed after `body`.
func withTemporaryDirectory<T>(_ body: (URL) async throws -> T) async throws -> T {
    let directory = FileManager.default.temporaryDirectory
        .appendingPathComponent("curl-test-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    return try await body(directory)
}

/// Downloads every URL at once into `directory` (as `<index>.bin`) and expects each download to report, and
/// its file to hold, the bytes of `contents` at the same index.
func downloadAll(
    _ urls: [URL], expecting contents: [Data], into directory: URL, with transport: any Transport
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        for index in urls.indices {
            group.addTask {
                let destination = directory.appendingPathComponent("\(index).bin")
                let result = try await transport.download(
                    DownloadRequest(url: urls[index], destination: destination)
                ) { _ in }
                #expect(result.bytesWritten == Int64(contents[index].count))
                #expect(try Data(contentsOf: destination) == contents[index])
            }
        }
        try await group.waitForAll()
    }
}

/// The error a call threw, as a ``TransportError``, or nil when it threw none or another kind.
func transportError<T>(_ body: () async throws -> T) async -> TransportError? {
    do {
        _ = try await body()
        return nil
    } catch {
        return error as? TransportError
    }
}

/// How a program run by ``runProgram(_:_:environment:timeout:)`` ended.
struct ProgramOutcome {
    var status: Int32
    /// Its standard output and standard error, interleaved.
    var output: String
}

/// Runs a program to its end, waiting at most `timeout`. The output goes to a file, not a pipe, so a chatty
/// program cannot fill the pipe and stall.
/// - Throws: ``ServerError`` when it cannot start or does not end in time (it is killed then).
func runProgram(
    _ executable: URL, _ arguments: [String], environment: [String: String]? = nil,
    timeout: Duration = .seconds(60)
) async throws -> ProgramOutcome {
    let log = FileManager.default.temporaryDirectory.appendingPathComponent("program-\(UUID().uuidString).log")
    guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
        throw ServerError("cannot create \(log.path)")
    }
    defer { try? FileManager.default.removeItem(at: log) }
    let output = try FileHandle(forWritingTo: log)
    defer { try? output.close() }
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let environment { process.environment = environment }
    process.standardOutput = output
    process.standardError = output
    try process.run()
    let deadline = ContinuousClock.now + timeout
    while process.isRunning {
        guard ContinuousClock.now < deadline else {
            process.terminate()
            process.waitUntilExit()
            throw ServerError("\(executable.lastPathComponent) did not finish within \(timeout)")
        }
        try await Task.sleep(for: .milliseconds(10))
    }
    let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
    return ProgramOutcome(status: process.terminationStatus, output: text)
}
