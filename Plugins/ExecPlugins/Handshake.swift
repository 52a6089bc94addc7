/// The protocol versions, and the hello both sides open with (PROTOCOL.md, "The hello").
enum Handshake {
    /// The newest version this build speaks; it is offered in the hello.
    static let newestVersion = 1
    /// The oldest version this build still speaks.
    static let oldestVersion = 1

    /// Added to a timeout's message: an unflushed line looks exactly like a hang, and is the usual cause.
    static let flushHint = " (a plugin must flush its output after every line)"

    /// What mediafetch sends first.
    static func hello(role: String, command: ExecCommand) -> [UInt8] {
        var line = JSONLine(type: "hello")
        line.add("protocol", newestVersion)
        line.add("minProtocol", oldestVersion)
        line.add("role", role)
        line.add("name", command.name)
        line.add("options", object: command.options.map { ($0.key, $0.value) })
        return line.bytes
    }

    /// Checks the plugin's first message: a hello with a version this build speaks.
    /// - Throws: ``ExecPluginError/Kind/handshake`` when the plugin refused (an `error` message) or chose a
    ///   version this build does not speak; ``ExecPluginError/Kind/badOutput`` for anything else.
    static func check(_ message: PluginMessage) throws(ExecPluginError) {
        let versions = oldestVersion == newestVersion ? "\(newestVersion)" : "\(oldestVersion) to \(newestVersion)"
        switch message.type {
        case "hello":
            let version = try message.integer("protocol")
            guard let version else {
                throw message.failure(
                    "the hello has no \"protocol\"; expected the version the plugin speaks, \(versions)")
            }
            guard (oldestVersion...newestVersion).contains(version) else {
                throw ExecPluginError(
                    .handshake, role: message.role, plugin: message.plugin, line: message.line,
                    "the plugin speaks protocol version \(version), and this mediafetch speaks \(versions); "
                        + "update whichever is older")
            }
        case "error":
            let reason = try message.string("message") ?? "no reason given"
            throw ExecPluginError(
                .handshake, role: message.role, plugin: message.plugin, line: message.line,
                "the plugin refused to start (offered protocol \(versions)): \(reason)")
        default:
            throw message.failure(
                "expected a hello (or an error) as the plugin's first message, got a \(Quoted(message.type)) message")
        }
    }
}
