import Foundation
import MediaFetchCore
import Synchronization

/// Shows a run's progress on stderr: one live line on a terminal, plain lines otherwise, nothing
/// when quiet. Results (the summary, the failures) go to stdout when the run is over.
final class Reporter: Sendable {
    enum Mode {
        case live
        case lines
        case quiet
    }

    fileprivate struct State {
        var started = 0
        var stored = 0
        var failed = 0
        var skipped = 0
        var kept = 0
        var bytes: Int64 = 0
        var inFlight: [String: DownloadProgress] = [:]
        /// The first ``Reporter/failureLimit`` failures; the rest are only counted (the ledger has them all).
        var failures: [(ItemRef, URL?, String)] = []
        var failuresNotKept = 0
        var skipReasons = SkipReasons()
        var lastDraw: ContinuousClock.Instant?
        var lineShown = false
    }

    /// How many failures the closing report lists; a run of a million items may fail them all, and each is in the
    /// ledger (`mediafetch status`) anyway.
    static let failureLimit = 100

    private let mode: Mode
    private let start = ContinuousClock.now
    private let state = Mutex(State())

    init(mode: Mode) {
        self.mode = mode
    }

    /// `live` on a terminal, `lines` when stderr is a file or pipe.
    static func mode(quiet: Bool) -> Mode {
        if quiet { return .quiet }
        return isatty(STDERR_FILENO) == 1 ? .live : .lines
    }

    func handle(_ event: PipelineEvent) {
        // Quiet: only the failures are kept, for the closing report; no bookkeeping per progress event.
        if mode == .quiet {
            switch event {
            case .failed(let ref, let url, let reason): state.withLock { $0.keepFailure(ref, url, reason) }
            case .skipped(_, let reason): state.withLock { $0.skipReasons.count(reason) }
            default: break
            }
            return
        }
        state.withLock { state in
            switch event {
            case .itemStarted(let ref, let asset, _, let resumeFrom):
                state.started += 1
                state.inFlight[key(ref, asset)] = DownloadProgress(received: resumeFrom, expected: nil)
                if resumeFrom > 0 { line(&state, "resume  \(ref) from \(Self.formatBytes(resumeFrom))") }
            case .alreadyStored(let ref, _, let location):
                state.kept += 1
                line(&state, "kept    \(ref) (stored earlier: \(location))")
            case .progress(let ref, let asset, let progress):
                state.inFlight[key(ref, asset)] = progress
            case .stored(let ref, let asset, let location, let bytes):
                state.inFlight[key(ref, asset)] = nil
                state.stored += 1
                state.bytes += bytes
                line(&state, "stored  \(ref) -> \(location) (\(Self.formatBytes(bytes)))")
            case .failed(let ref, let url, let reason):
                state.inFlight = state.inFlight.filter { !$0.key.hasPrefix(ref.id + "\u{0}") }
                state.failed += 1
                state.keepFailure(ref, url, reason)
                line(&state, "failed  \(ref): \(reason)")
            case .skipped(let ref, let reason):
                state.skipped += 1
                state.skipReasons.count(reason)
                line(&state, "skipped \(ref): \(reason)")
            case .retrying(let ref, _, let attempt, let wait, let reason):
                line(
                    &state, "retry   \(ref) (attempt \(attempt + 1) in \(wait.formattedSeconds)): \(reason)",
                    always: true)
            case .notice(let text):
                line(&state, "note    \(text)", always: true)
            case .finished:
                if state.lineShown { write("\r\u{1B}[2K") }
                state.lineShown = false
                return
            }
            draw(&state)
        }
    }

    /// The first failures seen (at most ``failureLimit``), for the closing report.
    var failures: [(ItemRef, URL?, String)] { state.withLock { $0.failures } }

    /// How many failures there were beyond ``failures``.
    var failuresNotListed: Int { state.withLock { $0.failuresNotKept } }

    /// Why items were skipped, most common first, for the closing report.
    var skipReasons: [(reason: String, count: Int)] { state.withLock { $0.skipReasons.sorted } }

    private func key(_ ref: ItemRef, _ asset: AssetKind) -> String { "\(ref.id)\u{0}\(asset.rawValue)" }

    /// A plain line in line mode; on a terminal, only notices and failures get a line of their own.
    private func line(_ state: inout State, _ text: String, always: Bool = false) {
        switch mode {
        case .quiet: return
        case .lines: write(text + "\n")
        case .live:
            guard always || text.hasPrefix("failed") else { return }
            write("\r\u{1B}[2K" + text + "\n")
            state.lineShown = false
        }
    }

    /// Redraws the live line at most ten times a second.
    private func draw(_ state: inout State) {
        guard mode == .live else { return }
        let now = ContinuousClock.now
        if let last = state.lastDraw, now - last < .milliseconds(100) { return }
        state.lastDraw = now
        let elapsed = max((now - start).seconds, 0.001)
        let partial = state.inFlight.values.reduce(Int64(0)) { $0 + $1.received }
        let rate = Double(state.bytes + partial) / elapsed
        var text = "\(state.stored) stored"
        if state.failed > 0 { text += ", \(state.failed) failed" }
        if state.skipped > 0 { text += ", \(state.skipped) skipped" }
        if state.kept > 0 { text += ", \(state.kept) already stored" }
        text += ", \(state.inFlight.count) downloading · \(Self.formatBytes(state.bytes + partial))"
        text += " · \(Self.formatBytes(Int64(rate)))/s"
        write("\r\u{1B}[2K" + text)
        state.lineShown = true
    }

    private func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }

    static func formatBytes(_ bytes: Int64) -> String {
        let units = ["B", "KB", "MB", "GB", "TB"]
        var value = Double(bytes)
        var unit = 0
        while value >= 1000, unit < units.count - 1 {
            value /= 1000
            unit += 1
        }
        return unit == 0 ? "\(bytes) B" : String(format: "%.1f", value) + " " + units[unit]
    }
}

extension Reporter.State {
    fileprivate mutating func keepFailure(_ ref: ItemRef, _ url: URL?, _ reason: String) {
        if failures.count < Reporter.failureLimit {
            failures.append((ref, url, reason))
        } else {
            failuresNotKept += 1
        }
    }
}

/// How often each reason for a skip came up. Reasons are few (no preview URL, a duplicate, an unknown id); a
/// source whose reasons name each item is held to the first few, the rest counted together.
struct SkipReasons {
    static let limit = 8
    private var counts: [String: Int] = [:]
    private var others = 0

    mutating func count(_ reason: String) {
        if counts[reason] != nil || counts.count < Self.limit {
            counts[reason, default: 0] += 1
        } else {
            others += 1
        }
    }

    var sorted: [(reason: String, count: Int)] {
        let known = counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }
            .map { (reason: $0.key, count: $0.value) }
        return others == 0 ? known : known + [(reason: "other reasons", count: others)]
    }
}
