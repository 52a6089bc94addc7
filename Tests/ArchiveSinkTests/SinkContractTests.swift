import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

@testable import ArchiveSink

#if canImport(Glibc)
    import Glibc
#endif

/// The tar sink keeps the public ``SinkContract``, with an inspector that reads the archive back through
/// libarchive: a corrupt archive is an error, an absent one an empty collection.
struct ArchiveSinkContractTests {
    static let name = "collection.tar"

    static let inspector = SinkContract.Inspector { root in
        let descriptor = open(root.appendingPathComponent(name).path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [:] }
        defer { close(descriptor) }
        let reader = try ArchiveReader(descriptor: descriptor)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 16, alignment: 16)
        defer { buffer.deallocate() }
        var files: [String: Data] = [:]
        while let entry = try reader.next() {
            var data = Data()
            try reader.readData(into: buffer) { data.append(contentsOf: $0) }
            files[entry.name] = data
        }
        return files
    }

    @Test(arguments: [(ArchiveFormat.pax, ArchiveCompression.none), (.pax, .zstd), (.zip, .none)])
    func theTarSinkKeepsTheContract(format: ArchiveFormat, compression: ArchiveCompression) async throws {
        try await SinkContract.run(inspector: Self.inspector) { root in
            ArchiveSink(
                configuration: ArchiveSinkConfiguration(
                    path: root.appendingPathComponent(Self.name), format: format, compression: compression,
                    layout: try LayoutTemplate(LayoutTemplate.defaultLayout)))
        }
    }
}
