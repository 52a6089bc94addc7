import Foundation
import MediaFetchCore

/// A source in any language: a program that writes items as JSON lines (PROTOCOL.md beside this file).
///
/// The program is started when the run starts, gets a hello with its options, answers with the protocol version
/// it speaks, and then writes `item`, `skip` and `fail` lines and an `end`. Its stderr lines are shown as they
/// come, prefixed `[name] `.
///
/// * Output that breaks the protocol ends the source with an ``ExecPluginError`` naming the plugin, the line and
///   what was expected; so does an `error` message, an exit before `end`, a non-zero exit after it, and a wait of
///   more than the command's timeout for the next line (the plugin is then stopped). Items it sent before run on.
/// * An id sent twice is skipped the second time, naming the line of the first.
/// * The plugin is never left running: a failure, an interruption or the end stops it.
public struct ExecSource: Source {
    public let command: ExecCommand
    /// Receives the plugin's stderr lines, prefixed `[name] `.
    public let diagnostics: @Sendable (String) -> Void

    public init(command: ExecCommand, diagnostics: @escaping @Sendable (String) -> Void = ExecCommand.standardError) {
        self.command = command
        self.diagnostics = diagnostics
    }

    /// What may come after the hello, for messages.
    static let expected = "an item, skip, fail, error or end message"

    /// Runs the plugin to its end.
    /// - Throws: ``ExecPluginError`` when the plugin fails as a whole; `CancellationError` when interrupted.
    public func run(_ context: SourceContext, emit: @Sendable (SourceOutput) async throws -> Void) async throws {
        let queue = OutputQueue()
        let process = try PluginProcess(command, role: "source", diagnostics: diagnostics, output: queue.push)
        defer {
            process.stop()
            queue.close()
        }
        process.send(Handshake.hello(role: "source", command: command))
        let hello = try await nextMessage(
            queue, expected: "a hello", waitingFor: "to answer the hello", endedBefore: "before it answered the hello")
        try Handshake.check(hello)

        var firstLine: [String: Int] = [:]
        while true {
            let message = try await nextMessage(
                queue, expected: Self.expected, waitingFor: "to write its next line",
                endedBefore: "before its end message; the items it sent before run on")
            switch message.type {
            case "item":
                let item = try message.item()
                if let earlier = firstLine[item.id] {
                    try await emit(
                        .skipped(
                            item.ref, reason: "\(command.name) line \(message.line): the same id as line \(earlier)"))
                    continue
                }
                firstLine[item.id] = message.line
                try await emit(.item(item))
            case "skip":
                try await emit(.skipped(try message.itemRef(), reason: try message.requiredString("reason")))
            case "fail":
                try await emit(
                    .failed(
                        try message.itemRef(), url: try message.string("url").flatMap { URL(string: $0) },
                        reason: try message.requiredString("reason")))
            case "error":
                throw error(.reported, "reported an error: " + (try message.string("message") ?? "(no message)"))
            case "end":
                try await awaitExit(queue, process)
                return
            default:
                throw message.failure("expected \(Self.expected), got a \(Quoted(message.type)) message")
            }
        }
    }

    /// After `end`: the plugin's stdin is closed, and it must exit with status 0 within the timeout, writing nothing
    /// more.
    private func awaitExit(_ queue: OutputQueue, _ process: PluginProcess) async throws {
        process.closeInput()
        while true {
            guard let output = try await queue.next(timeout: command.timeout) else {
                throw error(.timedOut, "did not exit within \(command.timeout.formattedSeconds) of its end message")
            }
            switch output {
            case .line(_, let bytes) where Self.isBlank(bytes):
                continue
            case .line(let number, _), .tooLong(let number):
                throw ExecPluginError(
                    .badOutput, role: "source", plugin: command.name, line: number,
                    "expected nothing after the end message, and the plugin to exit")
            case .ended(let exit):
                guard exit.succeeded else { throw error(.exited, "\(exit) after its end message") }
                return
            }
        }
    }

    /// The next message, skipping blank lines.
    /// - Parameters:
    ///   - waitingFor: what the plugin was to do, for the timeout's message.
    ///   - endedBefore: what the plugin had not done, for the message when it ended.
    /// - Throws: ``ExecPluginError`` for a line that is not a message, the plugin's end, or a wait past the timeout.
    private func nextMessage(
        _ queue: OutputQueue, expected: String, waitingFor what: String, endedBefore: String
    ) async throws -> PluginMessage {
        while true {
            guard let output = try await queue.next(timeout: command.timeout) else {
                throw error(
                    .timedOut,
                    "took longer than its timeout (\(command.timeout.formattedSeconds)) \(what), so it was stopped"
                        + Handshake.flushHint)
            }
            switch output {
            case .line(_, let bytes) where Self.isBlank(bytes):
                continue
            case .line(let number, let bytes):
                return try PluginMessage(bytes, line: number, role: "source", plugin: command.name, expected: expected)
            case .tooLong(let number):
                throw ExecPluginError(
                    .badOutput, role: "source", plugin: command.name, line: number,
                    "the line is longer than \(PluginProcess.maxLineBytes >> 20) MiB; expected \(expected) on one line")
            case .ended(let exit):
                throw error(.exited, "\(exit) \(endedBefore)")
            }
        }
    }

    private func error(_ kind: ExecPluginError.Kind, _ message: String) -> ExecPluginError {
        ExecPluginError(kind, role: "source", plugin: command.name, message)
    }

    static func isBlank(_ bytes: [UInt8]) -> Bool {
        bytes.allSatisfy { $0 == 0x20 || $0 == 0x09 }
    }
}
