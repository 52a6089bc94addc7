import Foundation

/// An outside program a test runs (nginx, GNU tar, bsdtar, zstd, xz, openssl, `/usr/bin/time`, curl, python3, and
/// SeaweedFS's `weed` from PyPI), and the Debian or PyPI package that brings it.
///
/// A test asks for the program with ``locate()`` before it uses it, so that where the program is missing the
/// test fails with one line that names it and the command that installs it, instead of `exited with 127`
/// from a child process. A missing program is never a skip: a skipped test would count as passed.
///
/// ```swift
/// let tar = try RequiredProgram.gnuTar.locate()
/// ```
public struct RequiredProgram: Sendable, Hashable, CustomStringConvertible {
    /// The program's file name, looked up on `PATH`.
    public var name: String
    /// The Debian package that installs it; nil for one from PyPI.
    public var debianPackage: String?
    /// The PyPI package that installs it (into `.build/tools`, by `Scripts/install-python-tools`).
    public var pythonPackage: String?
    /// Folders searched after `PATH`, for programs that live outside an ordinary user's `PATH` (`/usr/sbin`).
    public var extraFolders: [String]

    public init(_ name: String, debianPackage: String, extraFolders: [String] = []) {
        self.name = name
        self.debianPackage = debianPackage
        self.pythonPackage = nil
        self.extraFolders = extraFolders
    }

    /// A program from PyPI, installed into a virtual environment whose `bin` is among `extraFolders`.
    public init(_ name: String, pythonPackage: String, extraFolders: [String] = []) {
        self.name = name
        self.debianPackage = nil
        self.pythonPackage = pythonPackage
        self.extraFolders = extraFolders
    }

    public static let nginx = RequiredProgram("nginx", debianPackage: "nginx-light", extraFolders: ["/usr/sbin"])
    public static let gnuTar = RequiredProgram("tar", debianPackage: "tar")
    public static let bsdtar = RequiredProgram("bsdtar", debianPackage: "libarchive-tools")
    public static let zstd = RequiredProgram("zstd", debianPackage: "zstd")
    public static let xz = RequiredProgram("xz", debianPackage: "xz-utils")
    public static let openssl = RequiredProgram("openssl", debianPackage: "openssl")
    /// GNU time, for a child's peak memory (`-f %M`); the shell's `time` keyword cannot do that.
    public static let time = RequiredProgram("time", debianPackage: "time", extraFolders: ["/usr/bin"])
    public static let curl = RequiredProgram("curl", debianPackage: "curl")
    /// The interpreter of the exec examples' CSV source and of small test plugins.
    public static let python3 = RequiredProgram("python3", debianPackage: "python3")

    public var description: String { name }

    /// Where the program is.
    /// - Parameter environment: whose `PATH` is searched.
    /// - Throws: ``MissingProgram`` naming the program and how to install it.
    public func locate(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(MissingProgram)
        -> URL
    {
        let path = environment["PATH"] ?? "/usr/bin:/bin"
        let folders = path.split(separator: ":").map(String.init) + extraFolders
        for folder in folders where !folder.isEmpty {
            let candidate = URL(fileURLWithPath: folder, isDirectory: true).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw MissingProgram(program: self, searched: folders)
    }

    /// The program for a tar filter: GNU tar runs `zstd` or `xz` itself to read such an archive.
    public static func filter(named name: String) -> RequiredProgram? {
        switch name {
        case "zstd": .zstd
        case "xz": .xz
        default: nil
        }
    }
}

/// A test needs a program that is not installed.
public struct MissingProgram: Error, Sendable, CustomStringConvertible {
    public var program: RequiredProgram
    /// The folders that were searched.
    public var searched: [String]

    public var description: String {
        let places = (["PATH"] + program.extraFolders).joined(separator: ", ")
        let install =
            program.pythonPackage.map {
                "`python3 -m venv .build/tools && .build/tools/bin/pip install \($0)` at the top of the package "
                    + "(Scripts/install-python-tools does this)"
            } ?? "`apt-get install \(program.debianPackage ?? program.name)`"
        return "\(program.name) is not installed (looked in \(places)); install it with \(install), or run "
            + "`Scripts/test`, which installs everything the tests need"
    }
}
