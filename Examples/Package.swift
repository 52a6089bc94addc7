// swift-tools-version: 6.0
import Foundation
import PackageDescription

// A package of someone else's that builds on MediaFetch: a sink of its own, and its own `mediafetch` with that
// sink beside the bundled plugins. It depends on the repository by path; a path dependency's identity is its
// folder's name, so the name is read from where this file is rather than written in (a checkout may be in a
// folder of any name). Depending on a release, it would be `.package(url: ..., from: "0.1.0")` and
// `package: "mediafetch"`.
let mediafetch = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
let identity = mediafetch.lastPathComponent

let package = Package(
    name: "MediaFetchExamples",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "my-mediafetch", targets: ["my-mediafetch"]),
        .library(name: "FlatSink", targets: ["FlatSink"]),
    ],
    dependencies: [.package(path: mediafetch.path)],
    targets: [
        .target(name: "FlatSink", dependencies: [.product(name: "MediaFetchCore", package: identity)]),
        .executableTarget(
            name: "my-mediafetch",
            dependencies: ["FlatSink", .product(name: "MediaFetchCLI", package: identity)]
        ),
        .testTarget(
            name: "FlatSinkTests",
            dependencies: [
                "FlatSink",
                .product(name: "MediaFetchCore", package: identity),
                .product(name: "MediaFetchCLI", package: identity),
                .product(name: "MediaFetchTesting", package: identity),
                .product(name: "ITunesSource", package: identity),
            ]
        ),
    ]
)
