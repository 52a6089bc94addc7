import Foundation
import MediaFetchCore

/// `mediafetch status CONFIG`: what the ledger knows, without touching the network.
enum StatusCommand {
    static let help = """
        Usage: mediafetch status CONFIG [--set KEY=VALUE]... [--json]

        Lists what the config's ledger records: stored, verified (downloaded and checked, kept until an archive
        that holds it is committed; the next run stores it without fetching it), partial (with how much is
        there), failed (with the reason) and pending items. --json prints every entry as JSON.
        """

    static func run(_ words: [String], registry: PluginRegistry) throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--set"], bare: ["--json"])
        guard arguments.positional.count == 1 else { throw UsageError("status takes one CONFIG file") }
        let spec = try ConfigLoader.load(
            path: arguments.positional[0], overrides: arguments.all("--set"), registry: registry)
        guard FileManager.default.fileExists(atPath: spec.stateDirectory.appendingPathComponent(Ledger.fileName).path)
        else {
            print(arguments.has("--json") ? "[]" : "nothing recorded yet: \(spec.configPath) has not been run")
            return CLI.ExitCode.success
        }
        let ledger = try Ledger(directory: spec.stateDirectory)
        let staging = Pipeline.stagingDirectory(state: spec.stateDirectory)
        let entries = try ledger.entries().map { entry in
            var entry = entry
            // After a crash the staging file knows better than the ledger how much arrived.
            if entry.status != .stored {
                let file = Pipeline.stagingFile(
                    in: staging, source: entry.key.source, itemID: entry.key.itemID, asset: entry.key.asset)
                if let size = (try? FileManager.default.attributesOfItem(atPath: file.path))?[.size] as? NSNumber {
                    entry.receivedBytes = size.int64Value
                }
            }
            return entry
        }
        if arguments.has("--json") {
            RunCommand.printJSON(entries.map(StatusEntry.init))
            return CLI.ExitCode.success
        }
        print(
            "(the ledger learns of an item when its download starts: items the source has not produced yet "
                + "are not listed)")
        for status in LedgerStatus.allCases {
            let group = entries.filter { $0.status == status }
            print("\(status.rawValue): \(group.count)")
            guard status != .stored else { continue }
            for entry in group {
                var line = "  \(entry.title) [\(entry.key.itemID)] \(entry.key.asset.rawValue)"
                if let expected = entry.expectedBytes, expected > 0, status != .failed {
                    let percent = Double(entry.receivedBytes) * 100 / Double(expected)
                    line += String(format: " %.0f%%", percent) + " of \(Reporter.formatBytes(expected))"
                } else if entry.receivedBytes > 0 {
                    line += " \(Reporter.formatBytes(entry.receivedBytes)) kept"
                }
                if let reason = entry.reason, status == .failed { line += ": \(reason)" }
                print(line)
            }
        }
        return CLI.ExitCode.success
    }
}

/// One ledger entry as `status --json` prints it.
struct StatusEntry: Encodable {
    var source: String
    var id: String
    var asset: String
    var title: String
    var url: String
    var status: String
    var receivedBytes: Int64
    var expectedBytes: Int64?
    var etag: String?
    var lastModified: String?
    var sha256: String?
    var location: String?
    var reason: String?
    var attempts: Int
    var updatedAt: Date

    init(_ entry: LedgerEntry) {
        source = entry.key.source
        id = entry.key.itemID
        asset = entry.key.asset.rawValue
        title = entry.title
        url = entry.url
        status = entry.status.rawValue
        receivedBytes = entry.receivedBytes
        expectedBytes = entry.expectedBytes
        etag = entry.validator?.etag
        lastModified = entry.validator?.lastModified
        sha256 = entry.sha256
        location = entry.location
        reason = entry.reason
        attempts = entry.attempts
        updatedAt = entry.updatedAt
    }
}
