import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import CurlTransport

/// The ramp that keeps a transport from flooding a server's listen queue before it knows the server keeps
/// connections (``TransferRamps``).
@Suite("Transfer ramp", .timeLimit(.minutes(1)))
struct TransferRampTests {
    @Test func aServerIsItsSchemeHostAndPort() {
        let key = { (text: String) in TransferRamps.originKey(text) }
        #expect(key("http://Example.COM:8080/a.m4a") == key("HTTP://example.com:8080/b/c?d#e"))
        #expect(key("http://user:secret@example.com:8080/a") == key("http://example.com:8080"))
        #expect(key("http://example.com:8080/a") != key("http://example.com:8081/a"))
        #expect(key("http://example.com/a") != key("https://example.com/a"))
        #expect(key("http://example.com/a") != key("http://example.org/a"))
        // The scheme's default port, named or not (an empty port is the default too), and a query after the host.
        #expect(key("http://example.com/a") == key("http://example.com:80/b"))
        #expect(key("HTTPS://example.com") == key("https://example.com:443?q=1"))
        #expect(key("http://example.com:/a") == key("http://example.com/a"))
        #expect(key("http://example.com:443/a") != key("http://example.com/a"))
        #expect(key("https://example.com:80/a") != key("https://example.com/a"))
        // IPv6: the colons inside the brackets are the address's, not a port's.
        #expect(key("http://[::1]:80/a") == key("http://[::1]/b"))
        #expect(key("http://[::1]:8080/a") != key("http://[::1]/a"))
        #expect(key("http://[::80]/a") != key("http://[::]/a"))
        #expect(key("http://user:80@example.com:8080/a") == key("http://example.com:8080/"))
        #expect(key("HTTP://example.com:80") == key("http://example.com/"))
        #expect(key("http://example.com:08080/a") == key("http://example.com:8080/"))
        #expect(key("http://example.com:0080/a") == key("http://example.com/"))
        #expect(key("http://a@b@example.com:80/") == key("http://example.com/"))
        #expect(key("http://user:pw@[::1]:80/a") == key("http://[::1]/"))
        #expect(key("http://user:pw@[::1]:81/a") != key("http://[::1]/"))
        // A fully qualified name's final dot; a name is not resolved.
        #expect(key("http://Example.com.:80/a") == key("http://example.com/"))
        #expect(key("http://example.com.:8080/a") == key("http://example.com:8080/"))
        #expect(key("http://example.com../a") != key("http://example.com/"))
        #expect(key("http://./a") != key("http:///a"))
        #expect(key("http://localhost/a") != key("http://127.0.0.1/a"))
    }

    @Test func anAnswerMakesRoomAndAKeptConnectionEndsTheRamp() throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        var tickets = try fill(ramps, server)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        // The fifth waits, and takes the place of the first answered.
        let fifth = LineWaiter()
        #expect(ramps.enter(fifth, origin: server).waits)
        #expect(ramps.counts(server) == (waiting: 1, unanswered: 4))
        tickets[0].answered()
        let fifthTicket = try #require(fifth.ticket)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        // Told twice, or answered and then ended, a ticket gives its place back once.
        tickets[0].answered()
        tickets[0].ended(connects: 1)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        // A transfer that ended without an answer (refused, timed out) no longer counts.
        tickets[1].ended(connects: 1)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 3))
        // Another server has a ramp of its own.
        let other = TransferRamps.originKey("http://127.0.0.1:2/")
        _ = try place(in: ramps, other)
        #expect(ramps.counts(other) == (waiting: 0, unanswered: 1))
        // An answered transfer's end, over a connection it opened, changes nothing.
        tickets[2].answered()
        tickets[2].ended(connects: 1)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 2))
        #expect(!ramps.isOver(server))
        // An answer over a connection an earlier transfer opened: the server keeps connections, and what waits goes
        // without a ticket.
        fifthTicket.answered()
        for _ in 0..<3 { tickets.append(try place(in: ramps, server)) }
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        let waiting = LineWaiter()
        #expect(ramps.enter(waiting, origin: server).waits)
        #expect(!waiting.told)
        fifthTicket.ended(connects: 0)
        #expect(waiting.told)
        #expect(waiting.ticket == nil)
        #expect(ramps.isOver(server))
        #expect(!ramps.isOver(other))
        for _ in 0..<100 { #expect(ramps.enter(LineWaiter(), origin: server).goesWithoutTicket) }
        // The tickets out before the end are still counted until they give their places back.
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        for ticket in tickets { ticket.ended(connects: 1) }
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 0))
    }

    /// Waiting transfers take the places given back in the order they came; one withdrawn in the middle (its
    /// transfer was cancelled) is skipped and never told.
    @Test func waitersGoInTheOrderTheyCame() throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        let tickets = try fill(ramps, server)
        let waiters = (0..<4).map { _ in LineWaiter() }
        for waiter in waiters { #expect(ramps.enter(waiter, origin: server).waits) }
        #expect(ramps.withdraw(waiters[1], origin: server))
        #expect(!ramps.withdraw(waiters[1], origin: server))
        #expect(ramps.counts(server) == (waiting: 3, unanswered: 4))
        for (index, expected) in [[0], [0, 2], [0, 2, 3]].enumerated() {
            tickets[index].answered()
            #expect(waiters.indices.filter { waiters[$0].told } == expected)
        }
        #expect(waiters.allSatisfy { !$0.told || $0.ticket != nil })
        // A waiter told already cannot be withdrawn: its transfer is on its way to the engine.
        #expect(!ramps.withdraw(waiters[0], origin: server))
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
    }

    /// A waiter that cannot take its place (its engine stopped) passes it on to the next in line, and holds none.
    @Test func aRefusedPlaceGoesToTheNextInLine() throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        let tickets = try fill(ramps, server)
        let refusing = [LineWaiter(refuses: true), LineWaiter(refuses: true)]
        let taking = LineWaiter()
        for waiter in refusing + [taking] { #expect(ramps.enter(waiter, origin: server).waits) }
        tickets[0].answered()
        #expect(refusing.allSatisfy { $0.told })
        #expect(taking.ticket != nil)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        // With nobody left to take it, a refused place is counted out.
        let last = LineWaiter(refuses: true)
        #expect(ramps.enter(last, origin: server).waits)
        tickets[1].answered()
        #expect(last.told)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 3))
    }

    /// Past ``TransferRamps/remembered`` servers, those with nothing in flight are forgotten; a server whose ramp
    /// ended is kept while tickets taken before the end are out, so that they give no place to a fresh ramp.
    @Test func idleServersAreForgottenAndOnlyThey() throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        let tickets = try fill(ramps, server)
        tickets[0].answered()
        tickets[0].ended(connects: 0)
        #expect(ramps.isOver(server))
        // Enters as many other servers as can be remembered, each with a transfer that ends at once.
        func visitOthers(from first: Int) throws {
            for port in first..<(first + TransferRamps.remembered + 1) {
                try place(in: ramps, TransferRamps.originKey("http://127.0.0.2:\(port)/")).ended(connects: 1)
            }
        }
        try visitOthers(from: 10_000)
        // Three tickets are out: remembered, and its ramp still over.
        #expect(ramps.isOver(server))
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 3))
        for ticket in tickets { ticket.ended(connects: 1) }
        try visitOthers(from: 20_000)
        // Forgotten: it ramps again from nothing.
        #expect(!ramps.isOver(server))
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 0))
    }

    /// An engine that stops takes its own waiting transfers out of every line, and leaves the others'.
    @Test func withdrawingAllTakesOnlyWhatItPicks() throws {
        let ramps = TransferRamps()
        let servers = [TransferRamps.originKey("http://127.0.0.1:1/"), TransferRamps.originKey("http://127.0.0.1:2/")]
        for server in servers {
            for _ in 0..<4 { _ = try place(in: ramps, server) }
        }
        let mine = (0..<4).map { _ in LineWaiter() }
        let theirs = (0..<2).map { _ in LineWaiter() }
        for (index, waiter) in (mine + theirs).enumerated() {
            #expect(ramps.enter(waiter, origin: servers[index % 2]).waits)
        }
        let taken = ramps.withdrawAll { waiter in mine.contains { $0 === waiter } }
        #expect(taken.count == 4)
        #expect(taken.allSatisfy { waiter in mine.contains { $0 === waiter } })
        #expect(ramps.counts(servers[0]).waiting == 1)
        #expect(ramps.counts(servers[1]).waiting == 1)
    }

    /// Against a server that closes each connection after one answer (as Python's `http.server` does), sixteen
    /// downloads at once never have more than four requests the server has not answered, however many engines the
    /// transport has; the others wait until one is answered. The server lets the requests it holds go one at a time,
    /// and after each one (once every download the ramp let go has reached it) at most four are held.
    @Test func aServerThatClosesEachConnectionNeverHasMoreThanFourUnanswered() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let contents = Self.serveSixteen(on: server, under: "closing", seed: 700)
        let gate = RequestGate.holdingEveryRequest(to: server)
        let transport = try CurlTransport(.init(concurrency: 16, threads: 8))
        let origin = Self.origin(of: server)
        try await withTemporaryDirectory { directory in
            let urls = contents.indices.map { server.url(path: "/closing/\($0).bin") }
            let downloads = Task { try await downloadAll(urls, expecting: contents, into: directory, with: transport) }
            let held = { transport.ramps.counts(origin).waiting }
            // Four requests reach the server and wait there; the twelve other downloads wait for their turn.
            await yield(until: { gate.arrived == 4 && held() == 12 })
            #expect(gate.arrived == 4)
            #expect(held() == 12)
            for released in 1...16 {
                gate.release()
                // Every download the ramp let go has reached the server (a moment later it may let one more go: the
                // counts are looked at again below).
                await yield(until: { gate.arrived + held() == 16 && gate.passed == released })
                #expect(gate.arrived - released <= 4, "\(gate.arrived - released) requests unanswered at once")
                // Downloads still held back: one of them reaches the server once the answer is in.
                await yield(until: { held() == 0 || gate.arrived - released >= 1 })
                #expect(held() == 0 || gate.arrived - released >= 1, "downloads wait for nothing")
                #expect(gate.arrived - released <= 4, "\(gate.arrived - released) requests unanswered at once")
            }
            try await downloads.value
        }
        #expect(gate.arrived == 16)
        #expect(server.connectionsAccepted == 16)
        await transport.shutdown()
    }

    /// Requests that end without an answer (the server closes the connection at once) make room as answers do: the
    /// downloads behind them still run.
    @Test func requestsThatFailBeforeAnAnswerDoNotHoldTheOthersBack() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let content = randomBytes(5_000, seed: 900)
        for index in 0..<12 { server.addFile(path: "/dropped/\(index).bin", bytes: [UInt8](content)) }
        // The first eight (twice the ramp's four) get nothing; the others an answer, on a connection of its own.
        server.setFaultHook { request in
            let index = Int(request.path.split(separator: "/").last?.split(separator: ".").first ?? "") ?? 0
            return index < 8 ? .dropConnection : .closeAfterResponse
        }
        let transport = try CurlTransport(.init(concurrency: 16, threads: 1))
        try await withTemporaryDirectory { directory in
            let outcomes = try await withThrowingTaskGroup(of: Bool.self) { group in
                for index in 0..<12 {
                    group.addTask {
                        let request = DownloadRequest(
                            url: server.url(path: "/dropped/\(index).bin"),
                            destination: directory.appendingPathComponent("\(index).bin"))
                        return (try? await transport.download(request) { _ in }) != nil
                    }
                }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(outcomes.filter { $0 }.count == 4)
            #expect(outcomes.filter { !$0 }.count == 8)
        }
        await transport.shutdown()
    }

    /// A server that holds its requests unanswered holds back its own downloads only: another server's go on, and that
    /// one keeping connections does not end the first one's ramp.
    @Test func aServerThatDoesNotAnswerHoldsBackOnlyItsOwnDownloads() async throws {
        let stuck = try MockCatalogServer()
        defer { stuck.stop() }
        let kept = try MockCatalogServer()
        defer { kept.stop() }
        let stuckContents = Self.serveSixteen(on: stuck, under: "stuck", seed: 1_000)
        let keptContents = Self.serveSixteen(on: kept, under: "kept", seed: 1_100)
        let gate = RequestGate.holdingEveryRequest(to: stuck)
        let transport = try CurlTransport(.init(concurrency: 16, threads: 1))
        let stuckOrigin = Self.origin(of: stuck)
        let keptOrigin = Self.origin(of: kept)
        try await withTemporaryDirectory { directory in
            let stuckURLs = stuckContents.indices.map { stuck.url(path: "/stuck/\($0).bin") }
            let stuckDownloads = Task {
                try await downloadAll(stuckURLs, expecting: stuckContents, into: directory, with: transport)
            }
            await yield(until: { gate.arrived == 4 && transport.ramps.counts(stuckOrigin).waiting == 12 })
            #expect(gate.arrived == 4)
            let keptURLs = keptContents.indices.map { kept.url(path: "/kept/\($0).bin") }
            let keptFolder = directory.appendingPathComponent("kept")
            try FileManager.default.createDirectory(at: keptFolder, withIntermediateDirectories: false)
            // Twice: the second round goes over the connections the first left open.
            for _ in 0..<2 {
                try await downloadAll(keptURLs, expecting: keptContents, into: keptFolder, with: transport)
            }
            #expect(transport.ramps.isOver(keptOrigin))
            #expect(!transport.ramps.isOver(stuckOrigin))
            #expect(gate.arrived == 4, "\(gate.arrived) requests reached the server that answers none")
            gate.open()
            try await stuckDownloads.value
        }
        #expect(gate.arrived == 16)
        await transport.shutdown()
    }

    /// A server that keeps connections ends the ramp: after a first round, sixteen downloads reach it at once.
    @Test func aServerThatKeepsConnectionsGetsEveryTransferAtOnceAfterTheFirst() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let contents = Self.serveSixteen(on: server, under: "kept", seed: 800)
        let transport = try CurlTransport(.init(concurrency: 16))
        let urls = contents.indices.map { server.url(path: "/kept/\($0).bin") }
        try await withTemporaryDirectory { directory in
            try await downloadAll(urls, expecting: contents, into: directory, with: transport)
        }
        let gate = RequestGate()
        server.setFaultHook { _ in
            gate.pass()
            return nil
        }
        try await withTemporaryDirectory { directory in
            let downloads = Task { try await downloadAll(urls, expecting: contents, into: directory, with: transport) }
            await yield(until: { gate.arrived == 16 })
            #expect(gate.arrived == 16, "only \(gate.arrived) of 16 requests reached the server while it held them")
            gate.open()
            try await downloads.value
        }
        await transport.shutdown()
    }

    /// A request's timeout counts its time in its server's line: one stuck behind four requests the server holds
    /// unanswered times out there, takes no place and sends nothing.
    @Test func timeInLineCountsAgainstTheTimeout() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        _ = Self.serveSixteen(on: server, under: "held", seed: 1_300)
        let gate = RequestGate.holdingEveryRequest(to: server)
        let transport = try CurlTransport(.init(concurrency: 16, threads: 1))
        let origin = Self.origin(of: server)
        let held = (0..<4).map { index in
            Task { try await transport.send(HTTPRequest(url: server.url(path: "/held/\(index).bin"))) }
        }
        await yield(until: { gate.arrived == 4 })
        #expect(gate.arrived == 4)
        let started = ContinuousClock.now
        let error = await #expect(throws: TransportError.self) {
            try await transport.send(HTTPRequest(url: server.url(path: "/held/4.bin"), timeout: .milliseconds(300)))
        }
        #expect(error?.code == .timedOut)
        // It waited out its own timeout, not the four held requests' (the transport's default, 300 s).
        #expect(ContinuousClock.now - started >= .milliseconds(300))
        #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 4))
        #expect(gate.arrived == 4)
        gate.open()
        for request in held { #expect(try await request.value.status == 200) }
        #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 0))
        await transport.shutdown()
    }

    /// A download cancelled while its request waits at the server gives its place back; one cancelled while it waits
    /// in its server's line, or before it starts, takes none and sends nothing; a shutdown ends those in line too.
    @Test func cancelledAndShutDownDownloadsLeaveNoPlaceTaken() async throws {
        try await withGatedServer(under: "held", seed: 1_200) { gate, transport, origin, _, download in
            let counts = { transport.ramps.counts(origin) }
            // At the server.
            let held = Task { try await download(0) }
            await yield(until: { gate.arrived == 1 })
            #expect(counts() == (waiting: 0, unanswered: 1))
            held.cancel()
            await #expect(throws: (any Error).self) { try await held.value }
            #expect(counts() == (waiting: 0, unanswered: 0))
            // Before it starts.
            let early = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await download(1)
            }
            await #expect(throws: (any Error).self) { try await early.value }
            #expect(counts() == (waiting: 0, unanswered: 0))
            // In line: four at the server, the fifth waits and is cancelled there.
            let atServer = (2..<6).map { index in Task { try await download(index) } }
            await yield(until: { gate.arrived == 5 })
            #expect(counts() == (waiting: 0, unanswered: 4))
            let inLine = Task { try await download(6) }
            await yield(until: { counts().waiting == 1 })
            #expect(counts() == (waiting: 1, unanswered: 4))
            inLine.cancel()
            let error = await #expect(throws: TransportError.self) { try await inLine.value }
            #expect(error?.code == .cancelled)
            #expect(counts() == (waiting: 0, unanswered: 4))
            // A shutdown ends the four at the server and one more in line; none of them hangs.
            let lastInLine = Task { try await download(7) }
            await yield(until: { counts().waiting == 1 })
            #expect(counts().waiting == 1)
            await transport.shutdown()
            for task in atServer + [lastInLine] {
                await #expect(throws: TransportError.self) { try await task.value }
            }
            #expect(counts() == (waiting: 0, unanswered: 0))
            gate.open()
            // The first download's request, and four more; none from the downloads cancelled before or in line.
            #expect(gate.arrived == 5)
        }
    }

    /// An engine that stops on an error of libcurl's (here, limits its multi handle refuses) ends the downloads at the
    /// server and in line with that error, not as cancelled, refuses later ones with it, and leaves no place taken.
    @Test func anEngineStoppedByAnErrorEndsEveryDownloadWithIt() async throws {
        let isTheError = { (error: TransportError?) in
            error?.code == .other && error?.detail?.contains("CURLMOPT_MAX_TOTAL_CONNECTIONS") == true
        }
        try await withGatedServer(under: "stopped", seed: 1_300) { gate, transport, origin, _, download in
            let counts = { transport.ramps.counts(origin) }
            let atServer = (0..<4).map { index in Task { try await download(index) } }
            await yield(until: { gate.arrived == 4 })
            let inLine = Task { try await download(4) }
            await yield(until: { counts().waiting == 1 })
            #expect(counts() == (waiting: 1, unanswered: 4))
            transport.engines[0].resize(connections: -1, perHost: 16, standby: false)
            for task in atServer + [inLine] {
                let error = await #expect(throws: TransportError.self) { try await task.value }
                #expect(isTheError(error), "\(String(describing: error))")
            }
            let late = await #expect(throws: TransportError.self) { try await download(5) }
            #expect(isTheError(late), "\(String(describing: late))")
            #expect(counts() == (waiting: 0, unanswered: 0))
            gate.open()
            await transport.shutdown()
            #expect(gate.arrived == 4)
        }
    }

    /// A download cancelled just as its place comes (the cancel, then the place, wait in its engine's inbox while the
    /// engine is busy in another transfer's callback) ends as cancelled, sends nothing, and gives the place back.
    @Test func aPlaceThatComesToACancelledDownloadIsGivenBack() async throws {
        try await withEngineHeld { transport, origin, tickets, hold, download in
            let inLine = Task { try await download(0) }
            await yield(until: { transport.ramps.counts(origin).waiting == 1 })
            let busy = hold.holdEngine(of: transport)
            await yield(until: { hold.entered })
            inLine.cancel()
            tickets[0].answered()
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 4))
            hold.release()
            let error = await #expect(throws: TransportError.self) { try await inLine.value }
            #expect(error?.code == .cancelled)
            _ = try await busy.value
            // Its place, given back; the three tickets the test holds.
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 3))
            await transport.shutdown()
        }
    }

    /// A place that comes to a download whose engine was told to stop (and is busy in another transfer's callback,
    /// so that its download is still in line) is refused: the download ends with the shutdown, and the place goes to
    /// the next in line (another engine's transfer, here a stand-in; the test after it has two real engines).
    @Test func aPlaceRefusedByAStoppingEngineGoesToTheNextInLine() async throws {
        try await withEngineHeld { transport, origin, tickets, hold, download in
            let inLine = Task { try await download(0) }
            await yield(until: { transport.ramps.counts(origin).waiting == 1 })
            let next = LineWaiter()
            #expect(transport.ramps.enter(next, origin: origin).waits)
            let busy = hold.holdEngine(of: transport)
            await yield(until: { hold.entered })
            transport.engines[0].stop()
            tickets[0].answered()
            #expect(next.told)
            #expect(next.ticket != nil)
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 4))
            hold.release()
            let error = await #expect(throws: TransportError.self) { try await inLine.value }
            #expect(error?.code == .cancelled)
            // The held transfer may end before the engine looks at its inbox again (its body came with its answer).
            _ = await busy.result
            await transport.shutdown()
            next.ticket?.ended(connects: 1)
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 3))
        }
    }

    /// The same across two real engines sharing the ramp: the place the stopping engine's download refuses goes to
    /// the download of the other engine, next in line, which is sent and stores its file.
    @Test func aPlaceRefusedByAStoppingEngineGoesToTheOtherEnginesDownload() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let contents = Self.serveSixteen(on: server, under: "two", seed: 1_500)
        // Per-host under the whole concurrency: the engines are picked by load, not the one of small bodies.
        let transport = try CurlTransport(.init(concurrency: 16, perHost: 8, threads: 2))
        let origin = Self.origin(of: server)
        try await withTemporaryDirectory { directory in
            let download = { @Sendable (index: Int) async throws in
                let request = DownloadRequest(
                    url: server.url(path: "/two/\(index).bin"),
                    destination: directory.appendingPathComponent("\(index).bin"))
                _ = try await transport.download(request) { _ in }
            }
            let tickets = try fill(transport.ramps, origin)
            let hold = try EngineHold(directory: directory)
            defer { hold.stop() }
            // The first download goes to the first of two idle engines, the second to the other.
            let first = Task { try await download(0) }
            await yield(until: { transport.ramps.counts(origin).waiting == 1 })
            let second = Task { try await download(1) }
            await yield(until: { transport.ramps.counts(origin).waiting == 2 })
            try #require(transport.startedByEngine == [1, 1])
            // Each engine carries one: the hold goes to the first, which then stops while held in its callback.
            let busy = hold.holdEngine(of: transport)
            await yield(until: { hold.entered })
            try #require(transport.startedByEngine == [2, 1])
            transport.engines[0].stop()
            tickets[0].answered()
            // Refused by the first engine's download, the place went to the second's: it runs while the first is held.
            let waiting = transport.ramps.counts(origin).waiting
            #expect(waiting == 0)
            // A place not passed on would leave the second download waiting for good: it fails the test, not hangs it.
            if waiting > 0 { second.cancel() }
            try await second.value
            #expect(try Data(contentsOf: directory.appendingPathComponent("1.bin")) == contents[1])
            #expect(server.requests.map(\.path) == ["/two/1.bin"])
            hold.release()
            let error = await #expect(throws: TransportError.self) { try await first.value }
            #expect(error?.code == .cancelled)
            _ = await busy.result
            await transport.shutdown()
            for ticket in tickets.dropFirst() { ticket.ended(connects: 1) }
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 0))
        }
    }
}

extension TransferRampTests {
    /// A place among `server`'s unanswered transfers, which must be free.
    @discardableResult
    func place(in ramps: TransferRamps, _ server: Int) throws -> RampTicket {
        guard case .go(let ticket?) = ramps.enter(LineWaiter(), origin: server) else {
            throw RampTestFailure("no place was free for a transfer that was to have one")
        }
        return ticket
    }

    /// Runs `body` with a transport of one engine, the ramp of a server that closes each connection taken full by
    /// four tickets the test holds, an ``EngineHold`` and a download from that server.
    /// Afterwards the server has got no request, and once the three tickets after the first end, no place is taken.
    func withEngineHeld(
        _ body: (
            CurlTransport, Int, [RampTicket], EngineHold, @escaping @Sendable (Int) async throws -> Void
        ) async throws -> Void
    ) async throws {
        try await withGatedServer(under: "line", seed: 1_400) { gate, transport, origin, directory, download in
            // Open: it only counts requests (the tickets hold the line), so that a download sent by mistake ends at
            // once.
            gate.open()
            let tickets = try fill(transport.ramps, origin)
            do {
                let hold = try EngineHold(directory: directory)
                defer { hold.stop() }
                try await body(transport, origin, tickets, hold, download)
            }
            for ticket in tickets.dropFirst() { ticket.ended(connects: 1) }
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 0))
            #expect(gate.arrived == 0)
        }
    }

    /// Runs `body` with a server of sixteen files under `folder` (``serveSixteen(on:under:seed:)``) whose requests a
    /// ``RequestGate`` holds, a transport of one engine, the server's ramp key, a temporary folder and a download of
    /// the file of an index into that folder.
    fileprivate func withGatedServer(
        under folder: String, seed: UInt64,
        _ body: (
            RequestGate, CurlTransport, Int, URL, @escaping @Sendable (Int) async throws -> Void
        ) async throws -> Void
    ) async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        _ = Self.serveSixteen(on: server, under: folder, seed: seed)
        let gate = RequestGate.holdingEveryRequest(to: server)
        let transport = try CurlTransport(.init(concurrency: 16, threads: 1))
        try await withTemporaryDirectory { directory in
            try await body(gate, transport, Self.origin(of: server), directory) { index in
                let request = DownloadRequest(
                    url: server.url(path: "/\(folder)/\(index).bin"),
                    destination: directory.appendingPathComponent("\(index).bin"))
                _ = try await transport.download(request) { _ in }
            }
        }
    }

    /// Every place among `server`'s unanswered transfers (``TransferRamps/limit``), which must all be free.
    func fill(_ ramps: TransferRamps, _ server: Int) throws -> [RampTicket] {
        try (0..<TransferRamps.limit).map { _ in try place(in: ramps, server) }
    }

    /// The ramp's key for `server`.
    static func origin(of server: MockCatalogServer) -> Int {
        TransferRamps.originKey(server.url(path: "/").absoluteString)
    }

    /// Sixteen files of a little over 2,000 bytes each, all different, served at `/<folder>/<index>.bin`.
    static func serveSixteen(on server: MockCatalogServer, under folder: String, seed: UInt64) -> [Data] {
        let contents = (0..<16).map { randomBytes(2_000 + $0, seed: seed + UInt64($0)) }
        for (index, content) in contents.enumerated() {
            server.addFile(path: "/\(folder)/\(index).bin", bytes: [UInt8](content))
        }
        return contents
    }
}

struct RampTestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension TransferRamps.Entry {
    var waits: Bool {
        if case .wait = self { true } else { false }
    }

    var goesWithoutTicket: Bool {
        if case .go(nil) = self { true } else { false }
    }
}

/// A transfer in a ramp's line, for the ramp's own tests: remembers whether its turn came, and its ticket.
private final class LineWaiter: RampWaiter {
    private let state = Mutex<(told: Bool, ticket: RampTicket?)>((false, nil))
    /// Whether it refuses its place, as a transfer whose engine stopped does.
    private let refuses: Bool

    init(refuses: Bool = false) {
        self.refuses = refuses
    }

    var told: Bool { state.withLock { $0.told } }
    var ticket: RampTicket? { state.withLock { $0.ticket } }

    func mayStart(with ticket: RampTicket?) -> Bool {
        state.withLock { $0 = (true, refuses ? nil : ticket) }
        return !refuses
    }
}

/// Holds an engine's thread in a callback of a transfer of its own (from a server of its own) until ``release()``, so
/// that what other threads send the engine meanwhile waits in its inbox, in the order it was sent.
final class EngineHold: Sendable {
    private let server: MockCatalogServer
    private let directory: URL
    private let condition = NSCondition()
    private nonisolated(unsafe) var state = (entered: false, released: false)

    init(directory: URL) throws {
        server = try MockCatalogServer()
        server.addFile(path: "/busy.bin", bytes: [UInt8](repeating: 7, count: 100))
        self.directory = directory
    }

    /// Whether the engine's thread is in the callback.
    var entered: Bool {
        condition.lock()
        defer { condition.unlock() }
        return state.entered
    }

    /// Starts the download whose answer holds the engine of `transport` (its first engine, while the loads tie) until
    /// ``release()``.
    func holdEngine(of transport: CurlTransport) -> Task<Void, any Error> {
        let request = DownloadRequest(
            url: server.url(path: "/busy.bin"), destination: directory.appendingPathComponent("busy.bin"),
            onResponse: { [self] _ in
                condition.lock()
                state.entered = true
                while !state.released { condition.wait() }
                condition.unlock()
            })
        return Task { _ = try await transport.download(request) { _ in } }
    }

    func release() {
        condition.lock()
        state.released = true
        condition.broadcast()
        condition.unlock()
    }

    /// Releases the engine if a test did not, and stops the server.
    func stop() {
        release()
        server.stop()
    }
}

/// Holds each request the mock server gets (in its fault hook, on the connection's thread) until ``open()``, or
/// until ``release()`` lets one more go, counting them.
private final class RequestGate: Sendable {
    private struct State {
        var open = false
        var permits = 0
        var arrived = 0
        var passed = 0
    }

    private let condition = NSCondition()
    private nonisolated(unsafe) var state = State()

    var arrived: Int { locked { $0.arrived } }
    /// Requests let go.
    var passed: Int { locked { $0.passed } }

    /// A gate that holds every request `server` gets; the server closes each connection after its answer, as Python's
    /// `http.server` does.
    static func holdingEveryRequest(to server: MockCatalogServer) -> RequestGate {
        let gate = RequestGate()
        server.setFaultHook { _ in
            gate.pass()
            return .closeAfterResponse
        }
        return gate
    }

    /// Called for each request: counts it and waits until the gate is open or a permit is free.
    func pass() {
        condition.lock()
        state.arrived += 1
        while !state.open && state.permits == 0 { condition.wait() }
        if !state.open { state.permits -= 1 }
        state.passed += 1
        condition.unlock()
    }

    /// Lets one held request (or the next to come) go.
    func release() {
        condition.lock()
        state.permits += 1
        condition.signal()
        condition.unlock()
    }

    func open() {
        condition.lock()
        state.open = true
        condition.broadcast()
        condition.unlock()
    }

    private func locked<T>(_ body: (State) -> T) -> T {
        condition.lock()
        defer { condition.unlock() }
        return body(state)
    }
}
