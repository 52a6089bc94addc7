import Foundation
import MediaFetchCore

/// `mediafetch clean CONFIG`: cancel what is half done.
enum CleanCommand {
    static let help = """
        Usage: mediafetch clean CONFIG [--set KEY=VALUE]... [--all]

        Discards partial downloads, so the next run starts them from zero, and what interrupted runs left
        unfinished in the sink itself (the s3 multipart uploads this state folder's runs left open). Stored files
        are never touched.
          --all   forget the ledger too: the next run fetches everything again
        """

    static func run(_ words: [String], registry: PluginRegistry) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--set"], bare: ["--all"])
        guard arguments.positional.count == 1 else { throw UsageError("clean takes one CONFIG file") }
        let spec = try ConfigLoader.load(
            path: arguments.positional[0], overrides: arguments.all("--set"), registry: registry)
        let lock = try StateLock(directory: spec.stateDirectory)
        defer { withExtendedLifetime(lock) {} }
        let files = FileManager.default
        let staging = Pipeline.stagingDirectory(state: spec.stateDirectory)
        let partials = Pipeline.partialFiles(in: staging)
        for file in partials { try files.removeItem(at: file) }
        print("removed \(partials.count) partial download\(partials.count == 1 ? "" : "s")")
        let parts = try PipelineParts(spec: spec, registry: registry)
        do {
            for line in try await parts.sink.discardUnfinished() { print(line) }
        } catch {
            await parts.transport.shutdown()
            throw StartupError("cannot discard what the sink left unfinished: \(error)", cause: error)
        }
        await parts.transport.shutdown()

        if spec.ledger != nil {
            // A shared ledger is forgotten row by row (this run's only), never dropped as a file.
            let ledger = try spec.openLedger(registry: registry)
            if arguments.has("--all") {
                try ledger.removeAll()
                print("forgot run \(spec.runName) in the ledger \(ledger.location)")
            } else {
                try ledger.forgetPartials()
            }
            return CLI.ExitCode.success
        }
        let ledgerFile = spec.stateDirectory.appendingPathComponent(Ledger.fileName)
        guard files.fileExists(atPath: ledgerFile.path) else { return CLI.ExitCode.success }
        if arguments.has("--all") {
            for suffix in ["", "-wal", "-shm"] {
                let url = URL(fileURLWithPath: ledgerFile.path + suffix)
                if files.fileExists(atPath: url.path) { try files.removeItem(at: url) }
            }
            print("forgot the ledger \(ledgerFile.path)")
        } else {
            try Ledger(directory: spec.stateDirectory).forgetPartials()
        }
        return CLI.ExitCode.success
    }
}
