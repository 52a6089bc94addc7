import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import MediaFetchServe

#if canImport(Glibc)
    import Glibc
#endif

/// Safe by default: the token, the Host and Origin checks, the limits, the library's root, and bad input.
@Suite(.serialized) struct ServeSecurityTests {
    @Test func everyAPICallNeedsTheToken() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        for (method, path) in [("GET", "/api/downloads"), ("GET", "/api/search?term=love"), ("GET", "/api/events")] {
            let none = await serve.request(method, path, headers: ["Authorization": ""])
            #expect(none.status == 401, "\(method) \(path)")
            #expect(none.headers["www-authenticate"] == "Bearer")
            let wrong = await serve.request(method, path, headers: ["Authorization": "Bearer wrong-token-0123456789"])
            #expect(wrong.status == 401)
            let prefix = await serve.request(method, path, headers: ["Authorization": "Bearer test-token"])
            #expect(prefix.status == 401)
        }
        let post = await serve.request(
            "POST", "/api/downloads", body: #"{"ids":["1"]}"#, headers: ["Authorization": "Basic abc"])
        #expect(post.status == 401)
        // The scheme's name is case-insensitive; the token is not.
        let lower = await serve.request("GET", "/api/downloads", headers: ["Authorization": "bearer " + serve.token])
        #expect(lower.status == 200)
        let upper = await serve.request(
            "GET", "/api/downloads", headers: ["Authorization": "BEARER " + serve.token.uppercased()])
        #expect(upper.status == 401)
        await serve.stop()
    }

    /// A connection whose descriptor is numbered 1,024 or more is served: libmicrohttpd watches with poll(), not
    /// select(), which cannot see one (a durable run of small files may hold a thousand for its stores).
    @Test func aConnectionNumberedPast1024IsServed() async throws {
        var limit = rlimit()
        try #require(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        var saved = limit
        defer { _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &saved) }
        if limit.rlim_cur < 1300 {
            try #require(
                limit.rlim_max >= 1300,
                "the hard limit of open files is \(limit.rlim_max), under the 1,300 this test needs (ulimit -Hn)")
            limit.rlim_cur = 1300
            try #require(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
        }
        // Every descriptor up to 1,100 taken, so that the server's own are numbered past it.
        var held: [Int32] = []
        defer { for descriptor in held { close(descriptor) } }
        while held.last.map({ $0 < 1100 }) ?? true {
            let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
            try #require(descriptor >= 0, "cannot open /dev/null: \(String(cString: strerror(errno)))")
            held.append(descriptor)
        }
        let serve = try ServeFixture()
        try await serve.start()
        let answer = await serve.request("GET", "/api/downloads")
        #expect(answer.status == 200)
        #expect(answer.object["downloads"] != nil)
        await serve.stop()
    }

    @Test func aForeignHostIsRefused() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        for host in ["evil.example", "evil.example:\(serve.port)", "127.0.0.1:1", ""] {
            let answer = await serve.request("GET", "/api/downloads", headers: ["Host": host])
            #expect(answer.status == 403 || answer.status == 400, "Host: \(host)")
            let page = await serve.request("GET", "/", headers: ["Host": host])
            #expect(page.status != 200, "Host: \(host)")
        }
        #expect(
            await serve.request("GET", "/api/downloads", headers: ["Host": "localhost:\(serve.port)"]).status == 200)
        await serve.stop()
    }

    @Test func stateChangesNeedTheOwnOriginAndAJSONBody() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        let body = #"{"ids":["1"]}"#
        let foreign = await serve.request(
            "POST", "/api/downloads", body: body, headers: ["Origin": "http://evil.example"])
        #expect(foreign.status == 403)
        let none = await serve.request("POST", "/api/downloads", body: body, headers: ["Origin": ""])
        #expect(none.status == 403)
        let form = await serve.request(
            "POST", "/api/downloads", body: "ids=1", headers: ["Content-Type": "application/x-www-form-urlencoded"])
        #expect(form.status == 415)
        let malformed = await serve.request("POST", "/api/downloads", body: "{\"ids\": [")
        #expect(malformed.status == 400)
        #expect(malformed.object["error"] as? String == "the body is not valid JSON")
        let notObject = await serve.request("POST", "/api/downloads", body: "[1]")
        #expect(notObject.status == 400)
        let wrongType = await serve.request("POST", "/api/downloads", body: #"{"ids": [1]}"#)
        #expect(wrongType.status == 400)
        let unknown = await serve.request("POST", "/api/downloads", body: #"{"ids": ["424242"]}"#)
        #expect(unknown.status == 404)
        #expect((unknown.object["error"] as? String)?.contains("424242") == true)
        let big = await serve.request(
            "POST", "/api/downloads", body: "{\"ids\": [\"" + String(repeating: "a", count: 70_000) + "\"]}")
        #expect(big.status == 413)
        // A length declared over the limit is answered at once, without the body: the server does not wait for it.
        let declared = "POST /api/downloads HTTP/1.1\r\nHost: \(serve.host)\r\nAuthorization: Bearer \(serve.token)\r\n"
            + "Origin: \(serve.origin)\r\nContent-Type: application/json\r\nContent-Length: 999999999999\r\n\r\n"
        let port = serve.port
        let early = await ServeFixture.offThePool {
            ServeFixture.exchange(port: port, Array(declared.utf8), until: { _ in true })
        }
        #expect(early.status == 413)
        let longQuery = await serve.request("GET", "/api/search?term=" + String(repeating: "a", count: 3000))
        #expect(longQuery.status == 414)
        let missing = await serve.request("GET", "/api/search?limit=5")
        #expect(missing.status == 400)
        let badLimit = await serve.request("GET", "/api/search?term=love&limit=0")
        #expect(badLimit.status == 400)
        // The server still answers after all of it.
        #expect(await serve.request("GET", "/api/downloads").status == 200)
        await serve.stop()
    }

    @Test func libraryPathsNeverLeaveTheSinksRoot() async throws {
        let serve = try ServeFixture()
        try await serve.start()
        let files = FileManager.default
        try files.createDirectory(at: serve.library.appendingPathComponent("a"), withIntermediateDirectories: true)
        try Data("inside".utf8).write(to: serve.library.appendingPathComponent("a/in.m4a"))
        try Data("top-secret-bytes".utf8).write(to: serve.scratch.appendingPathComponent("secret.txt"))
        symlink(
            serve.scratch.appendingPathComponent("secret.txt").path,
            serve.library.appendingPathComponent("link.m4a").path)
        symlink(serve.scratch.path, serve.library.appendingPathComponent("up").path)
        #expect(await serve.request("GET", "/library/a/in.m4a").text == "inside")
        for path in [
            "/library/../secret.txt", "/library/a/../../secret.txt", "/library/%2e%2e/secret.txt",
            "/library/a/%2E%2E/%2e%2e/secret.txt", "/library/link.m4a", "/library/up/secret.txt",
            "/library/a%2f..%2f..%2fsecret.txt", "/library//etc/passwd", "/library/", "/library/a",
        ] {
            let answer = await serve.request("GET", path)
            #expect(answer.status == 404, "\(path)")
            #expect(!answer.text.contains("top-secret-bytes"), "\(path)")
        }
        // The library needs the token too, or the page's cookie.
        #expect(await serve.request("GET", "/library/a/in.m4a", headers: ["Authorization": ""]).status == 401)
        let session = await serve.request("POST", "/api/session", body: "{}")
        #expect(session.status == 204)
        let cookie = try #require(session.headers["set-cookie"]?.split(separator: ";").first.map(String.init))
        #expect(session.headers["set-cookie"]?.contains("HttpOnly") == true)
        let withCookie = await serve.request(
            "GET", "/library/a/in.m4a", headers: ["Authorization": "", "Cookie": cookie])
        #expect(withCookie.text == "inside")
        await serve.stop()
    }

    @Test func listeningBeyondLoopbackNeedsAToken() async throws {
        let serve = try ServeFixture()
        await #expect(throws: ServeError.self) {
            _ = try await Serve.run(
                spec: serve.spec, registry: .init(), options: .init(listen: "0.0.0.0", port: 0), ready: { _ in })
        }
        await #expect(throws: ServeError.self) {
            _ = try await Serve.run(
                spec: serve.spec, registry: .init(), options: .init(port: 0, token: "short"), ready: { _ in })
        }
        // A name is not taken for an address beyond loopback: it is not an address at all.
        do {
            _ = try await Serve.run(
                spec: serve.spec, registry: .init(), options: .init(listen: "localhost", port: 0), ready: { _ in })
            Issue.record("serve started on --listen localhost")
        } catch let error as ServeError {
            #expect(error.message.contains("is not an IPv4 or IPv6 address"))
        }
    }

    /// serve keeps its queue beside the state folder's SQLite ledger: a shared ledger in its config is refused,
    /// naming where it was written and without its password, instead of being quietly ignored.
    @Test func aSharedLedgerIsRefusedWithoutItsPassword() async throws {
        let serve = try ServeFixture()
        var spec = serve.spec
        spec.ledger = LedgerSelection(
            uri: "postgresql://worker:s3cret-pw@127.0.0.1:5432/runs",
            location: SourceLocation(file: "serve.yaml", line: 4, column: 1))
        do {
            _ = try await Serve.run(spec: spec, registry: .init(), options: .init(port: 0), ready: { _ in })
            Issue.record("serve started with a shared ledger")
        } catch let error as ServeError {
            #expect(error.message.contains("serve.yaml:4"))
            #expect(error.message.contains("Remove `ledger:`"))
            #expect(!error.message.contains("s3cret-pw"))
        }
    }

    @Test func tokensAreComparedInFull() {
        #expect(ServeApp.constantTimeEqual("abc", "abc"))
        #expect(!ServeApp.constantTimeEqual("abd", "abc"))
        #expect(!ServeApp.constantTimeEqual("ab", "abc"))
        #expect(!ServeApp.constantTimeEqual("abcd", "abc"))
        #expect(!ServeApp.constantTimeEqual("", "abc"))
    }
}

/// The event stream's hand-written JSON reads back as what went in, whatever the catalog's strings hold.
@Test func eventJSONRoundTripsHostileStrings() throws {
    let hostile = "\"quotes\" \\ back</script>\n\t\r\u{0}\u{1F}\u{2028}\u{2029}\u{202E}日本語 😀"
    let download = Download(
        id: "1", title: hostile, artist: nil, status: .downloading, receivedBytes: 5, expectedBytes: nil,
        location: hostile, reason: "<b>")
    let text = JSONText.download(download)
    let object = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    #expect(object["title"] as? String == hostile)
    #expect(object["location"] as? String == hostile)
    #expect(object["artist"] is NSNull)
    #expect(object["expectedBytes"] is NSNull)
    #expect(object["receivedBytes"] as? Int == 5)
    #expect(object["status"] as? String == "downloading")
    #expect(!text.contains("\n"))
}
