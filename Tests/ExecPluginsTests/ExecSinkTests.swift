import ExecPlugins
import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// Sink plugins, well and badly behaved: stores answered stand whatever the plugin does later, what was in flight
/// fails with a reason naming the plugin, and the run ends cleanly.
struct ExecSinkTests {
    /// The test sink (``ExecFixture/testSink``) storing into `out`, fed by the `urls` source.
    static func config(_ fixture: ExecFixture, options: String = "", timeout: String = "30s") -> String {
        """
        \(fixture.urlSource)
        sink:
          use: exec
          command: [python3, test-sink.py]
          options: {folder: out\(options)}
          layout: "{title}.{ext}"
          timeout: \(timeout)
        """
    }

    /// What the server serves for the list's files, by the name the test sink stores them under.
    static func served(_ fixture: ExecFixture) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for path in fixture.paths {
            files[URL(fileURLWithPath: path).lastPathComponent] = try fixture.served(path)
        }
        return files
    }

    @Test func storesTheFilesAndKeepsThemInTheNextRun() async throws {
        let fixture = try ExecFixture()
        try fixture.writeTestSink()
        let first = try await fixture.run(Self.config(fixture))
        #expect(first.summary.stored == 4 && first.summary.exitCode == 0, "\(first.failures) \(first.summary)")
        #expect(try fixture.tree("out") == Self.served(fixture))

        let second = try await fixture.run(Self.config(fixture))
        #expect(second.summary.alreadyStored == 4 && second.summary.stored == 0)
    }

    @Test func anErrorAnswerFailsThatItemOnlyAndThePluginGoesOn() async throws {
        let fixture = try ExecFixture(files: 3)
        try fixture.writeTestSink()
        let outcome = try await fixture.run(Self.config(fixture, options: ", refuse: f2"))
        #expect(outcome.summary.stored == 2 && outcome.summary.failed == 1 && outcome.summary.sinkError == nil)
        let reason = try #require(outcome.failures.values.first)
        #expect(
            reason.hasPrefix("exec sink test-sink.py: answered store request ")
                && reason.hasSuffix(" (f2.bin) with an error: no room for f2.bin"), "\(reason)")
        var expected = try Self.served(fixture)
        expected["f2.bin"] = nil
        #expect(try fixture.tree("out") == expected)
    }

    @Test func pathsThePluginAnswersAreMadeSafeAndUnique() async throws {
        let fixture = try ExecFixture(files: 3)
        try fixture.writeTestSink()
        // Every plan is answered with the same path, one that would climb out of the folder.
        let outcome = try await fixture.run(Self.config(fixture, options: ", path: \"../../up/CON:x.bin\""))
        #expect(outcome.summary.stored == 3, "\(outcome.failures)")
        let stored = try fixture.tree("out")
        #expect(Set(stored.keys) == ["_/_/up/CON_x.bin", "_/_/up/CON_x (2).bin", "_/_/up/CON_x (3).bin"])
        #expect(Set(stored.values) == Set(try Self.served(fixture).values))
        #expect(
            !FileManager.default.fileExists(
                atPath: fixture.folder.deletingLastPathComponent().appendingPathComponent("up").path))
    }

    @Test func aPluginThatCrashesMidRunFailsWhatWasLeftAndTheStoredFilesStand() async throws {
        let fixture = try ExecFixture(files: 5)
        try fixture.writeTestSink()
        let outcome = try await fixture.run(Self.config(fixture, options: ", crash-at: \"3\""))
        #expect(outcome.summary.stored == 2)
        #expect(outcome.summary.failed == 3 && outcome.summary.exitCode == 1)
        let reasons = outcome.failures.values.sorted()
        #expect(
            reasons.contains {
                $0.hasPrefix("exec sink test-sink.py: was killed by signal 9 (SIGKILL) before answering store request ")
            }, "\(reasons)")
        #expect(reasons.allSatisfy { $0.hasPrefix("exec sink test-sink.py: ") && $0.contains("SIGKILL") }, "\(reasons)")
        #expect(
            outcome.summary.sinkError?.hasPrefix(
                "exec sink test-sink.py: is not running (was killed by signal 9 (SIGKILL)); finish request") == true,
            "\(outcome.summary.sinkError ?? "")")

        // The two files stored before the crash are whole, and the ledger has them: the next run keeps them and
        // fetches only the rest.
        let served = try Self.served(fixture)
        let stored = try fixture.tree("out")
        #expect(stored.count == 2)
        for (name, bytes) in stored { #expect(served[name] == bytes, "\(name)") }
        let again = try await fixture.run(Self.config(fixture))
        #expect(again.summary.alreadyStored == 2 && again.summary.stored == 3, "\(again.failures)")
        #expect(try fixture.tree("out") == served)
    }

    @Test(.timeLimit(.minutes(3)))
    func aPluginThatHangsIsStoppedAtItsTimeoutAndTheRunEnds() async throws {
        let fixture = try ExecFixture(files: 3)
        // Answers plans, then never answers the first store: its sleep is a child, stopped with the plugin.
        try fixture.script(
            "hang.sh",
            #"""
            #!/bin/sh
            IFS= read -r hello
            printf '{"type":"hello","protocol":1}\n'
            while IFS= read -r line; do
                id=$(printf '%s\n' "$line" | sed -n 's/.*[{,]"id":\([0-9]*\).*/\1/p')
                case $line in
                '{"type":"plan",'*) printf '{"type":"planned","id":%s,"path":"f%s.bin"}\n' "$id" "$id" ;;
                '{"type":"store",'*) sleep 300 ;;
                esac
            done
            """#)
        let outcome = try await fixture.run(
            """
            \(fixture.urlSource)
            sink: {use: exec, command: [./hang.sh], timeout: 1s}
            """)
        // Far below the plugin's 300 s sleep: it was stopped at its timeout, not waited for. (Not a speed check: on a
        // loaded machine the run's start-up alone has taken 20 s.)
        #expect(outcome.seconds < 150, "the run took \(outcome.seconds) s")
        #expect(outcome.summary.stored == 0 && outcome.summary.failed == 3)
        let reasons = outcome.failures.values
        #expect(
            reasons.contains {
                $0.hasPrefix("exec sink hang.sh: did not answer store request ")
                    && $0.hasSuffix(
                        "within 1s (its timeout), so it was stopped (a plugin must flush its output after every line)")
            }, "\(reasons)")
        #expect(reasons.allSatisfy { $0.contains("1s (its timeout)") }, "\(reasons)")
        #expect(outcome.summary.sinkError?.contains("is not running") == true)
    }

    @Test func aPluginThatStopsReadingFailsItsItemsAndNeverKillsMediafetch() async throws {
        let fixture = try ExecFixture(files: 2)
        // Closes its stdin after the hello: the next request written to it would raise SIGPIPE in mediafetch.
        try fixture.script(
            "deaf.sh",
            #"""
            #!/bin/sh
            IFS= read -r hello
            exec 0<&-
            printf '{"type":"hello","protocol":1}\n'
            exit 3
            """#)
        let outcome = try await fixture.run(
            """
            \(fixture.urlSource)
            sink: {use: exec, command: [./deaf.sh]}
            """)
        #expect(outcome.summary.failed == 2 && outcome.summary.stored == 0)
        #expect(
            outcome.failures.values.allSatisfy { $0.hasPrefix("exec sink deaf.sh: ") && $0.contains("status 3") },
            "\(outcome.failures)")
    }

    @Test func aPluginMayAnswerSeveralRequestsOutOfOrderByTheirIds() async throws {
        _ = try RequiredProgram.python3.locate()
        let fixture = try ExecFixture(files: 6)
        // Holds what it is asked until nothing more comes for a moment, then answers the newest first.
        try fixture.write(
            "batch.py",
            #"""
            import json, os, select, shutil, sys

            def send(message):
                sys.stdout.write(json.dumps(message) + "\n")
                sys.stdout.flush()

            def answer(request):
                if request["type"] == "plan":
                    return {"type": "planned", "id": request["id"], "path": request["suggested"]}
                if request["type"] == "store":
                    target = os.path.join("out", request["path"])
                    os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
                    shutil.move(request["file"], target)
                    return {"type": "stored", "id": request["id"], "location": target}
                if request["type"] == "finish":
                    return {"type": "finished", "id": request["id"]}
                return {"type": "error", "id": request["id"], "message": "not here"}

            # Read from the descriptor, not sys.stdin: its buffer would hide lines from select.
            unread = b""
            waiting = []
            while True:
                ready, _, _ = select.select([0], [], [], 0.05 if waiting else None)
                if ready:
                    chunk = os.read(0, 65536)
                    if not chunk:
                        break
                    *lines, unread = (unread + chunk).split(b"\n")
                    waiting.extend(json.loads(line) for line in lines if line)
                    if waiting and waiting[0]["type"] == "hello":
                        waiting.pop(0)
                        send({"type": "hello", "protocol": 1})
                    continue
                while waiting:
                    send(answer(waiting.pop()))
            """#)
        let outcome = try await fixture.run(
            """
            \(fixture.urlSource)
            sink: {use: exec, command: [python3, batch.py], concurrency: 4, layout: "{title}.{ext}"}
            """)
        #expect(outcome.summary.stored == 6 && outcome.summary.exitCode == 0, "\(outcome.failures)")
        #expect(try fixture.tree("out") == Self.served(fixture))
    }

    @Test func anAnswerWithoutItsFieldNamesThePluginTheLineAndWhatWasExpected() async throws {
        let fixture = try ExecFixture(files: 2)
        try fixture.script(
            "pathless.sh",
            #"""
            #!/bin/sh
            IFS= read -r hello
            printf '{"type":"hello","protocol":1}\n'
            IFS= read -r plan
            printf '{"type":"planned","id":1,"where":"f.bin"}\n'
            cat > /dev/null
            """#)
        let outcome = try await fixture.run(
            """
            \(fixture.urlSource)
            sink: {use: exec, command: [./pathless.sh]}
            """)
        #expect(outcome.summary.failed == 2 && outcome.summary.stored == 0)
        let reasons = Set(outcome.failures.values)
        #expect(
            reasons.contains(
                "exec sink pathless.sh: line 2 of its output: the planned message has no \"path\"; expected a "
                    + "non-empty string"), "\(reasons)")
        // The plugin is stopped: the other item is not even asked about.
        #expect(
            reasons.contains {
                $0.hasPrefix("exec sink pathless.sh: is not running (line 2 of its output: the planned message has no")
            }, "\(reasons)")
    }

    @Test func aSinkThatChoosesAnotherVersionFailsEveryItemWithTheReason() async throws {
        let fixture = try ExecFixture(files: 2)
        try fixture.script(
            "future.sh",
            #"""
            #!/bin/sh
            IFS= read -r hello
            printf '{"type":"hello","protocol":7}\n'
            cat > /dev/null
            """#)
        let outcome = try await fixture.run(
            """
            \(fixture.urlSource)
            sink: {use: exec, command: [./future.sh]}
            """)
        #expect(outcome.summary.stored == 0 && outcome.summary.failed == 2)
        #expect(
            outcome.failures.values.allSatisfy {
                $0.contains("the plugin speaks protocol version 7, and this mediafetch speaks 1")
            },
            "\(outcome.failures)")
        #expect(outcome.summary.sinkError != nil)
    }

    @Test func requestsAreWrittenAsTheProtocolPromisesAndStderrIsPrefixed() async throws {
        let fixture = try ExecFixture(files: 1)
        // Keeps every request, answers with the suggested path, and talks on stderr.
        try fixture.script(
            "log.sh",
            #"""
            #!/bin/sh
            IFS= read -r hello
            printf '{"type":"hello","protocol":1}\n'
            echo "started" >&2
            while IFS= read -r line; do
                printf '%s\n' "$line" >> requests.log
                id=$(printf '%s\n' "$line" | sed -n 's/.*[{,]"id":\([0-9]*\).*/\1/p')
                case $line in
                '{"type":"plan",'*) printf '{"type":"planned","id":%s,"path":"f.bin"}\n' "$id" ;;
                '{"type":"store",'*) printf '{"type":"stored","id":%s,"location":"kept/f.bin"}\n' "$id" ;;
                '{"type":"finish",'*) printf '{"type":"finished","id":%s}\n' "$id" ;;
                esac
            done
            echo 'bye' >&2
            """#)
        let lines = Mutex<[String]>([])
        var registry = BundledPlugins.registry
        registry.register(
            sink: SinkDescriptor(
                info: ExecSink.descriptor.info,
                make: { options, _ in
                    let sink = try ExecSink(options: options)
                    return ExecSink(
                        command: sink.command, layout: sink.layout, collection: sink.collection, sendsDigests: true
                    ) { line in lines.withLock { $0.append(line) } }
                }))
        let outcome = try await fixture.run(
            """
            \(fixture.urlSource)
            sink: {use: exec, command: [./log.sh], layout: "{title}.{ext}"}
            """, registry: registry)
        #expect(outcome.summary.stored == 1, "\(outcome.failures)")
        // The last line too: the sink's finish waits for the plugin's exit, which is taken once stderr is read.
        #expect(lines.withLock { $0 } == ["[log.sh] started", "[log.sh] bye"])

        let log = String(
            decoding: try Data(contentsOf: fixture.folder.appendingPathComponent("requests.log")), as: UTF8.self)
        let requests = log.split(separator: "\n").map(String.init)
        try #require(requests.count == 3, "\(log)")
        let url = fixture.server.url(path: fixture.paths[0]).absoluteString
        #expect(
            requests[0]
                == #"{"type":"plan","id":1,"asset":"preview","suggested":"f1.bin","ext":"bin","url":"\#(url)","#
                + #""itemId":"\#(url)","kind":"file","title":"f1","previewUrl":"\#(url)"}"#)
        // The store names the staged file, its size and (asked for here) its SHA-256.
        let bytes = try fixture.served(fixture.paths[0])
        #expect(requests[1].hasPrefix(#"{"type":"store","id":2,"path":"f.bin","file":"/"#), "\(requests[1])")
        #expect(requests[1].contains(#","size":\#(bytes.count),"sha256":"\#(SHA256.hex(of: bytes))","#))
        #expect(requests[1].hasSuffix(#","asset":"preview","itemId":"\#(url)","title":"f1","sourceUrl":"\#(url)"}"#))
        #expect(requests[2] == #"{"type":"finish","id":3}"#)
    }
}
