import Foundation
import MediaFetchCLI
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

/// What a run of many items keeps out of memory, seen from outside: names planned in the ledger give the tree
/// they always gave, the URL list read a line at a time still names the bad line, a re-run over stored items
/// asks the server nothing, and the closing report lists the first failures and says where the rest are.
struct ManyItemsTests {
    /// A URL list of `names` on `server` (each file 1 KB), with a bad line third and a repeated line last.
    static func list(_ server: MockCatalogServer, _ names: [String], in scratch: URL) throws -> [String] {
        var lines: [String] = []
        for (index, name) in names.enumerated() {
            server.addFile(path: "/files/\(index)/\(name)", size: 1000, seed: UInt64(index))
            lines.append(server.url(path: "/files/\(index)/\(name)").absoluteString)
        }
        lines.insert("not a url at all", at: 2)
        lines.append(lines[0])
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: scratch.appendingPathComponent("list.txt"))
        return lines
    }

    static func spec(in scratch: URL) throws -> PipelineSpec {
        try ConfigLoader.load(
            text: """
                source: {use: urls, file: list.txt}
                sink: {use: directory, path: out, layout: "{title}.{ext}", sync: false}
                """,
            path: "many.yaml", baseDirectory: scratch, registry: BundledPlugins.registry)
    }

    @Test func namesAreNumberedAsBeforeAndARerunSendsNoRequest() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        // Three names that are one file on a case-insensitive file system, and a folder's worth of others.
        let names = ["Song.m4a", "song.m4a", "SONG.m4a"] + (0..<40).map { "item \($0).bin" }
        _ = try Self.list(server, names, in: scratch)

        let failures = Mutex<[String]>([])
        let skips = Mutex<[String]>([])
        let first = try await Runner(spec: try Self.spec(in: scratch), registry: BundledPlugins.registry).run {
            switch $0 {
            case .failed(_, _, let reason): failures.withLock { $0.append(reason) }
            case .skipped(_, let reason): skips.withLock { $0.append(reason) }
            default: break
            }
        }
        #expect(first.stored == names.count && first.failed == 1 && first.skipped == 1)
        // The list is read a line at a time; the bad line is still named by file and line.
        let failure = try #require(failures.withLock { $0 }.first)
        #expect(failure.contains("list.txt:3") && failure.contains("not an http or https URL"))
        #expect(skips.withLock { $0 } == ["\(scratch.path)/list.txt:\(names.count + 2): the same URL as line 1"])
        let out = scratch.appendingPathComponent("out")
        let tree = try CommandRunner.tree(out)
        #expect(Set(tree.keys).isSuperset(of: ["Song.m4a", "song (2).m4a", "SONG (3).m4a", "item 39.bin"]))
        #expect(tree.count == names.count)

        // Everything is stored: the next run keeps it all and asks the server for nothing.
        server.resetLog()
        let locations = Mutex<[String]>([])
        let again = try await Runner(spec: try Self.spec(in: scratch), registry: BundledPlugins.registry).run {
            if case .alreadyStored(_, _, let location) = $0 { locations.withLock { $0.append(location) } }
        }
        #expect(again.stored == 0 && again.alreadyStored == names.count && again.failed == 1)
        #expect(server.requests.isEmpty)
        // The re-run planned the same names (the kept files are where it would put them).
        #expect(Set(locations.withLock { $0 }) == Set(tree.keys))
        #expect(try CommandRunner.tree(out) == tree)
    }

    @Test func theClosingReportListsTheFirstFailuresAndSaysWhereTheRestAre() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let scratch = try CommandRunner.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: scratch) }
        // Files the server does not have: each download fails with a 404, and the ledger records it.
        let missing = (1...130).map { server.url(path: "/missing/\($0).m4a").absoluteString }
        try Data((missing.joined(separator: "\n") + "\n").utf8).write(to: scratch.appendingPathComponent("list.txt"))
        try Data(
            """
            source: {use: urls, file: list.txt}
            sink: {use: directory, path: out}
            """.utf8
        ).write(to: scratch.appendingPathComponent("many.yaml"))
        let outcome = try await CommandRunner.run(["run", "many.yaml", "--quiet"], in: scratch)
        #expect(outcome.status != 0)
        let listed = outcome.stdout.split(separator: "\n").filter { $0.hasPrefix("failed: ") }
        #expect(listed.count == 100)
        #expect(listed.allSatisfy { $0.contains("404") })
        #expect(outcome.stdout.contains("... and 30 more failed (the first 100 are listed)"))
        #expect(outcome.stdout.contains("`mediafetch status many.yaml` lists every failed download with its reason"))
        #expect(outcome.stdout.contains("0 stored, 130 failed"))
        // And it does: every failure is in the ledger.
        let status = try await CommandRunner.run(["status", "many.yaml"], in: scratch)
        #expect(status.stdout.split(separator: "\n").filter { $0.contains("404") }.count == 130)
    }
}
