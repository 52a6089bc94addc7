import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The temporary names an archive is written under, `<path>.partial-<pid>-<n>`, and the clean-up of those a
/// killed run left behind.
enum PartialFiles {
    static func name(of path: URL, number: Int) -> URL {
        path.deletingLastPathComponent().appendingPathComponent(
            path.lastPathComponent + ".partial-\(getpid())-\(number)"
        )
    }

    /// Deletes `<path>.partial-<pid>-<n>` files whose process is gone. Files of a live process (another run
    /// writing the same path, or this process) are left alone.
    static func removeStale(of path: URL) {
        let folder = path.deletingLastPathComponent()
        let prefix = path.lastPathComponent + ".partial-"
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return }
        for name in names where name.hasPrefix(prefix) {
            let rest = name.dropFirst(prefix.count).split(separator: "-")
            guard rest.count == 2, let pid = Int32(rest[0]), Int(rest[1]) != nil, pid > 0 else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH {
                _ = unlink(folder.appendingPathComponent(name).path)
            }
        }
    }
}
