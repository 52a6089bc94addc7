import CurlTransport
import Foundation
import MediaFetchCore
import MediaFetchTesting
import S3Sink
import Testing

extension SeaweedFSTests {
    /// The built `mediafetch` into a SeaweedFS bucket, credentials from the environment, as a user runs it: every
    /// preview an object once, a second run fetching nothing, a kill -9 in the middle of a multipart upload healed
    /// by the next run (or by `clean`), an unreachable store stopping the run before anything is fetched.
    struct S3RunTests {
        /// Everything a run needs: the mock catalog, a store, a folder with the config.
        struct Setup {
            let server: MockCatalogServer
            let store: SeaweedFS
            let folder: URL
            let bucket = SeaweedFS.bucketName()
            let client: S3Client
            let transport: CurlTransport

            init(store: SeaweedFS) throws {
                server = try MockCatalogServer()
                self.store = store
                folder = FileManager.default.temporaryDirectory.appendingPathComponent("s3run-\(UUID().uuidString)")
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                transport = try CurlTransport(.init(concurrency: 4))
                client = S3Client(configuration: try store.configuration(bucket: bucket), transport: transport)
            }

            func close() async {
                await transport.shutdown()
                server.stop()
                try? FileManager.default.removeItem(at: folder)
            }

            /// Writes `config.yaml` with this source and an s3 sink on the store; returns its path.
            func config(source: String, sink extra: String = "", endpoint: URL? = nil) throws -> String {
                let text = """
                    source:
                    \(source)
                    sink:
                      use: s3
                      endpoint: \((endpoint ?? store.endpoint).absoluteString)
                      bucket: \(bucket)
                      prefix: previews
                      create-bucket: true
                    \(extra)
                    download:
                      retry-max-wait: 1s
                    state: state
                    """
                let url = folder.appendingPathComponent("config.yaml")
                try Data(text.utf8).write(to: url)
                return url.path
            }

            /// The credentials, as a user's shell would hold them.
            var environment: [String: String] {
                ["AWS_ACCESS_KEY_ID": SeaweedFS.accessKey, "AWS_SECRET_ACCESS_KEY": SeaweedFS.secretKey]
            }

            func objects() async throws -> [S3Client.ListedObject] {
                try await client.objects(prefix: "previews/")
            }
        }

        @Test func everyPreviewIsAnObjectOnceAndASecondRunFetchesNothing() async throws {
            try await withSeaweedFS { store in
                let setup = try Setup(store: store)
                let config = try setup.config(
                    source: """
                          use: itunes
                          term: love
                          max-items: 12
                          requests-per-minute: 0
                          endpoint: \(setup.server.baseURL.absoluteString)
                        """)
                let first = try await Child.run(
                    ["run", config, "--quiet"], in: setup.folder, environment: setup.environment)
                #expect(first.status == 0, "\(first.stdout)\(first.stderr)")
                let songs = setup.server.catalog.search(term: "love").prefix(12)
                let served = Set(songs.map { SHA256.hex(of: setup.server.catalog.previewBytes(for: $0)) })
                let objects = try await setup.objects().filter { $0.key.hasSuffix(".m4a") }
                #expect(objects.count == songs.count, "\(objects.map(\.key))")
                var stored: [String] = []
                for object in objects {
                    let bytes = try #require(try await setup.client.get(object.key))
                    stored.append(SHA256.hex(of: bytes))
                    #expect(try await setup.client.head(object.key)?.sha256 == SHA256.hex(of: bytes))
                }
                #expect(
                    Set(stored) == served && stored.count == served.count, "the objects are not the catalog's previews")
                let manifest = try await setup.client.head("previews/manifest.json")
                #expect(manifest?.contentType == "application/json", "the manifest is not under the prefix")
                #expect(!first.stdout.contains(SeaweedFS.secretKey) && !first.stderr.contains(SeaweedFS.secretKey))

                setup.server.resetLog()
                let second = try await Child.run(["run", config], in: setup.folder, environment: setup.environment)
                #expect(second.status == 0, "\(second.stdout)\(second.stderr)")
                #expect(second.stdout.contains("\(songs.count) already stored"), "\(second.stdout)")
                let previews = setup.server.requests.filter { $0.path.hasSuffix(".m4a") }
                #expect(previews.isEmpty, "a second run downloaded \(previews.count) previews")
                #expect(try await setup.objects().filter { $0.key.hasSuffix(".m4a") }.count == songs.count)
                await setup.close()
            }
        }

        /// `check` shows where each secret came from, never the secret.
        @Test func checkRedactsTheSecrets() async throws {
            try await withSeaweedFS { store in
                let setup = try Setup(store: store)
                let config = try setup.config(
                    source: "  use: urls\n  file: urls.txt",
                    sink: "  access-key-id: ${MY_KEY}\n  secret-access-key: ${MY_SECRET}")
                try Data("http://127.0.0.1:1/x.m4a\n".utf8).write(to: setup.folder.appendingPathComponent("urls.txt"))
                let outcome = try await Child.run(
                    ["check", config], in: setup.folder,
                    environment: ["MY_KEY": "AKVISIBLE0NLY1NENV", "MY_SECRET": "do-not-print-this-secret"])
                #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
                #expect(outcome.stdout.contains("secret-access-key: \(OptionSpec.redacted)"), "\(outcome.stdout)")
                #expect(
                    !outcome.stdout.contains("do-not-print-this-secret")
                        && !outcome.stdout.contains("AKVISIBLE0NLY1NENV"))
                await setup.close()
            }
        }

        /// An endpoint nobody answers on: exit 2 at start-up, saying so, and nothing fetched.
        @Test func anUnreachableStoreStopsTheRunBeforeAnythingIsFetched() async throws {
            try await withSeaweedFS { store in
                let setup = try Setup(store: store)
                let config = try setup.config(
                    source: """
                          use: itunes
                          term: love
                          requests-per-minute: 0
                          endpoint: \(setup.server.baseURL.absoluteString)
                        """, endpoint: URL(string: "http://127.0.0.1:9"))
                let outcome = try await Child.run(["run", config], in: setup.folder, environment: setup.environment)
                #expect(outcome.status == 2, "\(outcome.stdout)\(outcome.stderr)")
                #expect(
                    outcome.stderr.contains("cannot reach the object store at http://127.0.0.1:9"), "\(outcome.stderr)")
                #expect(setup.server.requests.isEmpty, "the source ran although the sink cannot store")
                await setup.close()
            }
        }

        /// kill -9 while a multipart upload is open: the next run leaves the object once and no upload of its own
        /// open; `clean` aborts what a killed run left. Another writer's open uploads, under the prefix and beside
        /// it, are left alone by both.
        @Test func aRunKilledInAMultipartUploadIsHealedByTheNextRunOrByClean() async throws {
            try await withSeaweedFS { store in
                let setup = try Setup(store: store)
                let size: Int64 = 120 << 20
                setup.server.addFile(path: "/big/large.m4a", size: size, seed: 5, contentType: "audio/mp4")
                let list = setup.folder.appendingPathComponent("urls.txt")
                try Data((setup.server.url(path: "/big/large.m4a").absoluteString + "\n").utf8).write(to: list)
                let config = try setup.config(
                    source: "  use: urls\n  file: urls.txt",
                    sink: "  part-size: 5MiB\n  part-concurrency: 1\n  layout: \"{title}.{ext}\"")
                let server = setup.server
                let expected = try await onItsOwnThread { try Self.servedDigest(server, path: "/big/large.m4a") }
                let arguments = ["run", config, "--set", "download.max-size=none", "--quiet"]
                let theirs = ["elsewhere/backup.tar", "previews/someone-else.tar"]
                let ours = { () async throws -> [String] in
                    try await setup.client.openUploads(prefix: "").map(\.key).filter { !theirs.contains($0) }
                }
                let left = { () async throws -> [String] in
                    try await setup.client.openUploads(prefix: "").map(\.key).filter { theirs.contains($0) }.sorted()
                }

                for healer in ["run", "clean"] {
                    let child = try Child.start(arguments, in: setup.folder, environment: setup.environment)
                    let open = try await Self.waitForAnOpenUpload(setup, while: child, except: theirs)
                    try #require(open, "the run ended before an upload was open; nothing was killed")
                    kill(child.process.processIdentifier, SIGKILL)
                    _ = try await child.wait()
                    if try await left().isEmpty {
                        // Another writer's, once the bucket exists (the first run made it).
                        for key in theirs { _ = try await setup.client.createMultipartUpload(key, headers: [:]) }
                    }
                    #expect(try await !ours().isEmpty)
                    if healer == "clean" {
                        let clean = try await Child.run(
                            ["clean", config], in: setup.folder, environment: setup.environment)
                        #expect(clean.status == 0 && clean.stdout.contains("aborted the unfinished multipart upload"))
                        #expect(try await ours().isEmpty)
                        #expect(!clean.stdout.contains("someone-else") && !clean.stdout.contains("backup.tar"))
                    }
                    let rerun = try await Child.run(arguments, in: setup.folder, environment: setup.environment)
                    #expect(rerun.status == 0, "\(rerun.stdout)\(rerun.stderr)")
                    #expect(try await ours().isEmpty, "an upload stayed open")
                    #expect(try await left() == theirs, "another writer's upload was aborted")
                    let objects = try await setup.objects().filter { $0.key.hasSuffix(".m4a") }
                    #expect(objects.map(\.key) == ["previews/large.m4a"] && objects.first?.size == size)
                    #expect(try await setup.client.head("previews/large.m4a")?.sha256 == expected)
                    let back = setup.folder.appendingPathComponent("back.bin")
                    _ = try await setup.client.download("previews/large.m4a", to: back)
                    let backSHA = try await onItsOwnThread { try SHA256File.hex(back) }
                    #expect(backSHA == expected, "the object's bytes are not the served file's")
                    try await setup.client.delete("previews/large.m4a")
                    try FileManager.default.removeItem(at: setup.folder.appendingPathComponent("state"))
                }
                await setup.close()
            }
        }

        /// One 512 MiB file into the bucket as 8 parts of 64 MiB, measured on the child with /usr/bin/time: its
        /// peak resident memory stays under 64 MiB, and the object is the served file.
        @Test func aLargeUploadKeepsTheToolUnder64MiB() async throws {
            try await withSeaweedFS { store in
                let setup = try Setup(store: store)
                let size: Int64 = 512 << 20
                setup.server.addFile(path: "/big/large.m4a", size: size, seed: 11, contentType: "audio/mp4")
                try Data((setup.server.url(path: "/big/large.m4a").absoluteString + "\n").utf8)
                    .write(to: setup.folder.appendingPathComponent("urls.txt"))
                let config = try setup.config(
                    source: "  use: urls\n  file: urls.txt", sink: "  layout: \"{title}.{ext}\"")
                let timing = setup.folder.appendingPathComponent("time.txt")
                let outcome = try await Child.run(
                    [
                        "-f", "%M", "-o", timing.path, try Child.binary().path, "run", config, "--quiet", "--set",
                        "download.max-size=none",
                    ], in: setup.folder, environment: setup.environment, executable: try RequiredProgram.time.locate())
                #expect(outcome.status == 0, "\(outcome.stdout)\(outcome.stderr)")
                let text = String(decoding: try Data(contentsOf: timing), as: UTF8.self)
                let peak = try #require(Int(text.trimmingCharacters(in: .whitespacesAndNewlines)))
                #expect(peak < 64 * 1024, "peak RSS \(peak / 1024) MiB while 512 MiB went up")
                let server = setup.server
                let expected = try await onItsOwnThread { try Self.servedDigest(server, path: "/big/large.m4a") }
                #expect(try await setup.client.head("previews/large.m4a")?.sha256 == expected)
                #expect(try await setup.client.openUploads(prefix: "previews/").isEmpty)
                await setup.close()
            }
        }

        /// The SHA-256 of a file the mock serves, read in pieces.
        static func servedDigest(_ server: MockCatalogServer, path: String) throws -> String {
            let size = try #require(server.contentSize(path: path))
            var hasher = SHA256()
            var offset: Int64 = 0
            while offset < size {
                let end = min(size, offset + (8 << 20))
                let bytes = try #require(server.contentBytes(path: path, range: offset..<end))
                bytes.withUnsafeBytes { hasher.update($0) }
                offset = end
            }
            return hasher.finalize()
        }

        /// Polls the store until the child's multipart upload is open (true), or the child ends first (false).
        static func waitForAnOpenUpload(
            _ setup: Setup, while child: ChildProcess, except others: [String] = []
        ) async throws -> Bool {
            let deadline = ContinuousClock.now + .seconds(120)
            while child.process.isRunning && ContinuousClock.now < deadline {
                // The bucket appears once the child has prepared it.
                if let open = try? await setup.client.openUploads(prefix: "previews/"),
                    open.contains(where: { !others.contains($0.key) })
                {
                    return true
                }
                try await Task.sleep(for: .milliseconds(20))
            }
            return false
        }
    }
}

/// The built `mediafetch` as a child process, its output in files.
/// The s3 run tests' children: `mediafetch` (or another program) without the AWS variables of the environment the
/// tests run in, so that only the test's own credentials reach the store.
enum Child {
    static let awsVariables: Set<String> = ["AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]

    static func start(
        _ arguments: [String], in directory: URL, environment: [String: String]
    ) throws -> ChildProcess {
        try ChildProcess(arguments, in: directory, environment: environment, removing: awsVariables)
    }

    static func run(
        _ arguments: [String], in directory: URL, environment: [String: String], executable: URL? = nil
    ) async throws -> ChildProcess.Outcome {
        try await ChildProcess.run(
            arguments, in: directory, environment: environment, removing: awsVariables, executable: executable)
    }

    static func binary() throws -> URL { try ChildProcess.binary() }
}
