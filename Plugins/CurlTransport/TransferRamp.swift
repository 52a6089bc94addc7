import MediaFetchCore
import Synchronization

/// How many of a transport's transfers to one server (one scheme, host and port) may wait for the server's first
/// answer at once: four, until a transfer to it is seen to go over a connection an earlier one opened (the server
/// keeps connections), and from then on all of them. The transport's engines share one ramp, so a server counts the
/// same whichever engine runs its transfers, and a server that is slow to answer holds back its own transfers only.
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
/// A server that keeps connections (nginx, a CDN, anything over HTTP/2) costs the ramp its first few transfers. A
/// transfer is counted against the server it was sent to, wherever redirects take it.
///
/// Transfers held back wait in the order they came, in their engine but before libcurl has them; cancelling one's task
/// takes it out, and its timeout counts the time it waits. The place an answer frees goes to the next in line on the
/// thread that saw the answer (an engine's, inside libcurl's header callback), which hands it to its engine's inbox: no
/// task is woken in between, so that against a server that answers each request on a connection of its own the next
/// request goes out with the engine's next round. (Waiting in the task, as at first, cost each transfer a suspension,
/// a pool thread's turn and a wakeup of the engine between an answer and the next request.)
final class TransferRamps: Sendable {
    /// Unanswered transfers to one server at most while its ramp lasts: below a listen queue of 5, the smallest in
    /// common use.
    static let limit = 4
    /// Servers remembered at most beyond those with transfers in flight: past this many, servers with nothing in
    /// flight are forgotten (one seen to keep connections then ramps again), so that a list of a million hosts
    /// keeps no entry for each.
    static let remembered = 1024

    private struct Server {
        /// Tickets out that have not given their place back. Still counted once the ramp is over, so that a server
        /// counts as idle (and may be forgotten) only when none is out: an old ticket then gives no place to the
        /// fresh entry of a server that ramps again.
        var unanswered = 0
        var over = false
        var waiters = FIFOQueue<any RampWaiter>()

        var idle: Bool { unanswered == 0 && waiters.count == 0 }

        /// Takes a place for one more transfer when the ramp allows it: true when it counts among the unanswered,
        /// false when the ramp is over; nil when it must wait.
        mutating func take() -> Bool? {
            if over { return false }
            guard unanswered < TransferRamps.limit, waiters.count == 0 else { return nil }
            unanswered += 1
            return true
        }

        /// A ticket's transfer no longer waits for an answer: its place goes to the oldest waiting transfer while the
        /// ramp lasts, and is counted out otherwise.
        mutating func giveBack() -> (any RampWaiter)? {
            if !over, let waiter = waiters.popFirst() { return waiter }
            unanswered = max(0, unanswered - 1)
            return nil
        }

        /// The server keeps connections: the ramp is over, and every waiting transfer goes.
        mutating func end() -> [any RampWaiter] {
            if over { return [] }
            over = true
            return waiters.removeAll()
        }
    }

    /// What ``enter(_:origin:)`` decided.
    enum Entry {
        /// The transfer may start now, with this ticket (nil when the server keeps connections).
        case go(RampTicket?)
        /// The transfer waits: ``RampWaiter/mayStart(with:)`` tells it when its turn comes.
        case wait
    }

    private let servers = Mutex([Int: Server]())

    init() {}

    /// Lets a transfer to the server `origin` (``originKey(_:)``) start now, or keeps `waiter` in line until one
    /// of that server's transfers gives its place back (or the ramp ends). Never blocks.
    func enter(_ waiter: some RampWaiter, origin: Int) -> Entry {
        let counted: Bool? = servers.withLock { servers in
            if servers.count >= Self.remembered { servers = servers.filter { !$0.value.idle } }
            if let counted = servers[origin, default: Server()].take() { return counted }
            servers[origin, default: Server()].waiters.append(waiter)
            return nil
        }
        guard let counted else { return .wait }
        return .go(counted ? RampTicket(self, origin) : nil)
    }

    /// Takes `waiter` out of the line for `origin`: true when it was waiting there (it is then never told to
    /// start), false when it was not, or was told already.
    func withdraw(_ waiter: some RampWaiter, origin: Int) -> Bool {
        servers.withLock { $0[origin]?.waiters.remove { $0 === waiter } } != nil
    }

    /// Takes out of every line the waiting transfers that `matches` picks (an engine that stops takes its own).
    func withdrawAll(where matches: @Sendable (any RampWaiter) -> Bool) -> [any RampWaiter] {
        servers.withLock { servers in
            var taken: [any RampWaiter] = []
            for origin in servers.keys {
                while let waiter = servers[origin]?.waiters.remove(where: matches) { taken.append(waiter) }
            }
            return taken
        }
    }

    /// A transfer to `origin` no longer waits for an answer: its place goes to the oldest waiting transfer.
    fileprivate func answered(_ origin: Int) {
        // A waiter that cannot take the place (its engine stopped) passes it straight to the next in line.
        while let next = servers.withLock({ $0[origin]?.giveBack() }) {
            if next.mayStart(with: RampTicket(self, origin)) { return }
        }
    }

    /// `origin` keeps connections: its ramp is over, and every transfer waiting for it goes.
    fileprivate func keepsConnections(_ origin: Int) {
        let released = servers.withLock { $0[origin]?.end() } ?? []
        for waiter in released { _ = waiter.mayStart(with: nil) }
    }

    /// Transfers to `origin` waiting for their turn, and those sent that the server has not answered (for tests).
    func counts(_ origin: Int) -> (waiting: Int, unanswered: Int) {
        servers.withLock { servers in
            servers[origin].map { ($0.waiters.count, $0.unanswered) } ?? (0, 0)
        }
    }

    /// Whether `origin` is known to keep connections (for tests).
    func isOver(_ origin: Int) -> Bool { servers.withLock { $0[origin]?.over ?? false } }

    /// A key for the scheme, host and port of the URL in `text` (lowercased, without user and password, without a
    /// final dot after the host's name, and without the scheme's default port: `http://h/`, `http://h.:80/` and
    /// `http://H:80/` are one server): the server a transfer is counted against. A hash, not the text, so that the hot
    /// path builds no string. Names are not resolved: `localhost` and `127.0.0.1` are two servers to the ramp.
    static func originKey(_ text: UnsafeBufferPointer<UInt8>) -> Int {
        var hasher = Hasher()
        var index = 0
        // The scheme, up to "://".
        while index < text.count, text[index] != UInt8(ascii: ":") {
            hasher.combine(lowercased(text[index]))
            index += 1
        }
        let defaultPort = defaultPort(ofScheme: UnsafeBufferPointer(rebasing: text[0..<index]))
        hasher.combine(UInt8(ascii: ":"))
        while index < text.count, text[index] == UInt8(ascii: ":") || text[index] == UInt8(ascii: "/") { index += 1 }
        // The authority, up to the path, query or fragment; what a user and password precede ends at the last "@".
        var end = index
        var host = index
        // Where the port's ":" is: the last one outside an IPv6 address's brackets.
        var colon: Int?
        while end < text.count, ![UInt8(ascii: "/"), UInt8(ascii: "?"), UInt8(ascii: "#")].contains(text[end]) {
            switch text[end] {
            case UInt8(ascii: "@"):
                host = end + 1
                colon = nil
            case UInt8(ascii: ":"): colon = end
            case UInt8(ascii: "]"): colon = nil
            default: break
            }
            end += 1
        }
        // The port by its number (`:08080` is `:8080`), left out when it is the scheme's default.
        var port: Int?
        if let colon, let number = number(UnsafeBufferPointer(rebasing: text[(colon + 1)..<end])) {
            port = number
            end = colon
        }
        // A fully qualified name's final dot names the same host (`example.com.` is `example.com`).
        if end - host > 1, text[end - 1] == UInt8(ascii: ".") { end -= 1 }
        for byte in text[host..<end] { hasher.combine(lowercased(byte)) }
        if let port, port >= 0, port != defaultPort {
            hasher.combine(UInt8(ascii: ":"))
            hasher.combine(port)
        }
        return hasher.finalize()
    }

    /// The port a URL of `scheme` means when it names none: 80 for http, 443 for https, nil for other schemes.
    private static func defaultPort(ofScheme scheme: UnsafeBufferPointer<UInt8>) -> Int? {
        guard scheme.count == 4 || scheme.count == 5,
            lowercased(scheme[0]) == UInt8(ascii: "h"), lowercased(scheme[1]) == UInt8(ascii: "t"),
            lowercased(scheme[2]) == UInt8(ascii: "t"), lowercased(scheme[3]) == UInt8(ascii: "p")
        else { return nil }
        if scheme.count == 4 { return 80 }
        return lowercased(scheme[4]) == UInt8(ascii: "s") ? 443 : nil
    }

    /// The number a port's `digits` say (at most 65,536, which no port is); nil when they are not all digits. No
    /// digits say the scheme's default port, as they do to libcurl: -1 here, for "the default".
    private static func number(_ digits: UnsafeBufferPointer<UInt8>) -> Int? {
        var value = 0
        for digit in digits {
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(digit) else { return nil }
            value = min(65_536, value * 10 + Int(digit - UInt8(ascii: "0")))
        }
        return digits.isEmpty ? -1 : value
    }

    /// ``originKey(_:)-(UnsafeBufferPointer<UInt8>)`` of a URL's text.
    static func originKey(_ url: String) -> Int {
        var text = url
        return text.withUTF8 { originKey($0) }
    }

    private static func lowercased(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}

/// A transfer that waits in line for a place (``TransferRamps/enter(_:origin:)``).
protocol RampWaiter: AnyObject, Sendable {
    /// Its turn came: called once, outside the ramp's lock, on the thread that gave the place back (an engine's,
    /// mostly), with its ticket, or nil when the server was found to keep connections.
    /// - Returns: false when it cannot start (its engine stopped: it ended itself); the place then goes to the next
    ///   in line, and the ticket is never used.
    func mayStart(with ticket: RampTicket?) -> Bool
}

/// A transfer's place among its server's unanswered transfers (``TransferRamps``): given back once, when the server
/// answers or the transfer ends, whichever comes first.
///
/// `Sendable`: its flags are behind a lock. The transfer reports the answer and its end (`CurlTransfer.complete`), on
/// its engine's thread or, for one refused by an engine that stopped, on the thread that found it so.
final class RampTicket: Sendable {
    private let ramps: TransferRamps
    private let origin: Int
    /// Whether the answer came, and whether the transfer ended.
    private let flags = Mutex((answered: false, ended: false))

    fileprivate init(_ ramps: TransferRamps, _ origin: Int) {
        self.ramps = ramps
        self.origin = origin
    }

    /// The server answered the transfer (its status line came): it was accepted, and its place goes to the next
    /// transfer. Told after ``ended(connects:)``, it does nothing.
    func answered() {
        let first = flags.withLock { flags in
            defer { flags.answered = true }
            return !flags.answered && !flags.ended
        }
        if first { ramps.answered(origin) }
    }

    /// The transfer ended. One that ended unanswered (refused, timed out) gives its place back; one that was answered
    /// over a connection it did not open (`connects` is 0) shows that the server keeps connections.
    func ended(connects: Int) {
        let (wasAnswered, first) = flags.withLock { flags in
            defer { flags.ended = true }
            return (flags.answered, !flags.ended)
        }
        guard first else { return }
        if !wasAnswered { ramps.answered(origin) }
        if wasAnswered && connects == 0 { ramps.keepsConnections(origin) }
    }
}
