import Foundation
import MediaFetchCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Stores files as objects in an S3 bucket (AWS, or any S3-compatible store), named by the same
/// ``LayoutTemplate`` and ``NameReserver`` as the directory sink, under a prefix: `prefix/Artist/Album/01 Title.m4a`.
///
/// * Whole or absent: a file up to `part-size` (or the transport's ``Transport/maxUploadBodyBytes``, when smaller)
///   is one PUT; a larger one a multipart upload of parts no larger, whose object appears only when the upload is
///   completed. A failed upload is aborted.
/// * Never silently overwritten: every write asks `If-None-Match: *` (a store that honours it answers 412 when the
///   key is taken), and a multipart upload checks the key first. A key that holds the same bytes (size and the
///   SHA-256 in its metadata) counts as stored, so that a run interrupted between the upload and the ledger
///   stores nothing twice; a key holding anything else fails the item, saying so.
/// * ``keep(_:stored:)`` asks the store (HEAD) for the object's size and SHA-256: a re-run fetches nothing it has.
/// * ``prepare()`` lists the bucket (the endpoint answers, the credentials and the bucket are good), creates the
///   bucket when asked, and aborts the multipart uploads an interrupted run left open: those its ``UploadJournal``
///   (in the state folder) says were started and did not end, by their ids. Another writer's open uploads, in the
///   prefix, beside it, or at one of the sink's own keys, are left alone.
/// * Each object carries `Content-Type` from its extension and `x-amz-meta-` artist, title, album, source-url
///   and sha256; the manifest and the playlist are objects under the prefix, written at ``finish()``.
///
/// Every request goes through the run's transport; multipart parts are ranges of the staged file.
public final class S3Sink: Sink {
    /// The ``UploadJournal``'s file in the state folder.
    public static let journalName = "s3-uploads.jsonl"

    /// Like the tar sink: a manifest and a playlist under the prefix.
    public static let collectionDefaults = CollectionOptions(writesManifest: true, writesPlaylist: true)

    public let configuration: S3Configuration
    public let client: S3Client
    private let collector: CollectionCollector
    /// Plan-order names; in the run's ledger under a pipeline.
    private let names: PathReserver

    public var pathReserver: PathReserver? { names }
    private let preparation = Preparation()
    /// Where the multipart uploads this sink starts are recorded; nil: none are, and none are aborted later.
    public let journal: UploadJournal?

    /// - Parameters:
    ///   - transport: the run's transport; every request goes through it.
    ///   - policy: the download section's retries and backoff, used for the store's requests too.
    ///   - clock: the signing time (tests skew it).
    ///   - journal: where the multipart uploads it starts are recorded (the factory's is in the state folder), so
    ///     that ``prepare()`` and ``discardUnfinished()`` abort what a killed run left open; without one they abort
    ///     nothing.
    public init(
        configuration: S3Configuration, transport: any Transport, policy: DownloadPolicy = DownloadPolicy(),
        clock: @escaping @Sendable () -> Date = { Date() }, journal: UploadJournal? = nil
    ) {
        self.configuration = configuration
        self.journal = journal
        client = S3Client(configuration: configuration, transport: transport, policy: policy, clock: clock)
        collector = CollectionCollector(options: configuration.collection)
        names = PathReserver.reservingCollectionFiles()
    }

    public var assets: [AssetKind] { configuration.collection.assets }

    /// Every object's metadata carries its SHA-256, and ``keep(_:stored:)`` compares it.
    public var needsDigests: Bool { true }

    /// Files of up to 4 MiB (or a part, when parts are smaller) come in memory: uploaded from there, they never
    /// touch the disk. Staging them as files (creating, writing, reading and deleting each) was about two thirds
    /// of mediafetch's CPU in the 2,000-file benchmark.
    public var inMemoryStagingLimit: Int64 { min(4 << 20, partSize) }

    public func url(for asset: AssetKind, of item: MediaItem) -> URL? {
        configuration.collection.url(for: asset, of: item)
    }

    /// The whole key of a planned path.
    public func key(for relativePath: String) -> String { configuration.prefix + relativePath }

    /// The longest key S3 takes, in bytes of UTF-8.
    public static let maximumKeyBytes = 1024

    public func plan(_ item: MediaItem, asset: AssetKind) async throws -> StoragePlan {
        let wanted = configuration.layout.render(item, asset: asset)
        let path = try names.reserve(wanted).joined(separator: "/")
        let length = key(for: path).utf8.count
        guard length <= Self.maximumKeyBytes else {
            // Said before anything is fetched for the item, not by the store after its upload.
            throw SinkError(
                "\(item.ref): its key would be \(length) bytes, and S3 takes at most \(Self.maximumKeyBytes): "
                    + "shorten the sink's prefix or layout")
        }
        let plan = StoragePlan(item: item.ref, asset: asset, relativePath: path)
        collector.planned(item, as: plan, from: url(for: asset, of: item))
        return plan
    }

    public func prepare() async throws {
        try await preparation.run { [client, configuration] in
            do {
                try await client.checkBucket()
            } catch let error as S3Error where error.storeCode == "NoSuchBucket" && configuration.createBucket {
                try await client.createBucket()
                try await client.checkBucket()
            }
            _ = try await self.abortUnfinished()
        }
    }

    public func discardUnfinished() async throws -> [String] {
        try await abortUnfinished().map { "aborted the unfinished multipart upload of \(client.location($0))" }
    }

    /// Aborts the open uploads the journal says were started and did not end, then forgets them.
    /// - Returns: the keys of the uploads aborted.
    private func abortUnfinished() async throws -> [String] {
        guard let journal else { return [] }
        var aborted: [String] = []
        for unfinished in journal.unfinished() {
            // The listing is by prefix: only uploads at the key itself, and of those only the journal's own.
            let key = unfinished.key
            for upload in try await client.openUploads(prefix: key) where upload.key == key && unfinished.owns(upload) {
                try await client.abortMultipartUpload(upload.key, uploadID: upload.uploadID)
                aborted.append(key)
            }
        }
        try journal.clear()
        return aborted
    }

    /// Uploads `file` to its key, then deletes the staged file (it is the sink's once given).
    /// - Returns: `s3://bucket/key`.
    /// - Throws: ``SinkError`` naming the item and key; nothing is then stored under the key.
    public func store(_ file: StagedFile, as plan: StoragePlan) async throws -> String {
        let key = key(for: plan.relativePath)
        let location = client.location(key)
        var stored = file
        do {
            try await prepare()
            let sha256 =
                try file.sha256 ?? file.contents.map { SHA256.hex(of: $0) }
                ?? Self.digest(of: file.url, offset: 0, length: file.size)
            stored.sha256 = sha256
            stored.contents = nil
            let headers = objectHeaders(for: plan, sha256: sha256, source: file.sourceURL)
            if let contents = file.contents {
                // Kept in memory by the pipeline (at most `inMemoryStagingLimit`, within a part): one PUT from it.
                let outcome = try await client.put(
                    key, body: .bytes(contents), payloadHash: sha256, headers: headers, exclusive: true)
                if outcome == .keyTaken { try await checkSame(key, size: file.size, sha256: sha256) }
            } else if file.size <= partSize {
                let outcome = try await client.put(
                    key, body: .file(file.url, offset: 0, length: file.size), payloadHash: sha256, headers: headers,
                    exclusive: true)
                if outcome == .keyTaken { try await checkSame(key, size: file.size, sha256: sha256) }
            } else if try await !holdsSame(key, size: file.size, sha256: sha256) {
                try await multipartUpload(file, key: key, sha256: sha256, headers: headers)
            }
        } catch is CancellationError {
            throw CancellationError()
        } catch {
            throw SinkError("cannot store \(plan.item) as \(location): \(error)", cause: error)
        }
        if file.contents == nil { _ = unlink(file.path) }
        collector.stored(plan, file: stored)
        return location
    }

    /// The object an earlier run stored is kept when the store still has it under this plan's key with the
    /// recorded size (and SHA-256, when recorded).
    public func keep(_ plan: StoragePlan, stored record: StoredRecord) async throws -> Bool {
        let key = key(for: plan.relativePath)
        guard record.location == client.location(key) else { return false }
        try await prepare()
        guard let info = try await client.head(key), info.size == record.size,
            record.sha256 == nil || info.sha256 == record.sha256
        else { return false }
        collector.kept(plan, record: record)
        return true
    }

    /// Writes the manifest and the playlist under the prefix (replacing the previous run's). They go up even
    /// when the run was interrupted: they are small, and describe what is stored.
    public func finish() async throws {
        let files = try collector.files()
        guard !files.isEmpty else { return }
        let uploads = Task.detached { [client, configuration] in
            for (name, data) in files {
                var headers: HTTPHeaders = [
                    "Content-Type": Self.contentType(forExtension: (name as NSString).pathExtension)
                ]
                if let storageClass = configuration.storageClass { headers.set("x-amz-storage-class", storageClass) }
                _ = try await client.put(
                    configuration.prefix + name, body: .bytes(data), payloadHash: SHA256.hex(of: data),
                    headers: headers, exclusive: false)
            }
        }
        do {
            try await uploads.value
        } catch {
            throw SinkError("cannot write the collection's manifest and playlist: \(error)", cause: error)
        }
    }

    // MARK: Uploads

    /// `part-size`, or the transport's largest upload body when that is smaller (the foundation transport's).
    private var partSize: Int64 { min(configuration.partSize, client.maxUploadBodyBytes ?? .max) }

    /// Parts of `partSize` from the staged file, `partConcurrency` at a time, each signed with its own SHA-256;
    /// completed in order, or aborted when anything fails.
    private func multipartUpload(_ file: StagedFile, key: String, sha256: String, headers: HTTPHeaders) async throws {
        let partSize = max(
            self.partSize, (file.size + S3Configuration.maximumParts - 1) / S3Configuration.maximumParts)
        if let limit = client.maxUploadBodyBytes, partSize > limit || limit < S3Configuration.minimumPartSize {
            throw TransportError(
                .unsupported, url: configuration.endpoint,
                detail: "\(file.size) bytes need parts of \(max(partSize, S3Configuration.minimumPartSize)) "
                    + "bytes (S3 allows \(S3Configuration.maximumParts) parts of at least "
                    + "\(S3Configuration.minimumPartSize)), above the \(limit) bytes the transport uploads at "
                    + "most: use the curl transport")
        }
        // On record before the upload exists: a kill at any moment after leaves it for the next run to find.
        try journal?.starting(key)
        let uploadID: String
        do {
            uploadID = try await client.createMultipartUpload(key, headers: headers)
        } catch {
            journal?.ended(key, uploadID: nil)
            throw error
        }
        journal?.created(key, uploadID: uploadID)
        do {
            let count = Int((file.size + partSize - 1) / partSize)
            var etags = [String](repeating: "", count: count)
            try await withThrowingTaskGroup(of: (Int, String).self) { group in
                var next = 0
                func start() {
                    let index = next
                    next += 1
                    let offset = Int64(index) * partSize
                    let length = min(partSize, file.size - offset)
                    group.addTask { [client] in
                        let hash = try Self.digest(of: file.url, offset: offset, length: length)
                        let etag = try await client.uploadPart(
                            key, uploadID: uploadID, number: index + 1, file: file.url, offset: offset, length: length,
                            payloadHash: hash)
                        return (index, etag)
                    }
                }
                while next < min(count, configuration.partConcurrency) { start() }
                while let (index, etag) = try await group.next() {
                    etags[index] = etag
                    if next < count { start() }
                }
            }
            let outcome = try await client.completeMultipartUpload(
                key, uploadID: uploadID, etags: etags, exclusive: true)
            if outcome == .keyTaken {
                if (try? await client.abortMultipartUpload(key, uploadID: uploadID)) != nil {
                    journal?.ended(key, uploadID: uploadID)
                }
                try await checkSame(key, size: file.size, sha256: sha256)
            } else {
                journal?.ended(key, uploadID: uploadID)
            }
        } catch {
            // Aborted even when the run is being cancelled: an open upload's parts cost storage until then. An abort
            // that fails leaves the key unfinished in the journal, for the next run to try again.
            let aborted = await Task.detached { [client] in
                (try? await client.abortMultipartUpload(key, uploadID: uploadID)) != nil
            }.value
            if aborted { journal?.ended(key, uploadID: uploadID) }
            throw error
        }
    }

    /// Whether the key holds exactly these bytes already (an earlier run stored them, and the ledger missed it).
    /// - Throws: ``S3Error/exists(_:)`` when it holds something else.
    private func holdsSame(_ key: String, size: Int64, sha256: String) async throws -> Bool {
        guard let info = try await client.head(key) else { return false }
        guard info.size == size, info.sha256 == sha256 else { throw S3Error.exists(client.location(key)) }
        return true
    }

    private func checkSame(_ key: String, size: Int64, sha256: String) async throws {
        guard try await holdsSame(key, size: size, sha256: sha256) else {
            // 412, then gone: another writer's object came and went; say what the store said.
            throw S3Error.exists(client.location(key))
        }
    }

    /// The SHA-256 of a range of a file, read in pieces.
    static func digest(of file: URL, offset: Int64, length: Int64) throws -> String {
        let descriptor = open(file.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw SinkError("cannot read \(file.path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var hasher = SHA256()
        var done: Int64 = 0
        while done < length {
            let count = pread(
                descriptor, buffer.baseAddress, Int(min(Int64(buffer.count), length - done)), off_t(offset + done))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw SinkError("cannot read \(file.path): it ended early") }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            done += Int64(count)
        }
        return hasher.finalize()
    }

    // MARK: Metadata

    /// Content type, storage class, and the `x-amz-meta-` fields of an object.
    func objectHeaders(for plan: StoragePlan, sha256: String, source: URL) -> HTTPHeaders {
        var headers: HTTPHeaders = [
            "Content-Type": Self.contentType(forExtension: (plan.relativePath as NSString).pathExtension)
        ]
        if let storageClass = configuration.storageClass { headers.set("x-amz-storage-class", storageClass) }
        let item = collector.item(for: plan)
        let fields: [(String, String?)] = [
            ("artist", item?.artist ?? plan.item.artist), ("title", item?.title ?? plan.item.title),
            ("album", item?.album), ("source-url", source.absoluteString), ("sha256", sha256),
        ]
        for case (let name, let value?) in fields where !value.isEmpty {
            headers.set("x-amz-meta-" + name, Self.headerValue(value))
        }
        return headers
    }

    /// A metadata value as a header may carry it: printable ASCII as is, anything else RFC 2047 encoded
    /// (`=?UTF-8?B?...?=`), as S3's documentation advises; cut to 512 bytes of UTF-8 first (S3 allows 2 KB of
    /// metadata in all).
    static func headerValue(_ text: String) -> String {
        var cut = ""
        for character in text {
            if cut.utf8.count + character.utf8.count > 512 { break }
            cut.append(character)
        }
        let plain = cut.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F }
        if plain { return SigV4Signer.canonicalValue(cut) }
        return "=?UTF-8?B?" + Data(cut.utf8).base64EncodedString() + "?="
    }

    /// The type an object is served as, from its extension.
    static func contentType(forExtension ext: String) -> String {
        switch ext.lowercased() {
        case "m4a", "mp4a": "audio/mp4"
        case "aac": "audio/aac"
        case "mp3": "audio/mpeg"
        case "m4v": "video/x-m4v"
        case "mp4": "video/mp4"
        case "mov": "video/quicktime"
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "json": "application/json"
        case "m3u8": "application/vnd.apple.mpegurl"
        default: "application/octet-stream"
        }
    }
}

/// Runs the sink's preparation once, however many stores ask for it at once; a failure is kept and thrown again.
private actor Preparation {
    private var outcome: Result<Void, any Error>?
    private var running: Task<Void, any Error>?

    func run(_ work: @escaping @Sendable () async throws -> Void) async throws {
        if let outcome { return try outcome.get() }
        let task = running ?? Task { try await work() }
        running = task
        do {
            try await task.value
            outcome = .success(())
        } catch {
            if !(error is CancellationError) { outcome = .failure(error) }
            running = nil
            throw error
        }
    }
}
