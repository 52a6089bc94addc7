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
        // What an item the decoder lets through points at must be fetchable, and nameable; it may have neither.
        for asset in AssetKind.allCases {
            guard let url = item.url(for: asset) else { continue }
            guard url.isFetchable else {
                fatalError("an item with \(IndefiniteArticle.before(asset.rawValue)) URL that is not http(s): \(url)")
            }
            _ = item.fileExtension(for: asset)
        }
        guard !item.isFullLength || item.previewURL != nil else { fatalError("a whole episode without a preview") }
    }
    return 0
}
