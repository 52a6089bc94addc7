import Dispatch
import Foundation
import MediaFetchCore
import Synchronization

/// A sink plugin's side of the conversation: the plugin is started at the first request, each request gets an id
/// and waits for the answer with that id, at most the command's timeout.
///
/// Whatever ends the plugin (an exit, a timeout, output that breaks the protocol) fails every request waiting
/// for an answer, and every later one at once, with a reason naming the plugin; answers already given stand.
final class SinkConnection: Sendable {
    private enum Phase {
        case idle
        /// The hello is sent; its answer is request 0's.
        case starting
        case running
        /// The finish request is sent: the plugin's exit is expected next.
        case finishing
        /// Nothing more is sent; the error says why (or that the run finished).
        case ended(ExecPluginError)
    }

    private struct Pending {
        /// How messages name the request: `store request 5 (Artist/01 Song.m4a)`.
        var name: String
        /// The answer's type.
        var expects: String
        var continuation: CheckedContinuation<PluginMessage, any Error>
    }

    private struct State {
        var phase = Phase.idle
        var process: PluginProcess?
        var pending: [Int: Pending] = [:]
        var nextID = 1
        var exit: PluginExit?
        var exitWaiter: CheckedContinuation<PluginExit?, Never>?
    }

    let command: ExecCommand
    private let diagnostics: @Sendable (String) -> Void
    private let state = Mutex(State())
    /// Requests waiting for an answer at most; further ones wait here, not in the plugin's stdin, so that each
    /// request's timeout counts only the plugin's time on it.
    private let requests: RequestGate
    private let starting = RequestGate(limit: 1)

    /// What the plugin may write once started, for messages.
    static let expected = "an answer: planned, stored, kept, finished or error, with the id of its request"

    init(command: ExecCommand, concurrency: Int, diagnostics: @escaping @Sendable (String) -> Void) {
        self.command = command
        self.diagnostics = diagnostics
        self.requests = RequestGate(limit: concurrency)
    }

    deinit {
        state.withLock { $0.process }?.stop()
    }

    /// Sends a request and waits for its answer.
    /// - Parameters:
    ///   - type: the request's type; the line starts with it and the id, then what `fields` adds.
    ///   - expects: the answer's type.
    ///   - about: what the request is about, for messages (`Artist/01 Song.m4a`).
    /// - Returns: the answer, of type `expects`.
    /// - Throws: ``ExecPluginError``: the plugin answered `error` (``ExecPluginError/Kind/reported``), or it ended,
    ///   timed out or broke the protocol, before or while the request waited.
    func request(
        _ type: String, expects: String, about: String, _ fields: (inout JSONLine) -> Void
    ) async throws -> PluginMessage {
        await requests.acquire()
        defer { requests.release() }
        try await startIfNeeded()
        var line = JSONLine(type: type)
        return try await withCheckedThrowingContinuation { continuation in
            let sent = state.withLock { state -> Result<(Int, PluginProcess), ExecPluginError> in
                let name = "\(type) request \(state.nextID) (\(about))"
                guard case .running = state.phase, let process = state.process else {
                    return .failure(notRunning(state.phase, request: name))
                }
                let id = state.nextID
                state.nextID += 1
                state.pending[id] = Pending(name: name, expects: expects, continuation: continuation)
                if type == "finish" { state.phase = .finishing }
                return .success((id, process))
            }
            switch sent {
            case .failure(let error):
                continuation.resume(throwing: error)
            case .success(let (id, process)):
                line.add("id", id)
                fields(&line)
                process.send(line.bytes)
                expire(id)
            }
        }
    }

    /// After the finish answer: closes the plugin's stdin and waits for its exit, at most the timeout.
    /// - Throws: ``ExecPluginError`` when it exits with a failure or does not exit in time.
    func awaitExit() async throws {
        let process = state.withLock { $0.process }
        process?.closeInput()
        let exit = await withCheckedContinuation { (continuation: CheckedContinuation<PluginExit?, Never>) in
            let known = state.withLock { state -> PluginExit?? in
                if let exit = state.exit { return .some(exit) }
                state.exitWaiter = continuation
                return .none
            }
            if let known {
                continuation.resume(returning: known)
                return
            }
            DispatchQueue.global().asyncAfter(deadline: .now() + command.timeout.dispatchInterval) { [weak self] in
                let waiter = self?.state.withLock { state in
                    defer { state.exitWaiter = nil }
                    return state.exitWaiter
                }
                waiter?.resume(returning: nil)
            }
        }
        let done = ExecPluginError(.exited, role: "sink", plugin: command.name, "had finished")
        state.withLock { $0.phase = .ended(done) }
        guard let exit else {
            process?.stop()
            throw error(.timedOut, "did not exit within \(command.timeout.formattedSeconds) of answering finish")
        }
        guard exit.succeeded else { throw error(.exited, "\(exit) after answering finish") }
    }

    // MARK: - Starting

    private func startIfNeeded() async throws {
        await starting.acquire()
        defer { starting.release() }
        let idle = state.withLock { state -> Bool in
            guard case .idle = state.phase else { return false }
            return true
        }
        // Started already, or ended: the request itself finds out which.
        guard idle else { return }
        let hello = try await withCheckedThrowingContinuation { continuation in
            // Waiting before the start: a plugin that exits at once fails this wait, as it should.
            state.withLock { state in
                state.phase = .starting
                state.pending[0] = Pending(name: "the hello", expects: "hello", continuation: continuation)
            }
            let started = Result { () throws(ExecPluginError) in
                try PluginProcess(
                    command, role: "sink", diagnostics: diagnostics,
                    output: { [weak self] output in self?.handle(output) })
            }
            switch started {
            case .success(let process):
                state.withLock { $0.process = process }
                process.send(Handshake.hello(role: "sink", command: command))
                expire(0)
            case .failure(let error):
                state.withLock { state in
                    state.phase = .ended(error)
                    state.pending[0] = nil
                }
                continuation.resume(throwing: error)
            }
        }
        do throws(ExecPluginError) {
            try Handshake.check(hello)
        } catch {
            throw broken(error)
        }
        state.withLock { state in
            if case .starting = state.phase { state.phase = .running }
        }
    }

    // MARK: - The plugin's output

    /// Takes one output of the plugin (on its reader thread) to the request it answers.
    private func handle(_ output: PluginOutput) {
        switch output {
        case .line(_, let bytes) where ExecSource.isBlank(bytes):
            return
        case .line(let number, let bytes):
            do throws(ExecPluginError) {
                let message = try PluginMessage(
                    bytes, line: number, role: "sink", plugin: command.name, expected: Self.expected)
                try answer(message)
            } catch {
                fail(error)
            }
        case .tooLong(let number):
            fail(
                ExecPluginError(
                    .badOutput, role: "sink", plugin: command.name, line: number,
                    "the line is longer than \(PluginProcess.maxLineBytes >> 20) MiB; expected \(Self.expected)"))
        case .ended(let exit):
            let waiter = state.withLock { state -> CheckedContinuation<PluginExit?, Never>? in
                state.exit = exit
                defer { state.exitWaiter = nil }
                return state.exitWaiter
            }
            waiter?.resume(returning: exit)
            fail(error(.exited, exit.description), exited: true)
        }
    }

    /// Resumes the request `message` answers.
    /// - Throws: when it answers no waiting request, or is of the wrong type; the caller then fails the plugin.
    private func answer(_ message: PluginMessage) throws(ExecPluginError) {
        let starting = state.withLock { state -> Bool in
            if case .starting = state.phase { return true }
            return false
        }
        let id: Int
        if starting {
            // The hello's answer carries no id.
            id = 0
        } else if let given = try message.integer("id") {
            id = given
        } else if message.type == "error" {
            throw error(.reported, "reported an error: " + (try message.string("message") ?? "(no message)"))
        } else {
            throw message.failure("expected an \"id\" naming the request this \(message.type) message answers")
        }
        let pending = state.withLock { $0.pending.removeValue(forKey: id) }
        guard let pending else {
            throw message.failure("an answer to request \(id), which is not waiting for one (never sent, or answered)")
        }
        if message.type == "error", id != 0 {
            let reason = try message.string("message") ?? "(no message)"
            pending.continuation.resume(
                throwing: error(.reported, "answered \(pending.name) with an error: \(reason)"))
        } else if message.type == pending.expects || id == 0 {
            // The hello's answer is checked by the starting request, which knows what a refusal means.
            pending.continuation.resume(returning: message)
        } else {
            let failure = message.failure(
                "expected a \"\(pending.expects)\" or \"error\" answer to \(pending.name), got a "
                    + "\(Quoted(message.type)) message")
            pending.continuation.resume(throwing: failure)
            throw failure
        }
    }

    /// Decodes a field of an answer; a field that is not what the protocol says fails the plugin, as any other
    /// output that breaks the protocol does.
    func decode<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as ExecPluginError {
            throw broken(error)
        }
    }

    /// Fails the plugin because of `error`, output that breaks the protocol, and returns it.
    func broken(_ error: ExecPluginError) -> ExecPluginError {
        fail(error)
        return error
    }

    // MARK: - Ending

    /// Ends the plugin for the rest of the run because of `cause`: every request waiting for an answer fails, and
    /// so does every later one.
    /// - Parameters:
    ///   - exited: the plugin exited by itself, so each waiting request fails with "exited ... before answering" it.
    ///   - culprit: the request that timed out, which `cause` names already.
    private func fail(_ cause: ExecPluginError, exited: Bool = false, culprit: Int? = nil) {
        let (pending, process) = state.withLock { state -> ([Int: Pending], PluginProcess?) in
            switch state.phase {
            case .ended: break
            case .finishing where exited && state.pending.isEmpty:
                // The exit that finishing asked for; awaitExit reads its status.
                break
            default: state.phase = .ended(cause)
            }
            defer { state.pending = [:] }
            return (state.pending, state.process)
        }
        if !exited { process?.stop() }
        for (id, request) in pending {
            let reason =
                if exited {
                    error(cause.kind, "\(cause.message) before answering \(request.name)")
                } else if id == culprit {
                    cause
                } else {
                    cause.adding("(so \(request.name) went unanswered)")
                }
            request.continuation.resume(throwing: reason)
        }
    }

    /// Fails request `id` and the plugin when no answer came within the timeout.
    private func expire(_ id: Int) {
        DispatchQueue.global().asyncAfter(deadline: .now() + command.timeout.dispatchInterval) { [weak self] in
            guard let self else { return }
            let waiting = state.withLock { $0.pending[id] }
            guard let waiting else { return }
            fail(
                error(
                    .timedOut,
                    "did not answer \(waiting.name) within \(command.timeout.formattedSeconds) (its timeout), so it "
                        + "was stopped" + Handshake.flushHint),
                culprit: id)
        }
    }

    /// Why `request` could not be sent.
    private func notRunning(_ phase: Phase, request: String) -> ExecPluginError {
        guard case .ended(let cause) = phase else {
            return error(.exited, "is not running; \(request) was not sent")
        }
        let because = (cause.line.map { "line \($0) of its output: " } ?? "") + cause.message
        return ExecPluginError(
            cause.kind, role: "sink", plugin: command.name, "is not running (\(because)); \(request) was not sent")
    }

    private func error(_ kind: ExecPluginError.Kind, _ message: String) -> ExecPluginError {
        ExecPluginError(kind, role: "sink", plugin: command.name, message)
    }
}
