import CLibPQ
import Foundation
import MediaFetchCore

/// One libpq connection: owns the `PGconn`, closes it in `deinit`, and turns every failed call into a
/// ``PGError`` whose message never holds the password. Not thread-safe: it is only ever used under its owner's
/// `Mutex`, which is what makes handing it between threads sound (hence the unchecked `Sendable`).
final class PGConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    /// Text that must never reach a message (the password), replaced by `***` wherever libpq quotes it.
    private let secrets: [String]

    /// Connects with a libpq URI or `key=value` string; a connect timeout of 5 s unless the URI names one.
    /// - Throws: ``PGError`` (``PGError/isConnectionLost`` true) when the server cannot be reached.
    init(uri: String, secrets: [String]) throws {
        self.secrets = secrets.filter { !$0.isEmpty }
        // Earlier keywords are overridden by what the expanded URI (the last `dbname`) says.
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = ["5", "mediafetch", uri]
        let connection = Self.withCStrings(keywords) { keywordPointers in
            Self.withCStrings(values) { valuePointers in PQconnectdbParams(keywordPointers, valuePointers, 1) }
        }
        guard let connection else { throw PGError("libpq could not allocate a connection", connectionLost: true) }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.scrub(String(cString: PQerrorMessage(connection)), secrets)
            PQfinish(connection)
            throw PGError(message.trimmingCharacters(in: .whitespacesAndNewlines), connectionLost: true)
        }
        handle = connection
        // Notices (a table that already exists, say) are not for the user's terminal.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
    }

    deinit { PQfinish(handle) }

    /// Whether the connection is still up (as libpq last saw it), and not left in a state it cannot go on from.
    var isOK: Bool { !broken && PQstatus(handle) == CONNECTION_OK }
    /// Set when a pipeline ended where libpq's state is not known: the owner connects again.
    private var broken = false
    /// The statements prepared on this connection (``pipeline(_:)``), by name: a prepared statement lives as long
    /// as its session, so a new connection prepares them again.
    private var prepared: Set<String> = []

    /// The password a URI or connection string carries, for scrubbing messages; nil without one.
    static func password(in uri: String) -> String? {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(uri, &error) else {
            if let error { PQfreemem(error) }
            return nil
        }
        defer { PQconninfoFree(options) }
        var option = options
        while let keyword = option.pointee.keyword {
            if String(cString: keyword) == "password", let value = option.pointee.val { return String(cString: value) }
            option += 1
        }
        return nil
    }

    /// Checks that libpq can read `uri`; the message says what is wrong (never quoting the password).
    static func validate(_ uri: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(uri, &error) else {
            let message = error.map { String(cString: $0) } ?? "not a connection URI"
            if let error { PQfreemem(error) }
            throw PGError(
                scrub(message, [password(in: uri) ?? ""]).trimmingCharacters(in: .whitespacesAndNewlines),
                connectionLost: false)
        }
        PQconninfoFree(options)
    }

    /// A parameter of a statement: text (nil is NULL) or bytes.
    enum Value {
        case text(String?)
        case bytes(Data)
    }

    /// Runs one statement with `$1`... parameters.
    /// - Parameter binary: the result's columns in binary (for a `bytea` read whole).
    /// - Returns: the rows, each column's text (or bytes) or nil for NULL.
    @discardableResult
    func query(_ sql: String, _ parameters: [Value] = [], binary: Bool = false) throws -> PGRows {
        let result = Self.withParameters(parameters) { values, lengths, formats in
            PQexecParams(handle, sql, Int32(parameters.count), nil, values, lengths, formats, binary ? 1 : 0)
        }
        return try check(result, sql: sql)
    }

    /// A statement of a ``pipeline(_:)``: its text is prepared once per connection under `name`, so every
    /// statement of one name must have the same text.
    struct Statement {
        var name: String
        var sql: String
        var parameters: [Value]
    }

    /// Runs `statements` in order as one transaction, all or none, in one round trip: libpq's pipeline mode, the
    /// statements prepared (parsed and planned once per connection) and sent without waiting for each answer, one
    /// sync at the end. The server runs what comes before a sync as one implicit transaction: a statement that fails
    /// rolls back those before it and skips those after.
    /// - Returns: what each statement answered, in order (no rows for a command).
    /// - Throws: ``PGError`` of the first statement that failed, or of the lost connection.
    func pipeline(_ statements: [Statement]) throws -> [PGRows] {
        guard !statements.isEmpty else { return [] }
        for statement in statements where !prepared.contains(statement.name) {
            // Parameter types are left to the server: each is inferred from where it stands.
            _ = try check(
                PQprepare(handle, statement.name, statement.sql, Int32(statement.parameters.count), nil),
                sql: statement.sql)
            prepared.insert(statement.name)
        }
        guard PQenterPipelineMode(handle) == 1 else { throw lost("libpq could not enter pipeline mode") }
        for statement in statements {
            let sent = Self.withParameters(statement.parameters) { values, lengths, formats in
                PQsendQueryPrepared(
                    handle, statement.name, Int32(statement.parameters.count), values, lengths, formats, 0)
            }
            guard sent == 1 else { throw lost() }
        }
        guard PQpipelineSync(handle) == 1 else { throw lost() }
        var failure: PGError?
        var answers: [PGRows] = []
        answers.reserveCapacity(statements.count)
        for statement in statements {
            // Each statement's answer is one result and then a null; a statement after a failure is answered
            // PIPELINE_ABORTED.
            guard let result = PQgetResult(handle) else { throw lost() }
            let status = PQresultStatus(result)
            if failure == nil, status != PGRES_COMMAND_OK, status != PGRES_TUPLES_OK,
                status != PGRES_PIPELINE_ABORTED
            {
                failure = error(result, status: status)
            }
            answers.append(status == PGRES_TUPLES_OK ? Self.rows(of: result) : PGRows(rows: []))
            PQclear(result)
            if failure?.connectionLost == true { throw lost(failure?.message) }
            guard PQgetResult(handle) == nil else { throw lost("unexpected answer to \(statement.name)") }
        }
        guard let sync = PQgetResult(handle) else { throw lost() }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced, PQexitPipelineMode(handle) == 1 else { throw lost() }
        if let failure { throw failure }
        return answers
    }

    /// The connection is in a state this side cannot go on from (it broke mid-pipeline): marks it so that its
    /// owner connects again, and says why.
    private func lost(_ message: String? = nil) -> PGError {
        broken = true
        let said = message ?? scrub(String(cString: PQerrorMessage(handle)))
        return PGError(
            said.isEmpty ? "the connection broke" : said.trimmingCharacters(in: .whitespacesAndNewlines),
            connectionLost: true)
    }

    /// Runs several statements given as one text (no parameters: values are quoted with ``literal(_:)``), in one
    /// round trip.
    func execute(_ sql: String) throws {
        _ = try check(PQexec(handle, sql), sql: sql)
    }

    /// `values` as the text of a PostgreSQL array (`{"a",NULL}`), for a `text[]` (or `bigint[]`) parameter: each
    /// element quoted, its backslashes and double quotes escaped; nil is NULL.
    static func arrayLiteral(_ values: [String?]) -> String {
        // Byte by byte: Foundation's replacingOccurrences twice per element cost more than the rest of a batch.
        let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
        var text: [UInt8] = [UInt8(ascii: "{")]
        text.reserveCapacity(values.reduce(2) { $0 + ($1?.utf8.count ?? 4) + 3 })
        for (index, value) in values.enumerated() {
            if index > 0 { text.append(UInt8(ascii: ",")) }
            guard let value else {
                text.append(contentsOf: "NULL".utf8)
                continue
            }
            text.append(quote)
            for byte in value.utf8 {
                if byte == quote || byte == backslash { text.append(backslash) }
                text.append(byte)
            }
            text.append(quote)
        }
        text.append(UInt8(ascii: "}"))
        return String(decoding: text, as: UTF8.self)
    }

    /// ``arrayLiteral(_:)`` as a parameter.
    static func array(_ values: [String?]) -> Value { .text(arrayLiteral(values)) }

    /// `text` as a SQL string literal, quoted by libpq for this connection's encoding.
    func literal(_ text: String?) throws -> String {
        guard let text else { return "NULL" }
        let utf8 = Array(text.utf8)
        guard let quoted = PQescapeLiteral(handle, text, utf8.count) else {
            throw PGError(scrub(String(cString: PQerrorMessage(handle))), connectionLost: !isOK)
        }
        defer { PQfreemem(quoted) }
        return String(cString: quoted)
    }

    private func check(_ result: OpaquePointer?, sql: String) throws -> PGRows {
        guard let result else {
            throw PGError(scrub(String(cString: PQerrorMessage(handle))), connectionLost: true)
        }
        defer { PQclear(result) }
        let status = PQresultStatus(result)
        guard status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK else {
            let failure = error(result, status: status)
            // Whatever a failed multi-statement text left open is rolled back, so the connection can go on.
            if !failure.connectionLost, PQtransactionStatus(handle) == PQTRANS_INERROR {
                PQclear(PQexec(handle, "ROLLBACK"))
            }
            throw failure
        }
        return Self.rows(of: result)
    }

    /// The rows a successful result holds (none for a command).
    private static func rows(of result: OpaquePointer) -> PGRows {
        var rows: [[Data?]] = []
        let count = PQntuples(result)
        let columns = PQnfields(result)
        rows.reserveCapacity(Int(count))
        for row in 0..<count {
            var values: [Data?] = []
            for column in 0..<columns {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(nil)
                } else {
                    let length = Int(PQgetlength(result, row, column))
                    values.append(PQgetvalue(result, row, column).map { Data(bytes: $0, count: length) } ?? Data())
                }
            }
            rows.append(values)
        }
        return PGRows(rows: rows)
    }

    /// The error a failed result says, the password scrubbed.
    private func error(_ result: OpaquePointer, status: ExecStatusType) -> PGError {
        let message = scrub(String(cString: PQresultErrorMessage(result)))
        let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
        // Class 08 is a connection exception; 57P0x an administrator's shutdown; a fatal error or a lost
        // connection shows as a bad status too.
        let lost =
            PQstatus(handle) != CONNECTION_OK || state?.hasPrefix("08") == true || state?.hasPrefix("57P") == true
            || status == PGRES_FATAL_ERROR && state == nil
        return PGError(message.trimmingCharacters(in: .whitespacesAndNewlines), connectionLost: lost, sqlState: state)
    }

    private func scrub(_ message: String) -> String { Self.scrub(message, secrets) }

    private static func scrub(_ message: String, _ secrets: [String]) -> String {
        secrets.filter { !$0.isEmpty }.reduce(message) { $0.replacingOccurrences(of: $1, with: "***") }
    }

    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) } + [nil])
    }

    /// `parameters` as libpq takes them: values (nil for NULL), lengths and formats (text 0, bytes 1).
    private static func withParameters<T>(
        _ parameters: [Value], _ body: ([UnsafePointer<CChar>?], [Int32], [Int32]) -> T
    ) -> T {
        let buffers: [Data?] = parameters.map {
            switch $0 {
            case .text(let text): text.map { Data($0.utf8) + Data([0]) }
            case .bytes(let data): data
            }
        }
        let formats: [Int32] = parameters.map {
            if case .bytes = $0 { 1 } else { 0 }
        }
        let lengths: [Int32] = buffers.map { Int32($0?.count ?? 0) }
        return withPointers(buffers) { body($0, lengths, formats) }
    }

    private static func withPointers<T>(_ buffers: [Data?], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies: [UnsafeMutablePointer<CChar>?] = buffers.map { data in
            guard let data else { return nil }
            let pointer = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, data.count))
            data.withUnsafeBytes { bytes in
                if let base = bytes.baseAddress { pointer.update(from: base.assumingMemoryBound(to: CChar.self), count: data.count) }
            }
            return pointer
        }
        defer { copies.forEach { $0?.deallocate() } }
        return body(copies.map { $0.map { UnsafePointer($0) } })
    }
}

/// The rows of a result: each column's bytes (text in the server's encoding, UTF-8 here), or nil for NULL.
struct PGRows {
    var rows: [[Data?]]

    var count: Int { rows.count }

    func text(_ row: Int, _ column: Int) -> String? {
        rows[row][column].map { String(decoding: $0, as: UTF8.self) }
    }

    func int64(_ row: Int, _ column: Int) -> Int64? { text(row, column).flatMap { Int64($0) } }

    func double(_ row: Int, _ column: Int) -> Double? { text(row, column).flatMap { Double($0) } }

    func bool(_ row: Int, _ column: Int) -> Bool? { text(row, column).map { $0 == "t" } }

    func bytes(_ row: Int, _ column: Int) -> Data? { rows[row][column] }
}

/// A libpq call failed.
struct PGError: Error, CustomStringConvertible {
    var message: String
    /// True when the server could not be reached or the connection broke: worth reconnecting and trying again.
    var connectionLost: Bool
    /// The SQLSTATE, when the server sent one.
    var sqlState: String?

    init(_ message: String, connectionLost: Bool, sqlState: String? = nil) {
        self.message = message
        self.connectionLost = connectionLost
        self.sqlState = sqlState
    }

    var description: String { message }
}
