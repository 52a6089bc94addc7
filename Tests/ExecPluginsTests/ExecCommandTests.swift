import ExecPlugins
import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Testing

/// What `command`, `directory` and `name` resolve to, and the config errors `mediafetch check` gives for a
/// program that cannot run.
struct ExecCommandTests {
    /// The command the source section of `yaml` describes, as its factory reads it.
    static func command(_ fixture: ExecFixture, _ source: String) throws -> ExecCommand {
        let spec = try fixture.spec("source: " + source)
        return try ExecCommand(options: spec.source.options)
    }

    @Test func aRelativeProgramIsRelativeToTheConfigsFolderAndRunsThere() throws {
        let fixture = try ExecFixture(files: 1)
        try FileManager.default.createDirectory(
            at: fixture.folder.appendingPathComponent("plugins"), withIntermediateDirectories: true)
        try fixture.script("plugins/list.sh", "#!/bin/sh\n")
        let command = try Self.command(fixture, "{use: exec, command: [plugins/list.sh, --all], options: {a: b}}")
        #expect(
            command.program.path == fixture.folder.appendingPathComponent("plugins/list.sh").standardizedFileURL.path)
        #expect(command.arguments == ["--all"])
        #expect(command.directory.standardizedFileURL.path == fixture.folder.standardizedFileURL.path)
        #expect(command.name == "list.sh")
        #expect(command.options == [OptionValue.KeyValue("a", "b")])
        #expect(command.timeout == .seconds(60))

        // With `directory`, the program and the plugin's folder move together.
        let moved = try Self.command(fixture, "{use: exec, command: [./list.sh], directory: plugins, timeout: 2s}")
        #expect(moved.program.lastPathComponent == "list.sh" && moved.directory.lastPathComponent == "plugins")
        #expect(moved.timeout == .seconds(2))
    }

    @Test func anInterpretersScriptNamesThePlugin() throws {
        let fixture = try ExecFixture(files: 1)
        try fixture.write("csv-source.py", "")
        #expect(try Self.command(fixture, "{use: exec, command: [sh, csv-source.py]}").name == "csv-source.py")
        #expect(try Self.command(fixture, "{use: exec, command: [sh, -c, 'exit 0']}").name == "sh")
        #expect(try Self.command(fixture, "{use: exec, command: [sh, csv-source.py], name: csv}").name == "csv")
    }

    @Test func aProgramThatCannotRunIsAConfigErrorAtCommand() throws {
        let fixture = try ExecFixture(files: 1)
        try fixture.write("plain.sh", "#!/bin/sh\n")
        let cases = [
            ("[./missing.sh]", "no such program: \(fixture.folder.appendingPathComponent("missing.sh").path)"),
            (
                "[./plain.sh]",
                "is not executable; chmod +x it, or name its interpreter first, e.g. [python3, ./plain.sh]"
            ),
            ("[mediafetch-no-such-program]", "no program \"mediafetch-no-such-program\" on PATH"),
            ("[]", "the command is empty"),
        ]
        for (command, message) in cases {
            let spec = try fixture.spec("source: {use: exec, command: \(command)}")
            let error = try #require(throws: ConfigError.self) {
                _ = try PipelineParts(spec: spec, registry: BundledPlugins.registry)
            }
            #expect(error.key == "source.command")
            #expect(error.message.contains(message), "\(error)")
        }
    }
}
