import ExecPlugins
import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// Source plugins that misbehave, as small sh scripts: each failure names the plugin and what went wrong, the
/// items it sent before are still stored, and the plugin is never left running.
struct ExecSourceTests {
    /// A sh source that answers the hello, then writes `body` (its lines may use $URL1, $URL2: two served files).
    static func source(_ fixture: ExecFixture, _ name: String, _ body: String) throws {
        try fixture.script(
            name,
            """
            #!/bin/sh
            URL1='\(fixture.server.url(path: fixture.paths[0]).absoluteString)'
            URL2='\(fixture.server.url(path: fixture.paths[1]).absoluteString)'
            IFS= read -r hello
            printf '{"type":"hello","protocol":1}\\n'
            \(body)
            """)
    }

    static func config(_ name: String, timeout: String = "30s") -> String {
        """
        source: {use: exec, command: [./\(name)], timeout: \(timeout)}
        sink: {use: directory, path: out, layout: "{id}.bin"}
        """
    }

    static func item(_ id: String, _ url: String) -> String {
        "printf '{\"type\":\"item\",\"id\":\"\(id)\",\"title\":\"Item \(id)\",\"previewUrl\":\"%s\"}\\n' \"\(url)\""
    }

    @Test func outputThatIsNotJSONNamesThePluginTheLineAndWhatWasExpected() async throws {
        let fixture = try ExecFixture()
        try Self.source(
            fixture, "garbage.sh",
            """
            \(Self.item("1", "$URL1"))
            echo 'Traceback (most recent call last):'
            """)
        let outcome = try await fixture.run(Self.config("garbage.sh"))
        let error = try #require(outcome.summary.sourceError)
        #expect(error.hasPrefix("exec source garbage.sh: line 3 of its output: "), "\(error)")
        #expect(error.contains("expected a JSON object on one line (an item, skip, fail, error or end message)"))
        #expect(error.contains("got \"Traceback (most recent call last):\""))
        #expect(outcome.summary.exitCode == 3)
        // What came before the bad line is stored.
        #expect(try fixture.tree("out") == ["1.bin": try fixture.served(fixture.paths[0])])
    }

    @Test func aFieldOfTheWrongTypeIsNamedWithWhatItShouldBe() async throws {
        let fixture = try ExecFixture()
        try Self.source(
            fixture, "typed.sh",
            #"printf '{"type":"item","id":"7","title":"Seven","trackNumber":"one","previewUrl":"%s"}\n' "$URL1""#)
        let outcome = try await fixture.run(Self.config("typed.sh"))
        let error = try #require(outcome.summary.sourceError)
        #expect(
            error
                == "exec source typed.sh: line 2 of its output: expected \"trackNumber\" to be a whole number of at "
                + "least 0 in the item message, got the string \"one\"")
    }

    @Test func anErrorMessageEndsTheSourceWithItsReason() async throws {
        let fixture = try ExecFixture()
        try Self.source(
            fixture, "failing.sh",
            """
            \(Self.item("1", "$URL1"))
            printf '{"type":"error","message":"the catalog answered 503"}\\n'
            """)
        let outcome = try await fixture.run(Self.config("failing.sh"))
        #expect(outcome.summary.sourceError == "exec source failing.sh: reported an error: the catalog answered 503")
        #expect(outcome.summary.stored == 1 && outcome.summary.exitCode == 3)
    }

    @Test func aPluginThatCrashesMidRunEndsTheSourceAndKeepsWhatItSent() async throws {
        let fixture = try ExecFixture()
        try Self.source(
            fixture, "crash.sh",
            """
            \(Self.item("1", "$URL1"))
            \(Self.item("2", "$URL2"))
            kill -9 $$
            """)
        let outcome = try await fixture.run(Self.config("crash.sh"))
        #expect(
            outcome.summary.sourceError
                == "exec source crash.sh: was killed by signal 9 (SIGKILL) before its end message; the items it sent "
                + "before run on")
        #expect(outcome.summary.stored == 2 && outcome.summary.exitCode == 3)
        #expect(
            try fixture.tree("out") == [
                "1.bin": try fixture.served(fixture.paths[0]), "2.bin": try fixture.served(fixture.paths[1]),
            ])
    }

    @Test(.timeLimit(.minutes(3)))
    func aPluginThatHangsIsStoppedAtItsTimeout() async throws {
        let fixture = try ExecFixture()
        let pidFile = fixture.folder.appendingPathComponent("sleep.pid")
        // The sleep is the shell's child: stopping the plugin must stop it too, or its stdout would stay open.
        try Self.source(
            fixture, "hang.sh",
            """
            \(Self.item("1", "$URL1"))
            sleep 300 &
            echo $! > sleep.pid
            wait
            """)
        let outcome = try await fixture.run(Self.config("hang.sh", timeout: "1s"))
        #expect(
            outcome.summary.sourceError
                == "exec source hang.sh: took longer than its timeout (1s) to write its next line, so it was stopped "
                + "(a plugin must flush its output after every line)")
        #expect(outcome.summary.stored == 1)
        // Far below the plugin's 300 s sleep: it was stopped at its timeout, not waited for. (Not a speed check: on a
        // loaded machine the run's start-up alone has taken 20 s.)
        #expect(outcome.seconds < 150, "the run took \(outcome.seconds) s")
        let sleeper = try #require(
            Int32(String(decoding: try Data(contentsOf: pidFile), as: UTF8.self).filter(\.isNumber)))
        await yield(until: { !Self.isRunning(sleeper) }, atMost: .seconds(10))
        #expect(!Self.isRunning(sleeper), "the plugin's child \(sleeper) is still running")
    }

    /// Whether process `pid` exists and is not a zombie (which a container's init may be slow to reap).
    static func isRunning(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return false }
        return stat[stat.index(after: close)...].trimmingCharacters(in: .whitespaces).first != "Z"
    }

    @Test func aVersionThePluginChoseOutsideTheRangeIsRefused() async throws {
        let fixture = try ExecFixture()
        try fixture.script(
            "future.sh",
            """
            #!/bin/sh
            IFS= read -r hello
            printf '{"type":"hello","protocol":2}\\n'
            """)
        let outcome = try await fixture.run(Self.config("future.sh"))
        #expect(
            outcome.summary.sourceError
                == "exec source future.sh: line 1 of its output: the plugin speaks protocol version 2, and this "
                + "mediafetch speaks 1; update whichever is older")
        #expect(outcome.summary.stored == 0)
    }

    @Test func aPluginThatRefusesTheOfferedVersionSaysWhy() async throws {
        let fixture = try ExecFixture()
        try fixture.script(
            "old.sh",
            """
            #!/bin/sh
            IFS= read -r hello
            case $hello in
            *'"protocol":1,'*) printf '{"type":"error","message":"I speak protocol 0 only"}\\n' ;;
            esac
            """)
        let outcome = try await fixture.run(Self.config("old.sh"))
        #expect(
            outcome.summary.sourceError
                == "exec source old.sh: line 1 of its output: the plugin refused to start (offered protocol 1): I "
                + "speak protocol 0 only")
    }

    @Test func theHelloCarriesTheOptionsAndIdsAreKeptApart() async throws {
        let fixture = try ExecFixture()
        // Keeps its hello, so the test can see what it was sent: exactly what PROTOCOL.md says it is.
        try Self.source(
            fixture, "echo.sh",
            """
            printf '%s\\n' "$hello" > hello.json
            \(Self.item("1", "$URL1"))
            \(Self.item("1", "$URL2"))
            printf '{"type":"skip","id":"3","reason":"not today"}\\n'
            printf '{"type":"item","id":4,"title":"Four","previewUrl":"%s"}\\n' "$URL2"
            printf '{"type":"end"}\\n'
            """)
        let outcome = try await fixture.run(
            #"""
            source: {use: exec, command: [./echo.sh], options: {file: "a b.csv", quote: "back\\slash \"q\" é"}}
            sink: {use: directory, path: out, layout: "{id}.bin"}
            """#)
        #expect(outcome.summary.stored == 2 && outcome.summary.exitCode == 0, "\(outcome.failures)")
        let hello = String(
            decoding: try Data(contentsOf: fixture.folder.appendingPathComponent("hello.json")), as: UTF8.self)
        #expect(
            hello
                == #"{"type":"hello","protocol":1,"minProtocol":1,"role":"source","name":"echo.sh","options":"#
                + #"{"file":"a b.csv","quote":"back\\slash \"q\" é"}}"# + "\n")
        // The second item with id 1 is skipped; a whole-number id is taken as its digits.
        #expect(
            try fixture.tree("out") == [
                "1.bin": try fixture.served(fixture.paths[0]), "4.bin": try fixture.served(fixture.paths[1]),
            ])
        #expect(outcome.skips["1"] == "echo.sh line 3: the same id as line 2")
        #expect(outcome.skips["3"] == "not today")
    }

    @Test func stderrLinesReachTheUserPrefixedWithThePluginsName() async throws {
        let fixture = try ExecFixture()
        try Self.source(
            fixture, "chatty.sh",
            """
            echo 'reading the catalog' >&2
            printf 'no newline at the end' >&2
            printf '{"type":"end"}\\n'
            """)
        let lines = Mutex<[String]>([])
        var registry = BundledPlugins.registry
        registry.register(
            source: SourceDescriptor(
                info: ExecSource.descriptor.info,
                make: { options, _ in
                    ExecSource(command: try ExecCommand(options: options)) { line in lines.withLock { $0.append(line) }
                    }
                }))
        let outcome = try await fixture.run(
            """
            source: {use: exec, command: [./chatty.sh], name: catalog}
            """, registry: registry)
        #expect(outcome.summary.exitCode == 0)
        // Shown before the run returns: the end of the plugin is taken only once its stderr is read to the end.
        #expect(lines.withLock { $0 } == ["[catalog] reading the catalog", "[catalog] no newline at the end"])
    }
}
