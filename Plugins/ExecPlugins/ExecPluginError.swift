/// An `exec` plugin failed: it could not be started, broke the protocol, reported an error, exited or hung.
///
/// The description names the plugin and says what happened and what was expected, e.g.
/// `exec sink dir-sink.sh: line 4 of its output: expected a "planned" or "error" answer to request 3 (plan), got
/// "stored"`. Compare ``kind`` to tell the cases apart; new kinds may be added.
public struct ExecPluginError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as a value that can grow without breaking a `switch`: compare with `==`.
    public struct Kind: Sendable, Hashable, CustomStringConvertible {
        private enum Code: String, Sendable, Hashable {
            case cannotStart = "cannot start"
            case handshake
            case badOutput = "bad output"
            case reported
            case exited
            case timedOut = "timed out"
        }

        private let code: Code

        private init(_ code: Code) {
            self.code = code
        }

        /// The program could not be run (missing, not executable).
        public static let cannotStart = Kind(.cannotStart)
        /// The hello exchange failed: the plugin refused it, or speaks a protocol version this build does not.
        public static let handshake = Kind(.handshake)
        /// A line of the plugin's output is not what the protocol allows there; ``ExecPluginError/line`` says which.
        public static let badOutput = Kind(.badOutput)
        /// The plugin answered with an `error` message.
        public static let reported = Kind(.reported)
        /// The plugin exited (or closed its output) before it was done.
        public static let exited = Kind(.exited)
        /// The plugin did not answer within its `timeout`, and was stopped.
        public static let timedOut = Kind(.timedOut)

        public var description: String { code.rawValue }
    }

    public let kind: Kind
    /// `source` or `sink`.
    public let role: String
    /// The plugin's name (its `name` option, or the program's file name).
    public let plugin: String
    /// The line of the plugin's output (1-based) the problem is on, when it is about one.
    public let line: Int?
    /// What happened, without the plugin's name.
    public let message: String

    init(_ kind: Kind, role: String, plugin: String, line: Int? = nil, _ message: String) {
        self.kind = kind
        self.role = role
        self.plugin = plugin
        self.line = line
        self.message = message
    }

    public var description: String {
        let place = line.map { "line \($0) of its output: " } ?? ""
        return "exec \(role) \(plugin): \(place)\(message)"
    }

    /// The same error, with what the plugin was doing added (`while asked to store 01 Song.m4a`).
    func adding(_ context: String) -> ExecPluginError {
        ExecPluginError(kind, role: role, plugin: plugin, line: line, message + " " + context)
    }
}
