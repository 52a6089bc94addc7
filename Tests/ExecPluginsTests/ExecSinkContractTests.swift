import ExecPlugins
import Foundation
import MediaFetchCore
import MediaFetchTesting
import Testing

/// The exec sink with the example shell plugin, through the public ``SinkContract``: the same clauses the
/// bundled sinks keep. The example follows symbolic links planted in its folder (it says so, and points to the
/// directory sink where that matters), and the contract names exactly that clause.
struct ExecSinkContractTests {
    static func sink(root: URL) throws -> ExecSink {
        ExecSink(
            command: ExecCommand(
                program: ExecFixture.example("dir-sink.sh"), directory: root,
                options: [OptionValue.KeyValue("folder", ".")]),
            layout: try LayoutTemplate(LayoutTemplate.defaultLayout), diagnostics: { _ in })
    }

    @Test func theExampleShellSinkKeepsTheContract() async throws {
        let clauses = SinkContract.Clause.all.filter { $0 != .nothingOutsideTheRoot }
        try await SinkContract.run(clauses: clauses) { root in try Self.sink(root: root) }
    }

    @Test func theContractNamesTheLinkTheExampleFollows() async throws {
        let error = await #expect(throws: ContractFailure.self) {
            try await SinkContract.run(clauses: [.nothingOutsideTheRoot]) { root in try Self.sink(root: root) }
        }
        #expect(error?.broken.map(\.clause) == [SinkContract.Clause.nothingOutsideTheRoot.name])
    }
}
