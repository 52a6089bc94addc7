// swift-tools-version: 6.0
import PackageDescription

/// The same strictness for every target: Swift 6 language mode comes with tools 6.0.
let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny")
]

/// A plugin is a library target under `Plugins/<Name>` that imports the core and no other plugin.
/// - Parameter exclude: files in its folder that are not sources (documents).
func plugin(_ name: String, dependencies: [Target.Dependency] = [], exclude: [String] = []) -> Target {
    .target(
        name: name,
        dependencies: ["MediaFetchCore"] + dependencies,
        path: "Plugins/\(name)",
        exclude: exclude,
        swiftSettings: strict
    )
}

/// The plugin targets under `Plugins/`, each also a library product.
let bundledPlugins = [
    "ITunesSource", "URLListSource", "PodcastSource", "FoundationTransport", "CurlTransport", "DirectorySink",
    "ArchiveSink", "ExecPlugins", "S3Sink", "PostgreSQLLedger",
]

let package = Package(
    name: "MediaFetch",
    platforms: [.macOS(.v15)],
    // Every module a user may want is a product named after its target: the core, each plugin, the command line
    // as a library (your own `mediafetch` with plugins of yours), and the testing kit with the contract suites.
    products: [
        .executable(name: "mediafetch", targets: ["mediafetch"]),
        .library(name: "MediaFetchCore", targets: ["MediaFetchCore"]),
        .library(name: "MediaFetchCLI", targets: ["MediaFetchCLI"]),
        .library(name: "MediaFetchTesting", targets: ["MediaFetchTesting"]),
        .library(name: "MediaFetchServe", targets: ["MediaFetchServe"]),
    ] + bundledPlugins.map { .library(name: $0, targets: [$0]) },
    targets: [
        .systemLibrary(
            name: "CYAML",
            path: "Sources/CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            path: "Sources/CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        .systemLibrary(
            name: "CCrypto",
            path: "Sources/CCrypto",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]
        ),
        .systemLibrary(
            name: "CSQLite",
            path: "Sources/CSQLite",
            pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]
        ),
        .systemLibrary(
            name: "CArchive",
            path: "Sources/CArchive",
            pkgConfig: "libarchive",
            providers: [.apt(["libarchive-dev"])]
        ),
        // libpq, PostgreSQL's client library: the ledger that several workers of one run share.
        .systemLibrary(
            name: "CLibPQ",
            path: "Sources/CLibPQ",
            pkgConfig: "libpq",
            providers: [.apt(["libpq-dev"])]
        ),
        // libxml2, the podcast source's XML parser (streaming, entities never substituted).
        .systemLibrary(
            name: "CLibXML2",
            path: "Sources/CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // libmicrohttpd, the HTTP server of `mediafetch serve` (one thread per connection; chunked streams for SSE).
        .systemLibrary(
            name: "CMicroHTTPD",
            path: "Sources/CMicroHTTPD",
            pkgConfig: "libmicrohttpd",
            providers: [.apt(["libmicrohttpd-dev"])]
        ),
        .target(name: "MediaFetchCore", dependencies: ["CYAML", "CCrypto", "CSQLite", "CLinux"], swiftSettings: strict),
        plugin("ITunesSource"),
        plugin("URLListSource"),
        plugin("PodcastSource", dependencies: ["CLibXML2"]),
        plugin("FoundationTransport"),
        plugin("CurlTransport", dependencies: ["CCurl"]),
        plugin("DirectorySink", dependencies: ["CLinux"]),
        plugin("ArchiveSink", dependencies: ["CArchive", "CLinux"]),
        plugin("ExecPlugins", exclude: ["PROTOCOL.md"]),
        plugin("S3Sink", dependencies: ["CCrypto"]),
        plugin("PostgreSQLLedger", dependencies: ["CLibPQ"]),
        .target(name: "MediaFetchTesting", dependencies: ["MediaFetchCore"], swiftSettings: strict),
        .target(
            name: "MediaFetchServe",
            dependencies: ["MediaFetchCore", "CMicroHTTPD", "ITunesSource"],
            swiftSettings: strict
        ),
        .target(
            name: "MediaFetchCLI",
            dependencies: [
                "MediaFetchCore", "MediaFetchTesting", "CLinux",
                "ITunesSource", "URLListSource", "PodcastSource", "FoundationTransport", "CurlTransport",
                "DirectorySink", "ArchiveSink", "ExecPlugins", "S3Sink", "MediaFetchServe", "PostgreSQLLedger",
            ],
            swiftSettings: strict
        ),
        // What the Glibc module leaves out: malloc.h (mallopt, in the tool's entry point), sync_file_range and the
        // CPU affinity calls (`run --cores`).
        .systemLibrary(name: "CLinux", path: "Sources/CLinux"),
        .executableTarget(name: "mediafetch", dependencies: ["MediaFetchCLI", "CLinux"], swiftSettings: strict),
        .testTarget(
            name: "MediaFetchCoreTests",
            dependencies: ["MediaFetchCore", "MediaFetchTesting"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ITunesSourceTests",
            dependencies: ["ITunesSource", "MediaFetchCore", "MediaFetchTesting", "FoundationTransport"],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "URLListSourceTests",
            dependencies: ["URLListSource", "MediaFetchCore", "MediaFetchTesting", "FoundationTransport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PodcastSourceTests",
            dependencies: [
                "PodcastSource", "MediaFetchCore", "MediaFetchTesting", "CurlTransport", "FoundationTransport",
                "DirectorySink", "MediaFetchCLI",
            ],
            exclude: ["Fixtures/README.md"],
            resources: [.copy("Fixtures/feeds")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "TransportContractTests",
            dependencies: ["FoundationTransport", "CurlTransport", "MediaFetchCore", "MediaFetchTesting"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "CurlTransportTests",
            dependencies: ["CurlTransport", "FoundationTransport", "MediaFetchCore", "MediaFetchTesting"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "DirectorySinkTests",
            dependencies: ["DirectorySink", "MediaFetchCore", "MediaFetchTesting"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ArchiveSinkTests",
            dependencies: ["ArchiveSink", "MediaFetchCore", "MediaFetchTesting"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ExecPluginsTests",
            dependencies: ["ExecPlugins", "MediaFetchCLI", "mediafetch", "MediaFetchCore", "MediaFetchTesting"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "S3SinkTests",
            dependencies: [
                "S3Sink", "CurlTransport", "FoundationTransport", "MediaFetchCLI", "mediafetch", "MediaFetchCore",
                "MediaFetchTesting",
            ],
            resources: [.copy("Fixtures")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "PostgreSQLLedgerTests",
            dependencies: [
                "PostgreSQLLedger", "MediaFetchCLI", "mediafetch", "MediaFetchCore", "MediaFetchTesting",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MediaFetchTestingTests",
            dependencies: ["MediaFetchTesting", "MediaFetchCore"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "ResumeTests",
            dependencies: [
                "MediaFetchCore", "MediaFetchTesting", "ITunesSource", "FoundationTransport", "DirectorySink",
                "ArchiveSink",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "FaultMatrixTests",
            dependencies: [
                "MediaFetchCore", "MediaFetchTesting", "ITunesSource", "FoundationTransport", "CurlTransport",
                "DirectorySink", "ArchiveSink", "S3Sink",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MediaFetchServeTests",
            dependencies: ["MediaFetchServe", "MediaFetchCLI", "mediafetch", "MediaFetchCore", "MediaFetchTesting"],
            exclude: ["browser"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "MediaFetchCLITests",
            dependencies: ["MediaFetchCLI", "mediafetch", "MediaFetchCore", "MediaFetchTesting"],
            swiftSettings: strict
        ),
    ]
)
