import Foundation
import MediaFetchCore

/// A generated file behind a recorded preview or episode URL.
struct RecordedMedia: Sendable, Hashable {
    var size: Int64
    var contentType: String
}

extension MockCatalog {
    /// The file the server sends for a path under `/recorded/`, if a recorded record points there.
    func recordedFile(path: String) -> MockFile? {
        guard path.hasPrefix("/recorded/") else { return nil }
        if let media = recordedMedia[path] {
            let seed = MockRandom.fnv1a(Array(path.utf8))
            let prefix = media.contentType == "audio/x-m4a" ? Self.m4aHeader : []
            return MockFile(
                content: MockContent(size: media.size, seed: seed, prefix: prefix), contentType: media.contentType)
        }
        guard let size = Self.artworkSize(path: path), let key = Self.artworkKey(servedPath: path),
            recordedArtwork.contains(key)
        else { return nil }
        let content = MockContent(
            size: Int64(512 + min(size, 10_000) * 4), seed: MockRandom.fnv1a(Array(key.utf8)) ^ UInt64(size),
            prefix: Self.jpegHeader)
        return MockFile(content: content, contentType: path.hasSuffix(".png") ? "image/png" : "image/jpeg")
    }

    /// What the recorded records point at: previews and episodes by served path, artwork by size-free key.
    static func recordedFiles(_ answers: [MockRecordedAnswer]) -> ([String: RecordedMedia], Set<String>) {
        var media: [String: RecordedMedia] = [:]
        var artwork: Set<String> = []
        for record in answers.flatMap(\.records) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(record.utf8)) as? [String: Any] else {
                continue
            }
            for (key, value) in object where key.hasPrefix("artworkUrl") {
                if let text = value as? String, let url = URL(string: text),
                    let key = MockRecordedAnswer.servedPath(of: url).flatMap(artworkKey(servedPath:))
                {
                    artwork.insert(key)
                }
            }
            let preview = (object["previewUrl"] as? String).flatMap(URL.init(string:))
            let episode = (object["episodeUrl"] as? String).flatMap(URL.init(string:))
            let wholeEpisode =
                preview != nil && (preview == episode || object["wrapperType"] as? String == "podcastEpisode")
            let millis = (object["trackTimeMillis"] as? NSNumber)?.int64Value
            for url in [preview, episode].compactMap({ $0 }) {
                guard let path = MockRecordedAnswer.servedPath(of: url) else { continue }
                let whole = wholeEpisode || url == episode
                media[path] = RecordedMedia(
                    size: whole ? wholeEpisodeSize(millis: millis) : previewSize(path: path),
                    contentType: contentType(path: path))
            }
        }
        return (media, artwork)
    }

    /// 128 kbit/s for the episode's length (an hour when the record does not say): what a real one weighs.
    static func wholeEpisodeSize(millis: Int64?) -> Int64 {
        max(1, millis ?? 3_600_000) * 16
    }

    /// About what Apple's previews weigh: audio 0.3-1.2 MB, video 1-3 MB; fixed per path.
    static func previewSize(path: String) -> Int64 {
        let hash = MockRandom.mix(MockRandom.fnv1a(Array(path.utf8)))
        return contentType(path: path).hasPrefix("video/")
            ? 1_000_000 + Int64(hash % 2_000_001) : 300_000 + Int64(hash % 900_001)
    }

    static func contentType(path: String) -> String {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "m4a": "audio/x-m4a"
        case "mp3": "audio/mpeg"
        case "m4v": "video/x-m4v"
        case "mp4": "video/mp4"
        default: "application/octet-stream"
        }
    }

    /// A served artwork path with its size part made `0x0bb`: every size of one image shares it.
    static func artworkKey(servedPath path: String) -> String? {
        URL(string: "http://mock" + path).map { ArtworkURL.resized($0, to: 0).path }
    }

    /// N of a path whose last part is `<N>x<N>bb.<ext>`, 1 ≤ N ≤ 10000.
    static func artworkSize(path: String) -> Int? {
        guard let name = path.split(separator: "/").last, let dot = name.firstIndex(of: ".") else { return nil }
        let stem = name[..<dot]
        guard stem.hasSuffix("bb") else { return nil }
        let sides = stem.dropLast(2).split(separator: "x", omittingEmptySubsequences: false)
        guard sides.count == 2, sides[0] == sides[1], sides[0].allSatisfy(\.isASCII), let size = Int(sides[0]),
            (1...10_000).contains(size)
        else { return nil }
        return size
    }
}
