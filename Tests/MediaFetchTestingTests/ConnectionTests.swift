import Dispatch
import Foundation
import MediaFetchTesting
import Synchronization
import Testing

@Suite("Connections and request parsing")
struct ConnectionTests {
    let server: MockCatalogServer

    init() throws {
        server = try MockCatalogServer()
    }

    @Test("two requests on one connection: one accept, logged with their connection and sequence")
    func keepAlive() throws {
        let client = try RawHTTPClient(port: server.port)
        let first = try client.request("/search?term=love&limit=1")
        let second = try client.request("/lookup?id=1")
        #expect(first.status == 200)
        #expect(second.status == 200)
        #expect(first.headers["Connection"] == "keep-alive")
        #expect(server.connectionsAccepted == 1)
        let log = server.requests
        #expect(log.map(\.path) == ["/search", "/lookup"])
        #expect(log.map(\.connection) == [1, 1])
        #expect(log.map(\.sequenceOnConnection) == [1, 2])
        #expect(log[0].rawQuery == "term=love&limit=1")
        #expect(log[0].headers["host"] == "127.0.0.1")
    }

    @Test("pipelined requests are answered in order")
    func pipelining() throws {
        let client = try RawHTTPClient(port: server.port)
        try client.send("GET /lookup?id=1 HTTP/1.1\r\nHost: x\r\n\r\nGET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
        #expect(try client.readResponse().status == 200)
        #expect(try client.readResponse().status == 404)
    }

    @Test("Connection: close and HTTP/1.0 close after the answer")
    func close() throws {
        let closing = try RawHTTPClient(port: server.port)
        let response = try closing.request("/lookup?id=1", headers: ["Connection: close"])
        #expect(response.headers["Connection"] == "close")
        #expect(closing.isClosedByPeer())
        let old = try RawHTTPClient(port: server.port)
        _ = try old.request("/lookup?id=1", version: "HTTP/1.0")
        #expect(old.isClosedByPeer())
    }

    @Test(
        "malformed requests get 400 (or 431/505) and a closed connection, never a crash",
        arguments: [
            ("GARBAGE\r\n\r\n", 400),
            ("GET /x\r\n\r\n", 400),
            ("GET /x HTTP/1.1 extra\r\n\r\n", 400),
            ("GET /x FTP/1.0\r\n\r\n", 400),
            ("GET /x HTTP/2.0\r\n\r\n", 505),
            ("GET /x HTTP/1.1\r\nNoColon\r\n\r\n", 400),
            ("GET /x HTTP/1.1\r\nBad Name: v\r\n\r\n", 400),
            ("GET /x HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n", 400),
            ("G(T /x HTTP/1.1\r\n\r\n", 400),
            ("GET /x HTTP/1.1\r\nContent-Length: -5\r\n\r\n", 400),
            ("GET /x HTTP/1.1\r\nX-Big: " + String(repeating: "a", count: 20_000) + "\r\n\r\n", 431),
        ]
    )
    func malformed(request: String, status: Int) throws {
        let client = try RawHTTPClient(port: server.port)
        try client.send(request)
        let response = try client.readResponse()
        #expect(response.status == status)
        #expect(client.isClosedByPeer())
        // The server is still fine.
        #expect(try RawHTTPClient(port: server.port).request("/lookup?id=1").status == 200)
    }

    @Test("binary junk is refused without harm")
    func junk() throws {
        let client = try RawHTTPClient(port: server.port)
        var bytes = [UInt8](repeating: 0, count: 600)
        var generator = SystemRandomNumberGenerator()
        for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &generator) }
        try client.send(bytes + Array("\r\n\r\n".utf8))
        #expect(try client.readResponse().status == 400)
        #expect(try RawHTTPClient(port: server.port).request("/lookup?id=1").status == 200)
    }

    @Test("100 connections at once are all served")
    func concurrency() throws {
        let song = server.catalog.songs[1]
        let expected = server.catalog.previewBytes(for: song)
        let clients = try (0..<100).map { _ in try RawHTTPClient(port: server.port) }
        // Every connection is open and has a request in flight before any answer is read.
        for client in clients { try client.send("GET \(song.previewPath) HTTP/1.1\r\nHost: x\r\n\r\n") }
        // Reading one after another is enough: each connection has its own server thread blocked in send.
        var matches = 0
        for client in clients where try client.readResponse().body == expected { matches += 1 }
        #expect(matches == 100)
        #expect(server.connectionsAccepted == 100)
    }

    @Test("resetLog clears requests and the connection count")
    func resetLog() throws {
        _ = try RawHTTPClient(port: server.port).request("/lookup?id=1")
        #expect(server.requests.count == 1)
        server.resetLog()
        #expect(server.requests.isEmpty)
        #expect(server.connectionsAccepted == 0)
    }

    @Test("a taken port is a clear error; stop frees it and is idempotent")
    func bindFailure() throws {
        let port = server.port
        #expect(throws: MockServerError.self) { try MockCatalogServer(port: port) }
        server.stop()
        server.stop()
        let again = try MockCatalogServer(port: port)
        #expect(again.port == port)
        again.stop()
    }

    @Test("waitUntilStopped returns once stop() ran elsewhere")
    func waitUntilStopped() async throws {
        let server = self.server
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                server.waitUntilStopped()
                continuation.resume()
            }
            server.stop()
        }
        // Nothing answers for this server any more. The port itself may already serve another test's server (ports
        // are reused), so what is checked is that a request sent there never reaches this one's log.
        let logged = server.requests.count
        if let client = try? RawHTTPClient(port: server.port, timeout: 2) {
            try? client.send("GET /search?term=after-stop HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            _ = client.readToEnd()
        }
        #expect(server.requests.count == logged)
        #expect(!server.requests.contains { $0.target.contains("after-stop") })
    }
}
