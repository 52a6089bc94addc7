import Foundation
import Testing

/// A new, empty folder named `<prefix>-<uuid>`: in the running test's own scratch folder when its suite has
/// ``RemovesScratch`` (removed with it when the test ends), else under the temporary directory.
func scratchFolder(_ prefix: String) throws -> URL {
    let folder = scratchPath(prefix)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder
}

/// Where ``scratchFolder(_:)`` would make its folder, not yet made (for code that makes it itself, as a run makes its
/// staging folder).
func scratchPath(_ prefix: String) -> URL {
    (RemovesScratch.root ?? FileManager.default.temporaryDirectory).appendingPathComponent(
        "\(prefix)-\(UUID().uuidString)")
}

/// Gives each test of a suite a scratch folder of its own, and removes it when the test ends, with everything
/// ``scratchFolder(_:)`` and ``scratchPath(_:)`` put in it. `Scripts/test` removes its whole temporary directory at
/// the end; a plain `swift test` left a run's ledgers and staging folders behind (64 folders a run).
struct RemovesScratch: SuiteTrait, TestTrait, TestScoping {
    /// The running test's scratch folder (made when first used).
    @TaskLocal static var root: URL?

    var isRecursive: Bool { true }

    func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        // A suite, or a test inside a test's scope already (the cases of a parameterized test): no folder of its own.
        guard !test.isSuite, Self.root == nil else { return try await function() }
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("mediafetch-test-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        try await Self.$root.withValue(root) { try await function() }
    }
}

extension Trait where Self == RemovesScratch {
    /// Each test's scratch folders removed when it ends (``RemovesScratch``).
    static var removesScratch: Self { RemovesScratch() }
}
