import Foundation
import MediaFetchCore

/// `mediafetch status CONFIG`: what the ledger knows, without touching the network.
enum StatusCommand {
    static let help = """
        Usage: mediafetch status CONFIG [--set KEY=VALUE]... [--json] [--follow]

        Lists what the config's ledger records: stored, verified (downloaded and checked, kept until an archive
        that holds it is committed; the next run stores it without fetching it), partial (with how much is
        there), failed (with the reason) and pending items, and the queue of `mediafetch serve` when it has one.
        --json prints every entry as JSON.
        --follow redraws the status twice a second while a run (batch or serve) holds the state directory, and
        ends with the last status once it has finished (Ctrl-C ends it sooner).

        With a shared ledger (ledger: postgresql://...) it shows the run named by name: across its workers:
        per worker what it holds, has stored, its bytes per second and last heartbeat; the totals and an ETA.
        --json prints the same as one JSON object; --follow redraws it while any of its workers is at work (and
        prints it once when none is).
        """

    static func run(_ words: [String], registry: PluginRegistry) async throws -> Int32 {
        let arguments = try Arguments(words, valued: ["--set"], bare: ["--json", "--follow"])
        guard arguments.positional.count == 1 else { throw UsageError("status takes one CONFIG file") }
        let spec = try ConfigLoader.load(
            path: arguments.positional[0], overrides: arguments.all("--set"), registry: registry)
        let following = arguments.has("--follow")
        if following && arguments.has("--json") { throw UsageError("--follow redraws text; leave out --json") }
        if spec.ledger != nil {
            let ledger = try spec.openLedger(registry: registry, worker: "status")
            if let shared = ledger as? any SharedRunLedger {
                if following {
                    await followShared(spec, shared)
                } else {
                    try SharedStatus(spec: spec, ledger: shared).print(json: arguments.has("--json"))
                }
                return CLI.ExitCode.success
            }
        }
        if following {
            await follow(spec)
            return CLI.ExitCode.success
        }
        guard let ledger = try openExisting(spec) else {
            print(arguments.has("--json") ? "[]" : "nothing recorded yet: \(spec.configPath) has not been run")
            return CLI.ExitCode.success
        }
        if arguments.has("--json") {
            try printJSON(ledger, spec)
            return CLI.ExitCode.success
        }
        print(
            "(the ledger learns of an item when its download starts: items the source has not produced yet "
                + "are not listed)")
        var output = OutputBuffer()
        try render(
            ledger, spec, queue: (try? DownloadQueue.recordedStatuses(stateDirectory: spec.stateDirectory)) ?? []
        ) { output.write($0 + "\n") }
        output.flush()
        return CLI.ExitCode.success
    }

    /// How many entries of each status `--follow` lists by name on its screen; the rest are counted.
    static let followListed = 100

    /// The state directory's ledger; nil when the config has not been run.
    static func openExisting(_ spec: PipelineSpec) throws -> Ledger? {
        guard FileManager.default.fileExists(atPath: spec.stateDirectory.appendingPathComponent(Ledger.fileName).path)
        else { return nil }
        return try Ledger(directory: spec.stateDirectory)
    }

    /// Walks the entries (of one status, or all) in key order, a page at a time (so a run of a million items is
    /// never held), each with the staging file's size where it is not stored: after a crash that file knows better
    /// than the ledger how much arrived.
    static func forEachEntry(
        _ ledger: Ledger, _ spec: PipelineSpec, status: LedgerStatus? = nil, _ body: (LedgerEntry) throws -> Bool
    ) throws {
        let staging = Pipeline.stagingDirectory(state: spec.stateDirectory)
        try ledger.forEachEntry(status: status) { entry in
            var entry = entry
            if entry.status != .stored {
                let file = Pipeline.stagingFile(
                    in: staging, source: entry.key.source, itemID: entry.key.itemID, asset: entry.key.asset)
                var info = stat()
                if stat(file.path, &info) == 0 { entry.receivedBytes = Int64(info.st_size) }
            }
            return try body(entry)
        }
    }

    /// Every entry as one JSON array, written as it is read: the same text as encoding them all at once (`[]` when
    /// there is none). The entries go to the encoder ``jsonBatch`` at a time, each batch as an array, whose elements
    /// come out laid out as the whole array's are; each entry encoded alone and indented line by line took 24 s for a
    /// million.
    static func printJSON(_ ledger: Ledger, _ spec: PipelineSpec) throws {
        let encoder = RunCommand.jsonEncoder()
        var output = OutputBuffer()
        var batch: [StatusEntry] = []
        var started = false
        func writeBatch() throws {
            guard !batch.isEmpty else { return }
            // "[\n  {...},\n  {...}\n]": what lies between the brackets is the batch's stretch of the whole array.
            let text = String(decoding: try encoder.encode(batch), as: UTF8.self)
            output.write((started ? ",\n" : "[\n") + text.dropFirst(2).dropLast(2))
            started = true
            batch.removeAll(keepingCapacity: true)
        }
        try forEachEntry(ledger, spec) { entry in
            batch.append(StatusEntry(entry))
            if batch.count == jsonBatch { try writeBatch() }
            return true
        }
        try writeBatch()
        output.write(started ? "\n]\n" : "[]\n")
        output.flush()
    }

    /// How many entries `status --json` encodes at once.
    static let jsonBatch = 512

    /// Standard output written 64 KiB at a time, so a long status is neither held whole nor printed line by line.
    struct OutputBuffer {
        private var text = ""

        mutating func write(_ piece: String) {
            text += piece
            if text.utf8.count >= 1 << 16 { flush() }
        }

        mutating func flush() {
            print(text, terminator: "")
            text = ""
        }
    }

    /// The status as lines handed to `emit` as they are made: each status's count, then (but for stored) its
    /// entries, all of them or the first `limit`.
    static func render(
        _ ledger: Ledger, _ spec: PipelineSpec, queue: [DownloadStatus], limit: Int? = nil,
        emit: (String) -> Void
    ) throws {
        let counts = try ledger.statusCounts()
        for status in LedgerStatus.allCases {
            let count = counts[status] ?? 0
            emit("\(status.rawValue): \(count)")
            guard status != .stored, count > 0 else { continue }
            var shown = 0
            try forEachEntry(ledger, spec, status: status) { entry in
                shown += 1
                var line = "  \(ItemRef.printable(entry.title)) [\(entry.key.itemID)] \(entry.key.asset.rawValue)"
                if let expected = entry.expectedBytes, expected > 0, status != .failed {
                    let percent = Double(entry.receivedBytes) * 100 / Double(expected)
                    line += String(format: " %.0f%%", percent) + " of \(Reporter.formatBytes(expected))"
                } else if entry.receivedBytes > 0 {
                    line += " \(Reporter.formatBytes(entry.receivedBytes)) kept"
                }
                if let reason = entry.reason, status == .failed { line += ": \(ItemRef.printable(reason))" }
                emit(line)
                return limit.map { shown < $0 } ?? true
            }
            // Only when the limit cut the list short: the count was read a moment before the walk, and a run going
            // on may have moved items between statuses since.
            if let limit, shown == limit, count > shown {
                emit("  ... and \(count - shown) more \(status.rawValue) (mediafetch status lists them all)")
            }
        }
        if !queue.isEmpty {
            let counts = DownloadStatus.all.map { status in "\(queue.filter { $0 == status }.count) \(status)" }
            emit("serve queue: \(queue.count) items: " + counts.joined(separator: ", "))
        }
    }

    /// Redraws until no run holds the state directory (its lock file names a process that is gone), then prints
    /// the last status.
    static func follow(_ spec: PipelineSpec) async {
        await redraw {
            let running = runHolder(spec.stateDirectory)
            let queue = (try? DownloadQueue.recordedStatuses(stateDirectory: spec.stateDirectory)) ?? []
            var lines: [String] = []
            if let ledger = (try? openExisting(spec)) ?? nil {
                try? render(ledger, spec, queue: queue, limit: followListed) { lines.append($0) }
            }
            let text = lines.isEmpty ? "nothing recorded yet" : lines.joined(separator: "\n")
            return running.map { (text + "\na run is going on (process \($0)); following, Ctrl-C to stop", true) }
                ?? (text + "\nno run is going on: this is the last status", false)
        }
    }

    /// Redraws a shared run's status (as ``follow(_:)`` does a run's of its own) until none of its workers is at
    /// work (running, with a heartbeat within the lease), then prints the last one: at once when none has joined
    /// yet. A ledger that cannot be read for a moment (a server restarting) is said so and asked again.
    static func followShared(_ spec: PipelineSpec, _ ledger: any SharedRunLedger) async {
        await redraw {
            do {
                let status = try SharedStatus(spec: spec, ledger: ledger)
                let text = status.lines().joined(separator: "\n")
                return status.workers.contains(where: \.alive)
                    ? (text + "\nworkers are at work; following, Ctrl-C to stop", true)
                    : (text + "\nno worker is at work: this is the last status", false)
            } catch {
                return ("the ledger cannot be read now (\(error)); asking again", true)
            }
        }
    }

    /// Prints what `status` makes twice a second, while it says a run is going on, until Ctrl-C: on a terminal
    /// redrawn in place, elsewhere printed again only when it changed.
    private static func redraw(_ status: @escaping @Sendable () -> (text: String, going: Bool)) async {
        let terminal = isatty(STDOUT_FILENO) == 1
        _ = await SignalWatcher().run { () -> Bool in
            var shown = ""
            while !Task.isCancelled {
                let (text, going) = status()
                if text != shown {
                    FileHandle.standardOutput.write(Data(((terminal ? "\u{1B}[H\u{1B}[2J" : "\n") + text + "\n").utf8))
                    shown = text
                }
                if !going { break }
                try? await Task.sleep(for: .milliseconds(500))
            }
            return true
        }
    }

    /// The process id of the run holding `state`, when one does. The kernel's table of held locks
    /// (`/proc/locks`) says whether anyone holds an `flock` on a file with the lock file's inode, and who; that
    /// holder is confirmed by finding the lock file among its open files (`/proc/PID/fd`), since the table's device
    /// numbers are not always `stat`'s (btrfs subvolumes, overlay filesystems). The id written in the file is only
    /// the last holder's, which a process started since could have been given, so it is the answer only where the
    /// table cannot be read. (Taking the lock to look would make a run starting that moment fail.)
    static func runHolder(_ state: URL) -> Int32? {
        let path = state.appendingPathComponent("lock").path
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        guard let table = try? String(contentsOfFile: "/proc/locks", encoding: .utf8) else {
            guard let text = try? String(contentsOfFile: path, encoding: .utf8),
                let pid = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)), pid > 0
            else { return nil }
            return kill(pid, 0) == 0 || errno == EPERM ? pid : nil
        }
        // "1: FLOCK  ADVISORY  WRITE 15493 fe:00:16588916 0 EOF"; a process waiting for a lock has a line with "->"
        // after the number, and holds nothing.
        let inode = ":" + String(info.st_ino)
        for line in table.split(separator: "\n") where !line.contains("->") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 6, fields[1] == "FLOCK", fields[5].hasSuffix(inode), let pid = Int32(fields[4])
            else { continue }
            if holds(pid, device: info.st_dev, inode: info.st_ino) != false { return pid }
        }
        return nil
    }

    /// Whether process `pid` has a file with this device and inode open; nil when its open files cannot be read.
    private static func holds(_ pid: Int32, device: UInt, inode: UInt) -> Bool? {
        let folder = "/proc/\(pid)/fd"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return nil }
        for name in names {
            var info = stat()
            if stat(folder + "/" + name, &info) == 0, info.st_dev == device, info.st_ino == inode { return true }
        }
        return false
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

/// `mediafetch status` of a shared run: the workers, the totals, an ETA.
struct SharedStatus: Encodable {
    struct Worker: Encodable {
        var worker: String
        var state: String
        /// Whether its heartbeat is recent (within the lease): a killed worker's goes stale.
        var alive: Bool
        var claimed: Int
        var stored: Int
        var bytes: Int64
        var bytesPerSecond: Double
        var lastHeartbeat: Date
    }

    var run: String
    var ledger: String
    var planned: Bool
    var totals: [String: Int]
    var workers: [Worker]
    /// Seconds until the open items are stored at the live workers' pace; nil when no one is at work.
    var etaSeconds: Double?

    init(spec: PipelineSpec, ledger: any SharedRunLedger) throws {
        run = spec.runName
        self.ledger = ledger.location
        planned = try ledger.isPlanned()
        // Counted where the rows are: a run of a million items is not read into memory to be counted.
        let counts = try ledger.statusCounts()
        totals = Dictionary(uniqueKeysWithValues: LedgerStatus.allCases.map { ($0.rawValue, counts[$0] ?? 0) })
        let now = Date()
        let lease = ledger.lease.seconds
        let joined = try ledger.workers()
        let alive = joined.map { $0.state == "running" && now.timeIntervalSince($0.lastHeartbeat) <= lease }
        workers = zip(joined, alive).map { worker, alive in
            Worker(
                worker: worker.worker, state: worker.state, alive: alive, claimed: worker.claimed,
                stored: worker.stored, bytes: worker.bytes, bytesPerSecond: worker.bytesPerSecond,
                lastHeartbeat: worker.lastHeartbeat)
        }
        let pace = zip(joined, alive).filter(\.1).map(\.0.storedPerSecond).reduce(0, +)
        let open = (totals["pending"] ?? 0) + (totals["partial"] ?? 0) + (totals["verified"] ?? 0)
        etaSeconds = pace > 0 ? Double(open) / pace : nil
    }

    func print(json: Bool) throws {
        if json {
            RunCommand.printJSON(self)
            return
        }
        for line in lines() { Swift.print(line) }
    }

    /// The status as text: the run, the totals, the ETA, a line per worker.
    func lines() -> [String] {
        let order = ["stored", "pending", "partial", "verified", "failed"]
        var lines = [
            "run \(run) in \(ledger)\(planned ? "" : " (still being planned)")",
            order.map { "\($0): \(totals[$0] ?? 0)" }.joined(separator: ", "),
        ]
        if let etaSeconds {
            lines.append("ETA: \(Int(etaSeconds.rounded())) s at the live workers' pace")
        } else if (totals["pending"] ?? 0) + (totals["partial"] ?? 0) > 0 {
            lines.append("ETA: unknown, no worker is at work")
        }
        let formatter = ISO8601DateFormatter()
        for worker in workers {
            lines.append(
                "  \(worker.worker): \(worker.alive ? "running" : worker.state == "running" ? "silent" : worker.state), "
                    + "\(worker.claimed) claimed, \(worker.stored) stored, "
                    + "\(Reporter.formatBytes(Int64(worker.bytesPerSecond)))/s, "
                    + "last heartbeat \(formatter.string(from: worker.lastHeartbeat))")
        }
        return lines
    }
}
