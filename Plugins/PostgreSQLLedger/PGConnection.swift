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

    /// Whether the connection is still up (as libpq last saw it).
    var isOK: Bool { PQstatus(handle) == CONNECTION_OK }

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
        let result = Self.withPointers(buffers) { pointers in
            PQexecParams(handle, sql, Int32(parameters.count), nil, pointers, lengths, formats, binary ? 1 : 0)
        }
        return try check(result, sql: sql)
    }

    /// Runs several statements given as one text (no parameters: values are quoted with ``literal(_:)``), in one
    /// round trip.
    func execute(_ sql: String) throws {
        _ = try check(PQexec(handle, sql), sql: sql)
    }

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
            let message = scrub(String(cString: PQresultErrorMessage(result)))
            let state = PQresultErrorField(result, Int32(UInt8(ascii: "C"))).map { String(cString: $0) }
            // Class 08 is a connection exception; 57P0x an administrator's shutdown; a fatal error or a lost
            // connection shows as a bad status too.
            let lost =
                PQstatus(handle) != CONNECTION_OK || state?.hasPrefix("08") == true || state?.hasPrefix("57P") == true
                || status == PGRES_FATAL_ERROR && state == nil
            // Whatever a failed multi-statement text left open is rolled back, so the connection can go on.
            if !lost, PQtransactionStatus(handle) == PQTRANS_INERROR { PQclear(PQexec(handle, "ROLLBACK")) }
            throw PGError(
                message.trimmingCharacters(in: .whitespacesAndNewlines), connectionLost: lost, sqlState: state)
        }
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

    private func scrub(_ message: String) -> String { Self.scrub(message, secrets) }

    private static func scrub(_ message: String, _ secrets: [String]) -> String {
        secrets.filter { !$0.isEmpty }.reduce(message) { $0.replacingOccurrences(of: $1, with: "***") }
    }

    private static func withCStrings<T>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> T) -> T {
        let copies = strings.map { strdup($0) }
        defer { copies.forEach { free($0) } }
        return body(copies.map { UnsafePointer($0) } + [nil])
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
