import Foundation
import MediaFetchCore

/// `mediafetch run CONFIG`: the main job.
enum RunCommand {
    static let help = """
        Usage: mediafetch run CONFIG [--set KEY=VALUE]... [--refetch] [--quiet] [--json]

        Runs the pipeline a YAML config describes: search, download, store. The ledger in the config's
        state directory makes a run idempotent: stored items are not fetched again, partial downloads
        resume where they stopped.

          --set KEY=VALUE   override a config value before validation, e.g. --set sink.path=out/x
                            (dotted path; the value is read as a YAML scalar). May be repeated.
          --refetch         ignore the ledger: fetch everything again
          --quiet           no progress on stderr
          --json            print the summary as JSON on stdout

        Progress goes to stderr; the summary and the failures to stdout.
        Exit codes: 0 all stored, 1 some items failed, 2 usage or config error, 3 the source failed,
        130 interrupted (Ctrl-C once stops gently; twice stops at once).
        """

    static func run(_ words: [String]) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--set"], bare: ["--quiet", "--json", "--refetch"])
        guard arguments.positional.count == 1 else {
            throw UsageError("run takes one CONFIG file, e.g. `mediafetch run config/demo.yaml`")
        }
        let registry = BundledPlugins.registry
        let spec = try ConfigLoader.load(
            path: arguments.positional[0], overrides: arguments.all("--set"), registry: registry)
        let summary = try await execute(
            spec, registry: registry, quiet: arguments.has("--quiet"),
            json: arguments.has("--json"), refetch: arguments.has("--refetch"))
        return summary.exitCode
    }

    /// Makes the plugins, runs the pipeline under signal handling, and prints the outcome.
    static func execute(
        _ spec: PipelineSpec, registry: PluginRegistry, quiet: Bool, json: Bool, refetch: Bool = false
    ) async throws -> RunSummary {
        let parts = try PipelineParts(spec: spec, registry: registry)
        let ledger = try Ledger(directory: spec.stateDirectory)
        let reporter = Reporter(mode: Reporter.mode(quiet: quiet || json))
        let pipeline = Pipeline(
            source: parts.source,
            transport: parts.transport,
            sink: parts.sink,
            options: .init(
                concurrency: parts.transport.maxConcurrentTransfers,
                stagingDirectory: Pipeline.stagingDirectory(state: spec.stateDirectory),
                sourceName: parts.sourceName,
                ledger: ledger,
                refetch: refetch,
                policy: spec.downloadPolicy
            ),
            events: reporter.handle
        )
        let summary = await SignalWatcher().run { await pipeline.run() }
        if json {
            printJSON(RunReport(summary: summary, failures: reporter.failures.map(RunReport.Failure.init)))
        } else {
            printSummary(summary, failures: reporter.failures, spec: spec)
        }
        return summary
    }

    static func printSummary(_ summary: RunSummary, failures: [(ItemRef, URL?, String)], spec: PipelineSpec) {
        for (ref, url, reason) in failures {
            print("failed: \(ref)" + (url.map { " <\($0.absoluteString)>" } ?? "") + ": \(reason)")
        }
        var line = "\(summary.stored) stored, \(summary.failed) failed, \(summary.skipped) skipped"
        if summary.alreadyStored > 0 { line += ", \(summary.alreadyStored) already stored" }
        line += "; \(Reporter.formatBytes(summary.bytes)) in \(String(format: "%.1f", summary.wallSeconds)) s"
        if summary.bytesTransferred < summary.bytes {
            line += " (\(Reporter.formatBytes(summary.bytesTransferred)) downloaded, the rest resumed)"
        }
        print(line)
        if let error = summary.sourceError { print("the source failed: \(error)") }
        if let error = summary.sinkError { print("the sink failed: \(error)") }
        if let reason = summary.stopReason { print("stopped early: \(reason)") }
        if summary.interrupted {
            print(
                "interrupted: finished files are stored and partial downloads kept; run the same command "
                    + "again to resume (`mediafetch status \(spec.configPath)` shows where things stand)")
        }
    }

    static func printJSON(_ value: some Encodable) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        if let data = try? encoder.encode(value) { print(String(decoding: data, as: UTF8.self)) }
    }
}

/// `--json` output of a run.
struct RunReport: Encodable {
    struct Failure: Encodable {
        var item: ItemRef
        var url: String?
        var reason: String

        init(_ failure: (ItemRef, URL?, String)) {
            item = failure.0
            url = failure.1?.absoluteString
            reason = failure.2
        }
    }

    var summary: RunSummary
    var failures: [Failure]
}
