import Foundation
import MediaFetchCore
import Synchronization

/// How a plugin process ended.
struct PluginExit: Sendable, CustomStringConvertible {
    /// The exit status, or the signal that ended it.
    var code: Int32
    var signalled: Bool

    var succeeded: Bool { !signalled && code == 0 }

    var description: String {
        guard signalled else { return "exited with status \(code)" }
        let names: [Int32: String] = [SIGKILL: "SIGKILL", SIGTERM: "SIGTERM", SIGSEGV: "SIGSEGV", SIGABRT: "SIGABRT"]
        return "was killed by signal \(code)" + (names[code].map { " (\($0))" } ?? "")
    }
}

/// What a plugin's stdout brings, in order; `ended` comes once, last, when stdout and stderr are closed and the
/// process has exited.
enum PluginOutput: Sendable {
    /// A line without its newline (and without a carriage return before it); `number` counts from 1.
    case line(number: Int, bytes: [UInt8])
    /// A line longer than ``PluginProcess/maxLineBytes``; its bytes are dropped.
    case tooLong(number: Int)
    case ended(PluginExit)
}

/// A running plugin: the program started in its own process group with pipes for stdin, stdout and stderr.
///
/// Three threads of its own move the bytes, so that a plugin that stops reading or writing can never block the
/// run's tasks: one writes the queued lines to its stdin (with SIGPIPE blocked, so a plugin that died makes the
/// write fail instead of killing mediafetch), one reads its stdout into lines for `output` (which may block, and
/// so hold the plugin back), and one passes its stderr lines on to `diagnostics` as `[name] text`.
///
/// Its own process group lets a stop reach everything the plugin started (a shell's `sleep`), and keeps the
/// terminal's Ctrl-C from reaching it: mediafetch ends it cleanly instead. When the plugin exits, what is left of
/// its group is killed, since it would hold the pipes open.
final class PluginProcess: Sendable {
    /// The longest line read from a plugin; anything longer is not a protocol message.
    static let maxLineBytes = 1 << 20
    /// The longest stderr line passed on whole; longer ones are cut.
    static let maxDiagnosticBytes = 16 << 10
    /// How long a stopped plugin has between SIGTERM and SIGKILL.
    static let stopGrace = DispatchTimeInterval.seconds(2)

    private let pid: pid_t
    private let life: Life
    private let writer: LineWriter
    /// Kept until the process has ended: Foundation reports the exit to it.
    private let process: Process

    /// Starts `command`.
    /// - Parameters:
    ///   - diagnostics: receives each stderr line, prefixed `[name] `.
    ///   - output: receives each stdout line, then the end; called on the reader thread, and may block it.
    /// - Throws: ``ExecPluginError/Kind/cannotStart`` when the program cannot be run.
    init(
        _ command: ExecCommand, role: String, diagnostics: @escaping @Sendable (String) -> Void,
        output: @escaping @Sendable (PluginOutput) -> Void
    ) throws(ExecPluginError) {
        let process = Process()
        process.executableURL = command.program
        process.arguments = command.arguments
        process.currentDirectoryURL = command.directory
        let input = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardInput = input
        process.standardOutput = stdout
        process.standardError = stderr
        let life = Life(output: output)
        self.life = life
        self.process = process
        // Set before the start, so that an exit at once is not missed.
        process.terminationHandler = { [life] ended in
            let pid = ended.processIdentifier
            // Whatever the plugin left running in its group would keep its pipes open.
            kill(-pid, SIGKILL)
            life.exited(
                PluginExit(code: ended.terminationStatus, signalled: ended.terminationReason == .uncaughtSignal))
        }
        do {
            try process.run()
        } catch {
            throw ExecPluginError(
                .cannotStart, role: role, plugin: command.name,
                "cannot run \(command.program.path): \((error as NSError).localizedDescription)")
        }
        pid = process.processIdentifier
        writer = LineWriter(input.fileHandleForWriting)

        let name = command.name
        Thread { [life, process] in
            // The process is kept until its output ends, so that Foundation can still report its exit.
            withExtendedLifetime(process) {
                Self.readLines(stdout.fileHandleForReading, maxBytes: Self.maxLineBytes) { number, bytes in
                    output(bytes.map { .line(number: number, bytes: $0) } ?? .tooLong(number: number))
                }
            }
            life.outputEnded()
        }.start()
        Thread { [life] in
            Self.readLines(stderr.fileHandleForReading, maxBytes: Self.maxDiagnosticBytes, cutsLongLines: true) {
                _, bytes in
                guard let bytes else { return }
                diagnostics("[\(name)] " + Self.printable(bytes))
            }
            life.outputEnded()
        }.start()
    }

    deinit {
        stop()
    }

    /// Queues `line` (a whole line, newline included) for the plugin's stdin.
    func send(_ line: [UInt8]) {
        writer.send(line)
    }

    /// Closes the plugin's stdin once the queued lines are written: it reads end of file.
    func closeInput() {
        writer.close()
    }

    /// Ends the plugin: its stdin closes, its process group gets SIGTERM, and SIGKILL if it is still there after
    /// ``stopGrace``. Nothing when it has exited already. Returns at once.
    func stop() {
        writer.close()
        guard life.beginStopping() else { return }
        kill(-pid, SIGTERM)
        DispatchQueue.global().asyncAfter(deadline: .now() + Self.stopGrace) { [life, pid] in
            if !life.hasExited { kill(-pid, SIGKILL) }
        }
    }

    /// What the reader threads, Foundation's exit report and `stop` share: the end is handed on once stdout and
    /// stderr are closed and the exit is known, and only once. Waiting for stderr too means that a plugin's last
    /// words (a traceback) are shown before anything reports its end.
    private final class Life: Sendable {
        private struct State {
            /// Of stdout and stderr.
            var streamsEnded = 0
            var exit: PluginExit?
            var endDelivered = false
            var stopping = false
        }

        private let state = Mutex(State())
        private let output: @Sendable (PluginOutput) -> Void

        init(output: @escaping @Sendable (PluginOutput) -> Void) {
            self.output = output
        }

        var hasExited: Bool { state.withLock { $0.exit != nil } }

        func exited(_ exit: PluginExit) {
            state.withLock { $0.exit = exit }
            deliverEndIfDone()
        }

        /// stdout or stderr reached its end.
        func outputEnded() {
            state.withLock { $0.streamsEnded += 1 }
            deliverEndIfDone()
        }

        /// True the first time, while the process runs: the caller then signals it.
        func beginStopping() -> Bool {
            state.withLock { state in
                defer { state.stopping = true }
                return state.exit == nil && !state.stopping
            }
        }

        private func deliverEndIfDone() {
            let exit = state.withLock { state -> PluginExit? in
                guard state.streamsEnded == 2, let exit = state.exit, !state.endDelivered else { return nil }
                state.endDelivered = true
                return exit
            }
            if let exit { output(.ended(exit)) }
        }
    }

    /// Reads `handle` to its end, cutting it into lines (a final line without a newline counts too).
    /// - Parameters:
    ///   - line: gets each line's number and bytes, or nil bytes for a line longer than `maxBytes` (whose bytes are
    ///     dropped), unless `cutsLongLines`, which hands on the first `maxBytes` bytes instead.
    private static func readLines(
        _ handle: FileHandle, maxBytes: Int, cutsLongLines: Bool = false, _ line: (Int, [UInt8]?) -> Void
    ) {
        let descriptor = handle.fileDescriptor
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        var current: [UInt8] = []
        var number = 1
        var overlong = false
        func emit() {
            if overlong {
                line(number, cutsLongLines ? current : nil)
            } else {
                if current.last == UInt8(ascii: "\r") { current.removeLast() }
                line(number, current)
            }
            current.removeAll(keepingCapacity: true)
            overlong = false
            number += 1
        }
        while true {
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            var start = 0
            while start < count {
                let newline = chunk[start..<count].firstIndex(of: UInt8(ascii: "\n"))
                let end = newline ?? count
                if !overlong {
                    current.append(contentsOf: chunk[start..<end])
                    if current.count > maxBytes {
                        overlong = true
                        current.removeSubrange(maxBytes...)
                    }
                }
                if newline != nil { emit() }
                start = end + 1
            }
        }
        if !current.isEmpty || overlong { emit() }
    }

    /// A stderr line as text: invalid UTF-8 repaired, control characters other than tabs shown as `�` (a plugin
    /// must not be able to rewrite the terminal's lines).
    private static func printable(_ bytes: [UInt8]) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        return text.split(separator: "\t", omittingEmptySubsequences: false).map { ItemRef.printable(String($0)) }
            .joined(separator: "\t")
    }
}

/// Writes lines to a plugin's stdin on a thread of its own, in order; a write that fails (the plugin is gone)
/// drops the rest.
private final class LineWriter: Sendable {
    private struct Queue {
        var lines: [[UInt8]] = []
        var closed = false
    }

    private let queue = Mutex(Queue())
    private let ready = DispatchSemaphore(value: 0)

    init(_ handle: FileHandle) {
        // The thread holds the writer until it has closed the pipe.
        Thread { [self] in
            // SIGPIPE from a write to a plugin that exited would end mediafetch; blocked here, the write fails with
            // EPIPE instead, and the signal stays pending on this thread, which never unblocks it.
            var pipeSignal = sigset_t()
            sigemptyset(&pipeSignal)
            sigaddset(&pipeSignal, SIGPIPE)
            pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
            while true {
                ready.wait()
                let next = queue.withLock { queue -> [UInt8]? in
                    queue.lines.isEmpty ? nil : queue.lines.removeFirst()
                }
                guard let line = next else {
                    if queue.withLock({ $0.closed }) { break }
                    continue
                }
                guard Self.writeAll(line, to: handle.fileDescriptor) else {
                    queue.withLock { queue in
                        queue.closed = true
                        queue.lines = []
                    }
                    break
                }
            }
            try? handle.close()
        }.start()
    }

    func send(_ line: [UInt8]) {
        let queued = queue.withLock { queue -> Bool in
            guard !queue.closed else { return false }
            queue.lines.append(line)
            return true
        }
        if queued { ready.signal() }
    }

    func close() {
        let first = queue.withLock { queue -> Bool in
            defer { queue.closed = true }
            return !queue.closed
        }
        if first { ready.signal() }
    }

    /// Writes all of `bytes`; false when the descriptor refused them.
    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { buffer -> Int in
                guard let base = buffer.baseAddress else { return 0 }
                return write(descriptor, base + offset, buffer.count - offset)
            }
            if written < 0 {
                if errno == EINTR { continue }
                return false
            }
            offset += written
        }
        return true
    }
}
