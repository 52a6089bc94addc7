import Foundation
import MediaFetchCore

/// `mediafetch run CONFIG`: the main job.
enum RunCommand {
    static let help = """
        Usage: mediafetch run CONFIG [--set KEY=VALUE]... [--refetch] [--quiet] [--json] [--worker ID]
                              [--cores auto|all]

        Runs the pipeline a YAML config describes: search, download, store. The ledger in the config's
        state directory makes a run idempotent: stored items are not fetched again, partial downloads
        resume where they stopped.

          --set KEY=VALUE   override a config value before validation, e.g. --set sink.path=out/x
                            (dotted path; the value is read as a YAML scalar). May be repeated.
          --refetch         ignore the ledger: fetch everything again
          --quiet           no progress on stderr
          --json            print the summary as JSON on stdout
          --worker ID       with a shared ledger (ledger: postgresql://...), this worker's id in the run
                            named by name: (default host:pid); the same id coming back resumes its partial files
          --cores auto|all  auto (the default): a run that uses under three quarters of one CPU keeps its
                            threads on one while it stores files as fast there, leaving the others to the rest
                            of the machine (a server on the same machine above all); all: every CPU the process
                            was given, as with an exec source or sink (their processes would inherit the one)

        Progress goes to stderr; the summary and the failures to stdout.
        Exit codes: 0 all stored, 1 some items failed, 2 usage or config error, 3 the source failed,
        130 interrupted (Ctrl-C once stops gently; twice stops at once).
        """

    static func run(_ words: [String], registry: PluginRegistry) async throws -> Int32 {
        let arguments = try Arguments(
            words, valued: ["--set", "--worker", "--cores"], bare: ["--quiet", "--json", "--refetch"])
        guard arguments.positional.count == 1 else {
            throw UsageError("run takes one CONFIG file, e.g. `mediafetch run config/demo.yaml`")
        }
        let cores = arguments.all("--cores").last ?? "auto"
        guard cores == "auto" || cores == "all" else {
            throw UsageError("--cores takes auto or all, not `\(cores)`")
        }
        let spec = try ConfigLoader.load(
            path: arguments.positional[0], overrides: arguments.all("--set"), registry: registry)
        let summary = try await execute(
            spec, registry: registry, quiet: arguments.has("--quiet"),
            json: arguments.has("--json"), refetch: arguments.has("--refetch"), worker: arguments.all("--worker").last,
            coreBudget: cores == "auto" && spec.source.name != "exec" && spec.sink.name != "exec")
        return summary.exitCode
    }

    /// Runs the spec with the public ``Runner`` under signal handling (Ctrl-C cancels it), and prints the outcome.
    /// With `coreBudget`, the process keeps to one CPU while that serves the run as well (``CoreBudget``).
    static func execute(
        _ spec: PipelineSpec, registry: PluginRegistry, quiet: Bool, json: Bool, refetch: Bool = false,
        worker: String? = nil, coreBudget: Bool = false
    ) async throws -> RunSummary {
        let reporter = Reporter(mode: Reporter.mode(quiet: quiet || json))
        let runner = Runner(spec: spec, registry: registry, options: .init(refetch: refetch, worker: worker))
        let budget = coreBudget ? CoreBudget() : nil
        defer { budget?.stop() }
        let events: @Sendable (PipelineEvent) -> Void = { event in
            budget?.note(event)
            reporter.handle(event)
        }
        let outcome = await SignalWatcher().run { () -> Result<RunSummary, any Error> in
            do {
                return .success(try await runner.run(events: events))
            } catch {
                return .failure(error)
            }
        }
        let summary = try outcome.get()
        if json {
            printJSON(
                RunReport(
                    summary: summary, failures: reporter.failures.map(RunReport.Failure.init),
                    failuresNotListed: reporter.failuresNotListed))
        } else {
            printSummary(
                summary, failures: reporter.failures, failuresNotListed: reporter.failuresNotListed,
                skipReasons: reporter.skipReasons, spec: spec)
        }
        return summary
    }

    static func printSummary(
        _ summary: RunSummary, failures: [(ItemRef, URL?, String)], failuresNotListed: Int = 0,
        skipReasons: [(reason: String, count: Int)], spec: PipelineSpec
    ) {
        for (ref, url, reason) in failures {
            // The reason names the URL when the transport failed; otherwise say which URL it was.
            let shownURL = url.map(\.absoluteString).flatMap { reason.contains($0) ? nil : " <\($0)>" } ?? ""
            print("failed: \(ref)\(shownURL): \(ItemRef.printable(reason))")
        }
        if failuresNotListed > 0 {
            let status = ["mediafetch", "status", spec.configPath] + overrides(of: CommandLine.arguments)
            print(
                "... and \(failuresNotListed) more failed (the first \(failures.count) are listed); "
                    + "`\(shellLine(status))` lists every failed download with its reason")
        }
        var line = "\(summary.stored) stored, \(summary.failed) failed, \(summary.skipped) skipped"
        if summary.alreadyStored > 0 { line += ", \(summary.alreadyStored) already stored" }
        line += "; \(Reporter.formatBytes(summary.bytes)) in \(String(format: "%.1f", summary.wallSeconds)) s"
        if summary.bytesTransferred < summary.bytes {
            line += " (\(Reporter.formatBytes(summary.bytesTransferred)) downloaded, the rest resumed)"
        }
        print(line)
        let nothingFetched = summary.stored + summary.failed + summary.alreadyStored + summary.paused == 0
        if nothingFetched && summary.sourceError == nil && !summary.interrupted {
            if summary.skipped == 0 {
                print("the source found nothing to fetch (check the search term, ids or list file)")
            } else {
                let reasons = skipReasons.map { "\($0.count): \($0.reason)" }.joined(separator: "; ")
                print("every item the source found was skipped, so nothing was downloaded (\(reasons))")
                if skipReasons.contains(where: { $0.reason.contains("no preview") }),
                    let hint = nothingToDownloadHint(spec)
                {
                    print(hint)
                }
            }
        }
        if let error = summary.sourceError { print("the source failed: \(error)") }
        if let error = summary.sinkError { print(summary.interrupted ? error : "the sink failed: \(error)") }
        if let reason = summary.stopReason { print("stopped early: \(reason)") }
        if summary.interrupted {
            let kept =
                summary.paused == 0
                ? ""
                : " (\(summary.paused) partial downloads kept, "
                    + "\(Reporter.formatBytes(summary.pausedBytes)))"
            let status = ["mediafetch", "status", spec.configPath] + overrides(of: CommandLine.arguments)
            print(
                "interrupted\(kept): run the same command again to resume; `\(shellLine(status))` shows where "
                    + "things stand")
        }
    }

    /// What would have given a run whose items all lacked a preview something to download, for the catalog's
    /// source.
    static func nothingToDownloadHint(_ spec: PipelineSpec) -> String? {
        guard spec.source.name == "itunes" else { return nil }
        let media = spec.source.options.string("media") ?? "music"
        let entity = spec.source.options.string("entity")
        let storesArtwork = (spec.sink.options.list("assets") ?? []).contains("artwork")
        let artwork = storesArtwork ? "" : "; `assets: [artwork]` in the sink stores their artwork instead"
        if media == "podcast" && entity != "podcastEpisode" {
            return "podcast shows carry no preview, only their feed: `entity: podcastEpisode` in the source finds "
                + "their episodes (whole episodes, not previews; download.max-size caps each)" + artwork
        }
        return "these records carry no preview (albums, artists, software, ebooks have none): an entity with "
            + "one gives previews (music: song or musicVideo; movie, tvShow, audiobook)" + artwork
    }

    /// The `--set` arguments of a command line, to repeat them in a hint.
    static func overrides(of arguments: [String]) -> [String] {
        var result: [String] = []
        var index = 0
        while index < arguments.count {
            if arguments[index] == "--set", index + 1 < arguments.count {
                result += ["--set", arguments[index + 1]]
                index += 1
            } else if arguments[index].hasPrefix("--set=") {
                result.append(arguments[index])
            }
            index += 1
        }
        return result
    }

    /// Words quoted for a POSIX shell where they need it.
    static func shellLine(_ words: [String]) -> String {
        words.map { word in
            let safe =
                !word.isEmpty
                && word.unicodeScalars.allSatisfy {
                    $0.isASCII && (CharacterSet.alphanumerics.contains($0) || "-_./=:,@%+".unicodeScalars.contains($0))
                }
            return safe ? word : "'" + word.replacingOccurrences(of: "'", with: "'\\''") + "'"
        }.joined(separator: " ")
    }

    static func printJSON(_ value: some Encodable) {
        if let data = try? jsonEncoder().encode(value) { print(String(decoding: data, as: UTF8.self)) }
    }

    /// The encoder of every `--json` output: indented, keys sorted, dates in ISO 8601.
    static func jsonEncoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
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
    /// The first failures (``Reporter/failureLimit``); the ledger holds every one.
    var failures: [Failure]
    /// Failures beyond ``failures``: `mediafetch status` lists them.
    var failuresNotListed: Int
}
