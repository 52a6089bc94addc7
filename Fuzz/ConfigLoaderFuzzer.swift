// libFuzzer entry for the config loader: any bytes, any overrides, never a crash.
// Built by Fuzz/run.sh, which links it against the instrumented MediaFetchCore.
import Foundation
import MediaFetchCore

private let registry = FuzzRegistry.make()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzConfigLoader(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // The first line, when it looks like one, is also tried as a --set override.
    let text = String(decoding: bytes, as: UTF8.self)
    let firstLine = text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? ""
    let overrides = firstLine.contains("=") ? [firstLine] : []
    _ = try? ConfigLoader.load(
        text: text, path: "fuzz.yaml", baseDirectory: URL(fileURLWithPath: "/tmp"), overrides: overrides,
        environment: ["HOME": "/tmp", "SET": "value"], registry: registry)
    return 0
}
