import Foundation

/// The config's top-level `ledger:`: a connection URI whose scheme picks a ledger plugin
/// (`postgresql://USER@HOST:PORT/DB`, any libpq URI). Left out, the run's ledger is SQLite in `state:`.
///
/// The URI may carry a password (through `${VAR}`, so that it need not be written in the file). It is kept only in
/// ``uri``, which is handed to the ledger's factory; everything meant for a person (``description``, `check`, errors,
/// logs) shows ``redacted``.
public struct LedgerSelection: Sendable, CustomStringConvertible {
    /// The URI with `${VAR}` resolved, password included: for the ledger's factory only.
    public var uri: String
    /// The URI's scheme, lowercased (`postgresql`).
    public var scheme: String
    /// Where `ledger:` was written, for errors the factory raises about it.
    public var location: SourceLocation?

    public init(uri: String, location: SourceLocation? = nil) {
        self.uri = uri
        self.scheme = Self.scheme(of: uri) ?? ""
        self.location = location
    }

    /// The URI with its password (in the user part or a `password=` parameter) replaced by `***`.
    public var redacted: String { Self.redact(uri) }

    public var description: String { redacted }

    /// The scheme of `uri` (what comes before `://`, lowercased), or nil when it has none.
    public static func scheme(of uri: String) -> String? {
        guard let separator = uri.range(of: "://") else { return nil }
        let scheme = uri[..<separator.lowerBound]
        guard let first = scheme.unicodeScalars.first, CharacterSet.letters.contains(first),
            scheme.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || "+-.".unicodeScalars.contains($0) })
        else { return nil }
        return scheme.lowercased()
    }

    /// `uri` with any password replaced by `***`: the one between `user:` and `@` in the authority, and the value of
    /// every `password` query parameter. Text that is not a URI comes back as `***` whole, since it cannot be told
    /// what in it is secret.
    public static func redact(_ uri: String) -> String {
        guard let separator = uri.range(of: "://") else { return uri.isEmpty ? uri : "***" }
        let head = uri[..<separator.upperBound]
        var rest = uri[separator.upperBound...]
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[mark...]
            rest = rest[..<mark]
        }
        var authority = rest
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[slash...]
        }
        // The user part ends at the last `@` of the authority (a password may hold an unencoded `@`).
        if let at = authority.lastIndex(of: "@") {
            let user = authority[..<at]
            if let colon = user.firstIndex(of: ":") {
                authority = user[..<colon] + ":***" + authority[at...]
            }
        }
        if !query.isEmpty {
            let parameters = query.dropFirst().split(separator: "&", omittingEmptySubsequences: false).map {
                parameter -> String in
                let name = parameter.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
                // libpq's secrets among its parameters: the password, and the passphrase of the client's key.
                return ["password", "sslpassword"].contains(name.lowercased()) ? name + "=***" : String(parameter)
            }
            query = Substring("?" + parameters.joined(separator: "&"))
        }
        return String(head) + authority + path + query
    }
}

/// What a ledger's factory gets: the URI, the run's name and its state directory.
public struct LedgerRequest: Sendable {
    public var selection: LedgerSelection
    /// The run's `name:` (default the config file's name without extension): the workers of one run share it.
    public var runName: String
    /// The run's state directory (staging files stay local to each worker).
    public var stateDirectory: URL
    /// This worker's id in a shared run (`--worker`); nil for the default, host:pid.
    public var worker: String?

    public init(selection: LedgerSelection, runName: String, stateDirectory: URL, worker: String? = nil) {
        self.selection = selection
        self.runName = runName
        self.stateDirectory = stateDirectory
        self.worker = worker
    }

    /// The default worker id: this host's name and process id.
    public static var defaultWorker: String {
        let host = ProcessInfo.processInfo.hostName
        return "\(host):\(getpid())"
    }
}

/// A ledger plugin: the URI schemes it serves and the factory that opens it.
public struct LedgerDescriptor: Sendable {
    /// The URI schemes a config's `ledger:` picks it by, lowercased (`postgresql`, `postgres`).
    public var schemes: [String]
    /// One line saying what it is.
    public var summary: String
    /// Opens (creating, migrating) the ledger.
    /// - Throws: ``LedgerError`` saying what is wrong, with the URI redacted.
    public var open: @Sendable (LedgerRequest) throws -> any RunLedger

    public init(schemes: [String], summary: String, open: @escaping @Sendable (LedgerRequest) throws -> any RunLedger) {
        self.schemes = schemes.map { $0.lowercased() }
        self.summary = summary
        self.open = open
    }
}
