import Foundation
import MediaFetchTesting
import Testing

@testable import DirectorySink

#if canImport(Glibc)
    import Glibc
#endif

/// ``DirectorySink/syncfsCommitsNames(_:)`` on real filesystems: whether a `syncfs` also puts on disk the names made
/// before it decides whether the group flush `fsync`s folders. An ext4 made with a journal and one made without,
/// each in an image mounted on a loop device (which takes root: CI runs the tests as root), and tmpfs.
@Suite("A syncfs that writes names", .serialized)
struct SyncfsNamesTests {
    static let mkfs = RequiredProgram("mkfs.ext4", debianPackage: "e2fsprogs", extraFolders: ["/usr/sbin", "/sbin"])
    static let mount = RequiredProgram("mount", debianPackage: "mount", extraFolders: ["/usr/bin", "/bin"])
    static let umount = RequiredProgram("umount", debianPackage: "mount", extraFolders: ["/usr/bin", "/bin"])

    /// Runs `program` and throws, with what it wrote, unless it succeeds.
    static func run(_ program: RequiredProgram, _ arguments: [String], in folder: URL) async throws {
        let outcome = try await ChildProcess.run(arguments, in: folder, executable: try program.locate())
        guard outcome.status == 0 else {
            throw MockServerError("\(program) \(arguments.joined(separator: " ")) failed: \(outcome.stderr)")
        }
    }

    /// Whether a `syncfs` writes names on an ext4 made by `mkfs.ext4` with `options`, mounted on a loop device.
    static func answer(onExt4MadeWith options: [String]) async throws -> Bool {
        guard geteuid() == 0 else {
            throw MockServerError(
                "mounting a loop device needs root (CI runs the tests as root): run this test as root")
        }
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("syncfs-names-\(UUID().uuidString)")
        let mountPoint = folder.appendingPathComponent("mounted")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let image = folder.appendingPathComponent("ext4.img")
        try #require(FileManager.default.createFile(atPath: image.path, contents: nil))
        try #require(truncate(image.path, 64 << 20) == 0)
        try await run(mkfs, ["-q", "-F"] + options + [image.path], in: folder)
        try await run(mount, ["-o", "loop", image.path, mountPoint.path], in: folder)
        let descriptor = open(mountPoint.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let answer = descriptor >= 0 ? DirectorySink.syncfsCommitsNames(descriptor) : nil
        if descriptor >= 0 { close(descriptor) }
        try await run(umount, [mountPoint.path], in: folder)
        guard let answer else { throw MockServerError("cannot open the filesystem mounted at \(mountPoint.path)") }
        return answer
    }

    /// With a journal (`mkfs.ext4`'s default), a `syncfs` commits it, and the names with it.
    @Test func anExt4WithAJournalWritesNamesWithItsSyncfs() async throws {
        #expect(try await Self.answer(onExt4MadeWith: []))
    }

    /// Without one (as on this project's build machine), a `syncfs` empties the disk's cache before the folders'
    /// blocks are written: each folder keeps its `fsync`.
    @Test func anExt4WithoutAJournalDoesNot() async throws {
        #expect(try await Self.answer(onExt4MadeWith: ["-O", "^has_journal"]) == false)
    }

    /// tmpfs writes nothing anywhere; it is not among the filesystems whose `syncfs` is trusted with names.
    @Test func tmpfsDoesNot() throws {
        let descriptor = open("/dev/shm", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(descriptor >= 0, "needs /dev/shm")
        defer { close(descriptor) }
        #expect(DirectorySink.syncfsCommitsNames(descriptor) == false)
    }
}
