import Foundation
import MediaFetchCore
import MediaFetchTesting
import Synchronization
import Testing

@testable import CurlTransport

/// The ramp that keeps a transport from flooding a server's listen queue before it knows the server keeps
/// connections (``TransferRamp``).
@Suite("Transfer ramp")
struct TransferRampTests {
    @Test func theTransportsFourAreSharedOutAmongItsEngines() {
        #expect(TransferRamp(engine: 0, of: 1).limit == 4)
        #expect([0, 1].map { TransferRamp(engine: $0, of: 2).limit } == [2, 2])
        #expect([0, 1, 2].map { TransferRamp(engine: $0, of: 3).limit } == [2, 1, 1])
        // More engines than four: each still starts one.
        #expect((0..<8).map { TransferRamp(engine: $0, of: 8).limit } == Array(repeating: 1, count: 8))
    }

    @Test func anAnswerMakesRoomAndAKeptConnectionEndsTheRamp() {
        let ramp = TransferRamp(engine: 0, of: 2)
        ramp.admitted()
        ramp.admitted()
        #expect(!ramp.admits)
        ramp.answered()
        #expect(ramp.admits)
        ramp.admitted()
        // A transfer that ended without an answer (refused, timed out) no longer counts.
        ramp.ended(answered: false, connects: 1)
        #expect(ramp.admits)
        // One that opened its own connection says nothing about keeping them.
        ramp.ended(answered: true, connects: 1)
        #expect(!ramp.over)
        ramp.admitted()
        #expect(!ramp.admits)
        // One that went over a connection an earlier transfer left open: the server keeps them.
        ramp.ended(answered: true, connects: 0)
        #expect(ramp.over)
        for _ in 0..<100 { ramp.admitted() }
        #expect(ramp.admits)
    }

    /// Against a server that closes each connection after one answer (as Python's `http.server` does), sixteen
    /// downloads at once never have more than four requests the server has not answered; the others wait in the
    /// engines until one is answered. The server lets the requests it holds go one at a time, and after each one
    /// (once every download the engines let go has reached it) at most four are held.
    @Test func aServerThatClosesEachConnectionNeverHasMoreThanFourUnanswered() async throws {
        let server = try MockCatalogServer()
        defer { server.stop() }
        let contents = Self.serveSixteen(on: server, under: "closing", seed: 700)
        let gate = RequestGate()
        server.setFaultHook { _ in
            gate.pass()
            return .closeAfterResponse
        }
        let transport = try CurlTransport(.init(concurrency: 16))
        try await withTemporaryDirectory { directory in
            let urls = contents.indices.map { server.url(path: "/closing/\($0).bin") }
            let downloads = Task { try await downloadAll(urls, expecting: contents, into: directory, with: transport) }
            let held = { transport.rampCountsByEngine.map(\.waiting).reduce(0, +) }
            // Four requests reach the server and wait there; the twelve other downloads wait in the engines.
            await yield(until: { gate.arrived == 4 && held() == 12 })
            #expect(gate.arrived == 4)
            #expect(held() == 12)
            for released in 1...16 {
                gate.release()
                // Every download the engines let go has reached the server (a moment later an engine may let one more
                // go: the counts are looked at again below).
                await yield(until: { gate.arrived + held() == 16 && gate.passed == released })
                #expect(gate.arrived - released <= 4, "\(gate.arrived - released) requests unanswered at once")
                // Downloads still held by an engine: one of them reaches the server once the answer is in.
                await yield(until: { held() == 0 || gate.arrived - released >= 1 })
                #expect(held() == 0 || gate.arrived - released >= 1, "downloads wait in the engines for nothing")
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
