// libFuzzer entry for the iTunes answer decoder: any body, never a crash, and every item it makes is usable.
// Built by Fuzz/run.sh, which links it against the instrumented MediaFetchCore and ITunesSource.
import Foundation
import ITunesSource
import MediaFetchCore

private let url = URL(fileURLWithPath: "/fuzz")

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSearchDecoder(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let response = HTTPResponse(status: 200, headers: [:], url: url, body: Data(bytes: data, count: size))
    guard let outputs = try? ITunesSource.decode(response) else { return 0 }
    for case .item(let item) in outputs {
        // An item the decoder lets through must be fetchable and nameable.
        guard item.previewURL?.isFetchable == true else { fatalError("an item without an http(s) preview URL") }
        _ = item.fileExtension(for: .preview)
    }
    return 0
}
