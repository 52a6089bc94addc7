import CurlTransport
import Foundation
import MediaFetchTesting
import MediaFetchCore
import Testing

/// The `proxy` option, against nginx as a plain-http forward proxy in front of nginx itself.
@Suite("CurlTransport through a proxy")
struct CurlProxyTests {
    @Test func sendsRequestsToTheConfiguredProxy() async throws {
        try await NginxServer.with(forwardProxy: true) { server in
            let content = randomBytes(300_000, seed: 41)
            let url = try server.serve(content, at: "files/a.bin")
            let transport = try CurlTransport(.init(proxy: server.proxyURL))
            try await withTemporaryDirectory { directory in
                let destination = directory.appendingPathComponent("a.bin")
                let result = try await transport.download(DownloadRequest(url: url, destination: destination)) { _ in }
                #expect(result.status == 200)
                #expect(try Data(contentsOf: destination) == content)
            }
            // A request to a proxy names the origin in full (absolute form); one straight to the origin would not.
            #expect(try server.logLines(server.proxyLog, atLeast: 1) == ["200 GET \(url.absoluteString) HTTP/1.1"])
            // The origin saw it once, from the proxy.
            #expect(try server.accessLogLines(atLeast: 1).count == 1)
            await transport.shutdown()
        }
    }

    /// With no `proxy`, the transport sets an empty one, which keeps libcurl from reading `http_proxy`.
    ///
    /// Setting the variable here would change it for every test running in this process, so the download runs
    /// in a child: this same test binary, running only this test, with `http_proxy` pointing at the proxy. In
    /// the child this test finds the URL in ``childURLVariable`` and only downloads it.
    @Test func ignoresTheHTTPProxyEnvironmentVariable() async throws {
        if let url = ProcessInfo.processInfo.environment[Self.childURLVariable] {
            try await Self.downloadDirectly(try #require(URL(string: url)))
            return
        }
        try await NginxServer.with(forwardProxy: true) { server in
            let url = try server.serve(Self.childContent, at: "files/a.bin")
            var environment = ProcessInfo.processInfo.environment
            environment["http_proxy"] = server.proxyURL
            // An inherited exception for loopback addresses would make the proxy variable moot.
            environment["no_proxy"] = nil
            environment["NO_PROXY"] = nil
            // The variable is live: curl, which reads it, goes through the proxy.
            let curl = try await runProgram(
                try RequiredProgram.curl.locate(), ["-sS", "-o", "/dev/null", url.absoluteString],
                environment: environment)
            try #require(curl.status == 0, "curl: \(curl.output)")
            try #require(try server.logLines(server.proxyLog, atLeast: 1).count == 1)

            environment[Self.childURLVariable] = url.absoluteString
            let testBinary = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
            let child = try await runProgram(
                URL(fileURLWithPath: testBinary),
                ["--testing-library", "swift-testing", "--filter", "ignoresTheHTTPProxyEnvironmentVariable"],
                environment: environment)
            #expect(child.status == 0, "the child run: \(child.output)")
            // The origin saw curl's request (through the proxy) and the child's (straight); the proxy only curl's.
            #expect(try server.accessLogLines(atLeast: 2).count == 2)
            #expect(try server.logLines(server.proxyLog, atLeast: 1).count == 1)
        }
    }

    private static let childURLVariable = "MEDIAFETCH_TEST_PROXY_CHILD_URL"
    private static let childContent = randomBytes(100_000, seed: 42)

    /// The child's part: a download with the default configuration, which names no proxy.
    private static func downloadDirectly(_ url: URL) async throws {
        let transport = try CurlTransport()
        try await withTemporaryDirectory { directory in
            let destination = directory.appendingPathComponent("a.bin")
            _ = try await transport.download(DownloadRequest(url: url, destination: destination)) { _ in }
            #expect(try Data(contentsOf: destination) == childContent)
        }
        await transport.shutdown()
    }
}
