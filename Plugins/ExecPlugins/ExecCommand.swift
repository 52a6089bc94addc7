import Foundation
import MediaFetchCore

/// How to run an `exec` plugin: the program and its arguments (never through a shell), the folder it runs in, the
/// name it goes by, the options it is handed and how long it may take to answer.
public struct ExecCommand: Sendable {
    /// The program, absolute.
    public var program: URL
    /// The words after the program.
    public var arguments: [String]
    /// The plugin's working directory: relative paths it opens (say, in its options) are relative to this.
    public var directory: URL
    /// How messages, and the prefix of its stderr lines (`[csv-source.py] ...`), name it.
    public var name: String
    /// Handed to the plugin in its hello, in config order.
    public var options: [OptionValue.KeyValue]
    /// The most the plugin may take to answer one request (the hello included) and, for a source, to write its
    /// next line.
    public var timeout: Duration

    /// - Parameters:
    ///   - program: the program's file URL.
    ///   - name: nil for the program's file name.
    public init(
        program: URL, arguments: [String] = [], directory: URL, name: String? = nil,
        options: [OptionValue.KeyValue] = [], timeout: Duration = ExecCommand.defaultTimeout
    ) {
        self.program = program
        self.arguments = arguments
        self.directory = directory
        self.name = name ?? program.lastPathComponent
        self.options = options
        self.timeout = timeout
    }

    /// What `timeout` is when the config leaves it out.
    public static let defaultTimeout = Duration.seconds(60)

    /// The command a plugin section describes: `command`, `directory`, `name`, `options` and `timeout`.
    ///
    /// The first word of `command` is the program. With a `/` in it, a relative one is relative to `directory`
    /// (by default the config file's folder); a bare name is looked up on `PATH`, as a shell would. The default
    /// name is the program's file name, or, for a bare name such as `python3` whose first argument not starting
    /// with `-` is a file, that file's name.
    /// - Parameter environment: whose `PATH` a bare program name is looked up on.
    /// - Throws: ``ConfigError`` at `command` when it is empty, or the program is missing or not executable.
    public init(
        options: PluginOptions, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) {
        let words = options.list("command") ?? []
        guard let first = words.first, !first.isEmpty else {
            throw options.error(
                "command", "the command is empty; give the program and its arguments, e.g. [./plugin.py]")
        }
        let folder = URL(
            fileURLWithPath: options.path("directory") ?? FileManager.default.currentDirectoryPath, isDirectory: true)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.path, isDirectory: &isDirectory), isDirectory.boolValue
        else {
            throw options.error("directory", "no such folder: \(folder.path)")
        }
        let arguments = Array(words.dropFirst())
        let program: URL
        var name: String
        if first.contains("/") {
            program = URL(fileURLWithPath: first, relativeTo: folder).standardizedFileURL
            name = program.lastPathComponent
        } else {
            let found = Self.lookUp(first, path: environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin")
            guard let found else {
                throw options.error(
                    "command",
                    "no program \(Quoted(first)) on PATH; give its path (a relative one is relative to "
                        + "\(folder.path))")
            }
            program = found
            name = first
            // An interpreter's script names the plugin better than the interpreter does.
            if let script = arguments.first(where: { !$0.hasPrefix("-") }),
                FileManager.default.fileExists(atPath: URL(fileURLWithPath: script, relativeTo: folder).path)
            {
                name = URL(fileURLWithPath: script).lastPathComponent
            }
        }
        guard FileManager.default.fileExists(atPath: program.path, isDirectory: &isDirectory), !isDirectory.boolValue
        else {
            throw options.error(
                "command", "no such program: \(program.path) (a relative path is relative to \(folder.path))")
        }
        guard FileManager.default.isExecutableFile(atPath: program.path) else {
            throw options.error(
                "command",
                "\(program.path) is not executable; chmod +x it, or name its interpreter first, e.g. "
                    + "[python3, \(first)]")
        }
        if let given = options.string("name"), !given.isEmpty { name = given }
        self.init(
            program: program, arguments: arguments, directory: folder, name: name,
            options: options.map("options") ?? [],
            timeout: options.duration("timeout") ?? Self.defaultTimeout)
    }

    /// The first executable file called `name` in the folders of `path`.
    static func lookUp(_ name: String, path: String) -> URL? {
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder), isDirectory: true).appendingPathComponent(name)
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory),
                !isDirectory.boolValue,
                FileManager.default.isExecutableFile(atPath: candidate.path)
            {
                return candidate
            }
        }
        return nil
    }

    /// The options every `exec` plugin takes; `role` is `source` or `sink`, for the docs.
    static func specs(role: String) -> [OptionSpec] {
        [
            OptionSpec(
                "command", .stringList, required: true,
                doc: "The program and its arguments, run directly (never through a shell), e.g. [./csv-source.py] "
                    + "or [python3, csv-source.py]. A program path with a / is relative to `directory`; a bare name "
                    + "is looked up on PATH. It speaks JSON lines on stdin and stdout: see "
                    + "Plugins/ExecPlugins/PROTOCOL.md."
            ),
            OptionSpec(
                "options", .stringMap,
                doc: "Strings handed to the plugin in its hello message, e.g. {file: songs.csv}; what they mean is "
                    + "the plugin's business."
            ),
            OptionSpec(
                "directory", .path, default: .path("."), defaultText: "the config file's folder",
                doc: "The folder the plugin runs in, so relative paths in its options are relative to it."
            ),
            OptionSpec(
                "name", .string, defaultText: "the program's file name (a script's, for [python3, x.py])",
                doc: "How messages name the plugin, and the [name] prefix of its stderr lines, which are shown as "
                    + "they come."
            ),
            OptionSpec(
                "timeout", .duration, default: .duration(defaultTimeout),
                doc: role == "source"
                    ? "The most the plugin may take to answer its hello and, after that, to write each next line; "
                        + "past it the plugin is stopped and the source fails (items it sent before still run)."
                    : "The most the plugin may take to answer one request (hello, plan, store, keep, finish); past "
                        + "it the plugin is stopped, and its items in flight and all later ones fail."
            ),
        ]
    }
}
