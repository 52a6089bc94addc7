import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import CurlTransport

/// The ramp that keeps a transport from flooding a server's listen queue before it knows the server keeps
/// connections (``TransferRamps``).
@Suite("Transfer ramp")
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
    }

    @Test func anAnswerMakesRoomAndAKeptConnectionEndsTheRamp() async throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        var tickets: [RampTicket] = []
        for _ in 0..<4 { tickets.append(try #require(await ramps.enter(server))) }
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        // The fifth waits, and takes the place of the first answered.
        let fifth = Task { try await ramps.enter(server) }
        await yield(until: { ramps.counts(server).waiting == 1 })
        #expect(ramps.counts(server) == (waiting: 1, unanswered: 4))
        tickets[0].answered()
        let fifthTicket = try #require(try await fifth.value)
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
        #expect(try await ramps.enter(other) != nil)
        #expect(ramps.counts(other) == (waiting: 0, unanswered: 1))
        // An answered transfer's end, over a connection it opened, changes nothing.
        tickets[2].answered()
        tickets[2].ended(connects: 1)
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 2))
        #expect(!ramps.isOver(server))
        // An answer over a connection an earlier transfer opened: the server keeps connections, and what waits goes
        // without a ticket.
        fifthTicket.answered()
        tickets.append(try #require(await ramps.enter(server)))
        tickets.append(try #require(await ramps.enter(server)))
        tickets.append(try #require(await ramps.enter(server)))
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        let waiting = Task { try await ramps.enter(server) }
        await yield(until: { ramps.counts(server).waiting == 1 })
        #expect(ramps.counts(server).waiting == 1)
        fifthTicket.ended(connects: 0)
        #expect(try await waiting.value == nil)
        #expect(ramps.isOver(server))
        #expect(!ramps.isOver(other))
        for _ in 0..<100 { #expect(try await ramps.enter(server) == nil) }
        // The tickets out before the end are still counted until they give their places back.
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        for ticket in tickets { ticket.ended(connects: 1) }
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 0))
    }

    /// Waiting transfers take the places given back in the order they came; one cancelled in the middle is skipped.
    @Test func waitersGoInTheOrderTheyCame() async throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        var tickets: [RampTicket] = []
        for _ in 0..<4 { tickets.append(try #require(await ramps.enter(server))) }
        let entered = Entered()
        var waiters: [String: Task<RampTicket?, any Error>] = [:]
        for (position, name) in ["first", "second", "third", "fourth"].enumerated() {
            waiters[name] = Task {
                let ticket = try await ramps.enter(server)
                entered.names.withLock { $0.append(name) }
                return ticket
            }
            // One at a time, so that the order they came in is known.
            await yield(until: { ramps.counts(server).waiting == position + 1 })
            #expect(ramps.counts(server).waiting == position + 1)
        }
        waiters["second"]?.cancel()
        await #expect(throws: CancellationError.self) { try await waiters["second"]?.value }
        for (index, expected) in [["first"], ["first", "third"], ["first", "third", "fourth"]].enumerated() {
            tickets[index].answered()
            await yield(until: { entered.names.withLock { $0.count } == expected.count })
            #expect(entered.names.withLock { $0 } == expected)
        }
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
    }

    /// Past ``TransferRamps/remembered`` servers, those with nothing in flight are forgotten; a server whose ramp
    /// ended is kept while tickets taken before the end are out, so that they give no place to a fresh ramp.
    @Test func idleServersAreForgottenAndOnlyThey() async throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        var tickets: [RampTicket] = []
        for _ in 0..<4 { tickets.append(try #require(await ramps.enter(server))) }
        tickets[0].answered()
        tickets[0].ended(connects: 0)
        #expect(ramps.isOver(server))
        // Enters as many other servers as can be remembered, each with a transfer that ends at once.
        func visitOthers(from first: Int) async throws {
            for port in first..<(first + TransferRamps.remembered + 1) {
                let ticket = try await ramps.enter(TransferRamps.originKey("http://127.0.0.2:\(port)/"))
                ticket?.ended(connects: 1)
            }
        }
        try await visitOthers(from: 10_000)
        // Three tickets are out: remembered, and its ramp still over.
        #expect(ramps.isOver(server))
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 3))
        for ticket in tickets { ticket.ended(connects: 1) }
        try await visitOthers(from: 20_000)
        // Forgotten: it ramps again from nothing.
        #expect(!ramps.isOver(server))
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 0))
    }

    @Test func aTransferCancelledWhileItWaitsTakesNoPlace() async throws {
        let ramps = TransferRamps()
        let server = TransferRamps.originKey("http://127.0.0.1:1/")
        var tickets: [RampTicket] = []
        for _ in 0..<4 { tickets.append(try #require(await ramps.enter(server))) }
        let waiting = Task { try await ramps.enter(server) }
        await yield(until: { ramps.counts(server).waiting == 1 })
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 4))
        tickets[0].answered()
        #expect(ramps.counts(server) == (waiting: 0, unanswered: 3))
    }

    /// Against a server that closes each connection after one answer (as Python's `http.server` does), sixteen
    /// downloads at once never have more than four requests the server has not answered, however many engines the
    /// transport has; the others wait until one is answered. The server lets the requests it holds go one at a time,
    /// and after each one (once every download the ramp let go has reached it) at most four are held.
    @Test func aServerThatClosesEachConnectionNeverHasMoreThanFourUnanswered() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let contents = Self.serveSixteen(on: server, under: "closing", seed: 700)
        let gate = RequestGate()
        server.setFaultHook { _ in
            gate.pass()
            return .closeAfterResponse
        }
        let transport = try CurlTransport(.init(concurrency: 16, threads: 8))
        let origin = TransferRamps.originKey(server.url(path: "/").absoluteString)
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
        let gate = RequestGate()
        stuck.setFaultHook { _ in
            gate.pass()
            return .closeAfterResponse
        }
        let transport = try CurlTransport(.init(concurrency: 16, threads: 1))
        let stuckOrigin = TransferRamps.originKey(stuck.url(path: "/").absoluteString)
        let keptOrigin = TransferRamps.originKey(kept.url(path: "/").absoluteString)
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

    /// A download cancelled while its request waits at the server gives its place back; one cancelled before it
    /// starts takes none and never reaches an engine.
    @Test func aCancelledDownloadGivesItsPlaceBack() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let contents = Self.serveSixteen(on: server, under: "held", seed: 1_200)
        let gate = RequestGate()
        server.setFaultHook { _ in
            gate.pass()
            return .closeAfterResponse
        }
        let transport = try CurlTransport(.init(concurrency: 16, threads: 1))
        let origin = TransferRamps.originKey(server.url(path: "/").absoluteString)
        try await withTemporaryDirectory { directory in
            let request: @Sendable (Int) -> DownloadRequest = { index in
                DownloadRequest(
                    url: server.url(path: "/held/\(index).bin"),
                    destination: directory.appendingPathComponent("\(index).bin"))
            }
            let held = Task { try await transport.download(request(0)) { _ in } }
            await yield(until: { gate.arrived == 1 })
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 1))
            held.cancel()
            await #expect(throws: (any Error).self) { try await held.value }
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 0))
            // Cancelled before it asks for its place.
            let early = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                return try await transport.download(request(1)) { _ in }
            }
            await #expect(throws: CancellationError.self) { try await early.value }
            #expect(transport.ramps.counts(origin) == (waiting: 0, unanswered: 0))
            #expect(transport.startedByEngine.reduce(0, +) == 1)
            gate.open()
            // The server's request for the first download is let go; the next download runs.
            _ = try await transport.download(request(2)) { _ in }
            #expect(try Data(contentsOf: directory.appendingPathComponent("2.bin")) == contents[2])
        }
        #expect(gate.arrived == 2)
        await transport.shutdown()
    }
}

extension TransferRampTests {
    /// Sixteen files of a little over 2,000 bytes each, all different, served at `/<folder>/<index>.bin`.
    static func serveSixteen(on server: MockCatalogServer, under folder: String, seed: UInt64) -> [Data] {
        let contents = (0..<16).map { randomBytes(2_000 + $0, seed: seed + UInt64($0)) }
        for (index, content) in contents.enumerated() {
            server.addFile(path: "/\(folder)/\(index).bin", bytes: [UInt8](content))
        }
        return contents
    }
}

/// Names in the order their waits ended.
private final class Entered: Sendable {
    let names = Mutex<[String]>([])
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
