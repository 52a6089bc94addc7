import Foundation

/// A plugin broke one or more clauses of a contract suite (``TransportContract``, ``SinkContract``).
///
/// Thrown once every clause has run, listing each one that failed and why, so that one run shows everything
/// to mend. Its description is meant for a person: the suite, each clause's name, and what went wrong.
public struct ContractFailure: Error, Sendable, CustomStringConvertible {
    /// One clause that did not hold.
    public struct Broken: Sendable, Hashable {
        /// The clause's name, as in the suite's list (``TransportContract/Clause/name``).
        public var clause: String
        /// What was expected and what happened instead.
        public var reason: String

        public init(clause: String, reason: String) {
            self.clause = clause
            self.reason = reason
        }
    }

    /// "TransportContract" or "SinkContract".
    public var suite: String
    public var broken: [Broken]

    public init(suite: String, broken: [Broken]) {
        self.suite = suite
        self.broken = broken
    }

    public var description: String {
        let clauses = broken.map { "\n- \($0.clause): \($0.reason)" }.joined()
        return "\(suite): \(broken.count) clause\(broken.count == 1 ? "" : "s") broken:" + clauses
    }
}

/// The checks a clause makes: each failed one ends the clause with its reason.
struct ClauseViolation: Error, CustomStringConvertible {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}

/// Ends the clause with `reason` unless `condition` holds.
func demand(_ condition: Bool, _ reason: @autoclosure () -> String) throws(ClauseViolation) {
    if !condition { throw ClauseViolation(reason()) }
}

/// The error `body` throws, as `E`; a clause violation when it returns instead or throws something else.
func expectError<E: Error>(
    _ type: E.Type, _ what: String, _ body: () async throws -> Void
) async throws -> E {
    do {
        try await body()
    } catch let error as E {
        return error
    } catch {
        throw ClauseViolation("\(what): expected a \(E.self), got \(error)")
    }
    throw ClauseViolation("\(what): expected a \(E.self), but it succeeded")
}

/// Runs each clause in turn and collects the broken ones.
struct ClauseRunner {
    let suite: String
    private(set) var broken: [ContractFailure.Broken] = []

    init(suite: String) {
        self.suite = suite
    }

    mutating func check(_ name: String, _ body: () async throws -> Void) async {
        do {
            try await body()
        } catch {
            broken.append(ContractFailure.Broken(clause: name, reason: String(describing: error)))
        }
    }

    func finish() throws(ContractFailure) {
        if !broken.isEmpty { throw ContractFailure(suite: suite, broken: broken) }
    }
}

/// A scratch folder removed when `body` ends, however it ends.
func withScratchFolder<T>(_ prefix: String, _ body: (URL) async throws -> T) async throws -> T {
    let folder = FileManager.default.temporaryDirectory
        .appendingPathComponent("\(prefix)-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    return try await body(folder)
}
