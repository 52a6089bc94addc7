import Foundation
import MediaFetchCore
import MediaFetchTesting
import PostgreSQLLedger
import Testing

/// Workers on separate network hosts: each in a network namespace of its own, joined to this host by a veth pair on
/// a bridge, reaching PostgreSQL and the catalog server over that network and not over a shared loopback.
@Suite("Workers on separate network hosts", .serialized)
struct NetworkHostsTests {
    /// A bridge with this host's address on it and `hosts` namespaces, each with a veth on the bridge; removed by
    /// ``remove()``.
    struct Network {
        let tag = String(UInt32.random(in: 0..<0xFFFFF), radix: 16)
        let subnet = Int.random(in: 20...250)
        let hosts: Int
        var bridge: String { "mfbr\(tag)" }
        var hostAddress: String { "10.213.\(subnet).1" }
        func namespace(_ index: Int) -> String { "mfns\(tag)-\(index)" }

        init(hosts: Int) throws {
            guard geteuid() == 0 else {
                throw MockServerError("network namespaces need root (CI runs the tests as root): run this test as root")
            }
            self.hosts = hosts
            try Self.ip(["link", "add", bridge, "type", "bridge"])
            try Self.ip(["addr", "add", "\(hostAddress)/24", "dev", bridge])
            try Self.ip(["link", "set", bridge, "up"])
            for index in 1...hosts {
                let namespace = namespace(index)
                let veth = "mfv\(tag)\(index)"
                try Self.ip(["netns", "add", namespace])
                try Self.ip(["link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", namespace])
                try Self.ip(["link", "set", veth, "master", bridge, "up"])
                try Self.ip(["-n", namespace, "addr", "add", "10.213.\(subnet).\(index + 1)/24", "dev", "eth0"])
                try Self.ip(["-n", namespace, "link", "set", "eth0", "up"])
                try Self.ip(["-n", namespace, "link", "set", "lo", "up"])
            }
        }

        func remove() {
            for index in 1...hosts { try? Self.ip(["netns", "del", namespace(index)]) }
            try? Self.ip(["link", "del", bridge])
        }

        static let ipProgram = RequiredProgram("ip", debianPackage: "iproute2", extraFolders: ["/usr/sbin", "/sbin"])

        static func ip(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = try ipProgram.locate()
            process.arguments = arguments
            process.standardInput = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw MockServerError("ip \(arguments.joined(separator: " ")) failed (\(process.terminationStatus))")
            }
        }
    }

    @Test func threeWorkersOnThreeHostsStoreEveryItemOnce() async throws {
        let network = try Network(hosts: 3)
        defer { network.remove() }
        try await PostgreSQLServer.with(
            listenAddress: network.hostAddress, trustedNetworks: ["10.213.\(network.subnet).0/24"]
        ) { database in
            let server = try MockCatalogServer(address: network.hostAddress)
            defer { server.stop() }
            server.setFaultHook { request in request.path.hasPrefix("/itunes-assets/") ? .delay(seconds: 0.05) : nil }
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("netns-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let config = folder.appendingPathComponent("hosts.yaml")
            try Data(
                """
                name: hosts
                ledger: \(database.uri)
                source:
                  use: itunes
                  term: night
                  max-items: 45
                  requests-per-minute: 0
                  endpoint: \(server.baseURL.absoluteString)
                transport: {use: curl, concurrency: 2}
                sink: {use: directory, path: shared}
                """.utf8
            ).write(to: config)
            #expect(database.uri.contains(network.hostAddress))
            let ip = try Network.ipProgram.locate().path
            let workers = try (1...3).map { index in
                try WorkerChild(
                    [ip, "netns", "exec", network.namespace(index), try WorkerChild.binary().path, "run", config.path,
                     "--quiet", "--worker", "host\(index)"],
                    in: folder, executable: URL(fileURLWithPath: "/usr/bin/env"))
            }
            for worker in workers {
                let outcome = try await worker.wait()
                #expect(outcome.status == 0, "\(outcome.stderr)\n\(outcome.stdout)")
            }
            let uri = database.uri
            let entries = try await PostgreSQLServer.offThePool { try PostgreSQLLedger(uri: uri, run: "hosts").entries() }
            #expect(entries.count == 45)
            #expect(entries.allSatisfy { $0.status == .stored })
            let stored = try FileManager.default.subpathsOfDirectory(atPath: folder.appendingPathComponent("shared").path)
                .filter { $0.hasSuffix(".m4a") }
            #expect(stored.count == 45)
            // Every worker joined over the network, and the work was shared.
            let workersSeen = try await PostgreSQLServer.offThePool {
                try PostgreSQLLedger(uri: uri, run: "hosts").workers()
            }
            #expect(Set(workersSeen.map(\.worker)) == ["host1", "host2", "host3"])
        }
    }
}
