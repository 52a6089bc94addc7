/// How many of an engine's transfers may wait for the server's first answer at once: its share of four (the
/// transport's engines split them, one each when there are more than four; an engine that takes every transfer while
/// bodies are small keeps its share), until a transfer is seen to go over a connection an earlier one opened (the
/// server keeps connections), and from then on all of the engine's transfers.
///
/// A server's kernel takes connections into a listen queue before the server accepts them, and drops what comes
/// when the queue is full: the client then sends its SYN again a second later (and again two seconds after that).
/// Python's `http.server`, the server many people start to share a folder, accepts one connection a turn from a
/// queue of 5 and closes each connection after one answer, so that every transfer opens a connection. Sixteen
/// transfers started at once lost ten SYNs there, and 200 files of 10 KB took 1.26 s against curl's 0.11 s (`curl -Z`
/// waits for each connection to learn whether it can share it, and with a server that closes every connection it
/// never learns: it ran one transfer at a time). A transfer the server has answered was accepted, so with at most
/// four unanswered the queue never holds more than four of ours.
///
/// A server that keeps connections (nginx, a CDN, anything over HTTP/2) costs the ramp the first few transfers: the
/// ramp ends once one of them reused a connection. The count is the engine's, for every host: libcurl's per-host
/// limit is one number for all hosts, and a transfer it holds back for want of a connection starts only when
/// another transfer ends. Only the engine's thread uses a ramp.
final class TransferRamp {
    /// Transfers admitted and not yet answered, while the ramp lasts.
    private(set) var unanswered = 0
    /// Whether a transfer went over a connection an earlier one had opened: the ramp is over.
    private(set) var over = false

    /// Unanswered transfers of a transport at most while the ramp lasts: below a listen queue of 5, the smallest in
    /// common use.
    static let transportLimit = 4

    /// This engine's share of ``transportLimit``.
    let limit: Int

    /// - Parameters:
    ///   - engine: the engine's index among the transport's engines.
    ///   - engines: how many engines the transport has.
    init(engine: Int = 0, of engines: Int = 1) {
        let count = max(1, engines)
        limit = max(1, Self.transportLimit / count + (engine < Self.transportLimit % count ? 1 : 0))
    }

    /// Whether the engine may start one more transfer now.
    var admits: Bool { over || unanswered < limit }

    /// The engine handed libcurl a transfer.
    func admitted() {
        if !over { unanswered += 1 }
    }

    /// A server answered one of the engine's transfers (its status line came, or it ended well without one).
    func answered() {
        if !over { unanswered = max(0, unanswered - 1) }
    }

    /// An admitted transfer ended. A transfer that ended unanswered (refused, timed out) no longer waits; one that
    /// opened no connection of its own (`connects` is 0) went over a kept one, and the ramp is over.
    func ended(answered: Bool, connects: Int) {
        if !answered { self.answered() }
        if connects == 0 && answered { over = true }
    }
}
