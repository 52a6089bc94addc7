import CSQLite
import Foundation

/// One SQLite connection. Not thread-safe by itself: ``Ledger`` owns it behind a lock.
final class SQLiteDatabase {
    private let handle: OpaquePointer
    let path: String

    /// Opens (creating) the database at `path`.
    /// - Throws: ``LedgerError`` naming the file and SQLite's message.
    init(path: String) throws {
        _ = Self.configured
        var handle: OpaquePointer?
        let flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX
        let code = sqlite3_open_v2(path, &handle, flags, nil)
        guard code == SQLITE_OK, let handle else {
            let message = handle.map { String(cString: sqlite3_errmsg($0)) } ?? String(cString: sqlite3_errstr(code))
            sqlite3_close(handle)
            throw LedgerError("cannot open the ledger \(path): \(message)")
        }
        self.handle = handle
        self.path = path
        sqlite3_busy_timeout(handle, 5_000)
    }

    /// SQLite's process-wide settings, made once before the first connection: no memory statistics, which
    /// cost every allocation a global lock (56,000 of them in a run of 2,000 small files).
    private static let configured: Void = { _ = csqlite_disable_memory_statistics() }()

    deinit {
        // Statements are finalized before the connection closes.
        statements.removeAll()
        sqlite3_close_v2(handle)
    }

    /// Runs statements that take no parameters and return no rows; a shared read (``beginSharedRead()``) ends
    /// first, so that a write is never left inside it uncommitted.
    func execute(_ sql: String) throws {
        try endSharedRead()
        try run(sql)
    }

    /// Whether lookups share one read transaction now.
    private var sharedRead = false

    /// Lets the lookups that follow share one read transaction, until the next ``execute(_:)`` or
    /// ``transaction(_:)``: a run of a million items looks up each in the ledger, and a transaction per lookup
    /// (a lock and an unlock of the WAL index each, six system calls an item) cost more than the lookups. The
    /// connection is the ledger's only writer, so the snapshot is never out of date; other processes (a
    /// `mediafetch status`) read beside it as WAL lets them.
    func beginSharedRead() throws {
        guard !sharedRead else { return }
        try run("BEGIN")
        sharedRead = true
    }

    private func endSharedRead() throws {
        guard sharedRead else { return }
        sharedRead = false
        try run("COMMIT")
    }

    private func run(_ sql: String) throws {
        var error: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(handle, sql, nil, nil, &error)
        defer { sqlite3_free(error) }
        guard code == SQLITE_OK else {
            throw LedgerError(
                "the ledger \(path) cannot be used: \(error.map { String(cString: $0) } ?? "error \(code)"); if it "
                    + "is damaged, `mediafetch clean CONFIG --all` starts a new one (stored files are kept)")
        }
    }

    private var statements: [StatementText: SQLiteStatement] = [:]

    /// A prepared statement kept for reuse: the ledger runs the same few statements thousands of times.
    func cached(_ sql: String) throws -> SQLiteStatement {
        let key = StatementText(sql)
        if let statement = statements[key] { return statement }
        let statement = try prepare(sql)
        statements[key] = statement
        return statement
    }

    /// A statement's text as the cache's key, hashed by its length and a few of its bytes: hashing the whole text
    /// (several hundred bytes, Unicode-aware) took about a thousand instructions a lookup, several lookups an item.
    /// Equal keys are still the same text, compared whole.
    private struct StatementText: Hashable {
        let text: String
        let sample: UInt64

        init(_ text: String) {
            self.text = text
            sample = text.withUTF8Bytes { bytes in
                var sample = UInt64(bytes.count)
                guard !bytes.isEmpty else { return sample }
                // Eight bytes spread over the text, the last one included.
                for step in 1...8 { sample = sample &* 31 &+ UInt64(bytes[(bytes.count - 1) * step / 8]) }
                return sample
            }
        }

        static func == (a: Self, b: Self) -> Bool { a.sample == b.sample && a.text == b.text }
        func hash(into hasher: inout Hasher) { hasher.combine(sample) }
    }

    func prepare(_ sql: String) throws -> SQLiteStatement {
        var statement: OpaquePointer?
        try check(sqlite3_prepare_v2(handle, sql, -1, &statement, nil), sql)
        guard let statement else { throw LedgerError("ledger \(path): empty statement: \(sql)") }
        return SQLiteStatement(statement, database: self, sql: sql)
    }

    /// The rowid of the last row inserted on this connection.
    var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Writes `data` into the blob `column` of row `rowID` of `table`, which must already hold a blob of that
    /// size (`zeroblob(N)`): written straight into the database's pages, where binding it would copy it twice
    /// (once when bound, once into the row's record).
    func writeBlob(_ data: Data, table: String, column: String, rowID: Int64) throws {
        let sql = "blob \(table).\(column) of row \(rowID)"
        var blob: OpaquePointer?
        try check(sqlite3_blob_open(handle, "main", table, column, rowID, 1, &blob), sql)
        defer { sqlite3_blob_close(blob) }
        try data.withUnsafeBytes { bytes in
            try check(sqlite3_blob_write(blob, bytes.baseAddress, Int32(bytes.count), 0), sql)
        }
    }

    /// Reads `count` bytes of the blob `column` of row `rowID` of `table` straight into one buffer (a SELECT of
    /// the value would hold it twice: SQLite's copy and ours).
    func readBlob(table: String, column: String, rowID: Int64, count: Int) throws -> Data {
        let sql = "blob \(table).\(column) of row \(rowID)"
        var blob: OpaquePointer?
        try check(sqlite3_blob_open(handle, "main", table, column, rowID, 0, &blob), sql)
        defer { sqlite3_blob_close(blob) }
        var data = Data(count: count)
        try data.withUnsafeMutableBytes { bytes in
            try check(sqlite3_blob_read(blob, bytes.baseAddress, Int32(count), 0), sql)
        }
        return data
    }

    /// Turns a result code into an error naming the file, SQLite's message and the statement.
    func check(_ code: Int32, _ sql: String) throws {
        guard code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE else {
            throw LedgerError("ledger \(path): \(String(cString: sqlite3_errmsg(handle))) (code \(code)) in: \(sql)")
        }
    }

    /// Runs `body` in one transaction: committed when it returns, rolled back when it throws.
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    var userVersion: Int {
        get throws {
            let statement = try prepare("PRAGMA user_version")
            return try statement.rows { $0.int(0) }.first ?? 0
        }
    }
}

/// A prepared statement, reset and rebound for each use.
final class SQLiteStatement {
    enum Value {
        case text(String?)
        case integer(Int64?)
        case real(Double)
    }

    private let statement: OpaquePointer
    /// Unowned: the database keeps its cached statements, and outlives every statement it made.
    private unowned let database: SQLiteDatabase
    private let sql: String
    /// The bytes of the texts the current use bound, which SQLite reads in place (`SQLITE_STATIC`) until the next
    /// use binds again. Bound as `SQLITE_TRANSIENT`, SQLite made a copy of each text in memory of its own, an
    /// allocation and a copy a text: half of binding, about 7,000 instructions an item in the ledger's batches.
    /// Grown as a use needs, never while its texts are bound.
    private var textBytes = UnsafeMutableBufferPointer<CChar>.allocate(capacity: 256)

    init(_ statement: OpaquePointer, database: SQLiteDatabase, sql: String) {
        self.statement = statement
        self.database = database
        self.sql = sql
    }

    deinit {
        // SQLite forgets the bound texts before their bytes go.
        sqlite3_finalize(statement)
        textBytes.deallocate()
    }

    private func bind(_ values: [Value]) throws {
        sqlite3_reset(statement)
        // A use that binds every parameter replaces the last use's values; clearing them first cost a tenth of
        // binding in callgrind counts of a many-small-files run.
        if values.count < Int(sqlite3_bind_parameter_count(statement)) { sqlite3_clear_bindings(statement) }
        var textCount = 0
        for case .text(let text?) in values { textCount += text.utf8.count }
        if textCount > textBytes.count {
            // The last use's texts are all replaced (or cleared) below before the statement runs again.
            textBytes.deallocate()
            textBytes = .allocate(capacity: max(textCount, 2 * textBytes.count))
        }
        var offset = 0
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let code: Int32
            switch value {
            case .text(let text?): code = bindText(text, at: position, offset: &offset)
            case .integer(let number?): code = sqlite3_bind_int64(statement, position, number)
            case .real(let number): code = sqlite3_bind_double(statement, position, number)
            case .text(nil), .integer(nil): code = sqlite3_bind_null(statement, position)
            }
            try database.check(code, sql)
        }
    }

    /// Binds `text` from a copy of its bytes at `offset` in ``textBytes``, with its length: text that holds a NUL (an
    /// id from a plugin) is kept whole, not cut at the NUL. Passing the String as a C string made an array of each one.
    private func bindText(_ text: String, at position: Int32, offset: inout Int) -> Int32 {
        let start = offset
        let count = text.withUTF8Bytes { bytes in
            UnsafeMutableRawBufferPointer(UnsafeMutableBufferPointer(rebasing: textBytes[start...]))
                .copyMemory(from: UnsafeRawBufferPointer(bytes))
            return bytes.count
        }
        offset += count
        // Never a null pointer, which would bind NULL: empty text points into the buffer too.
        guard let base = textBytes.baseAddress else { return SQLITE_NOMEM }
        return sqlite3_bind_text(statement, position, base + start, Int32(clamping: count), csqlite_static())
    }

    /// Runs the statement to its end.
    func run(_ values: [Value] = []) throws {
        try bind(values)
        try database.check(sqlite3_step(statement), sql)
    }

    /// Collects every row through `read`.
    func rows<T>(_ values: [Value] = [], _ read: (SQLiteRow) throws -> T) throws -> [T] {
        try bind(values)
        var results: [T] = []
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { break }
            try database.check(code, sql)
            results.append(try read(SQLiteRow(statement: statement)))
        }
        return results
    }
}

/// The current row of a statement.
struct SQLiteRow {
    fileprivate let statement: OpaquePointer

    func text(_ column: Int32) -> String? {
        guard let text = sqlite3_column_text(statement, column) else { return nil }
        let count = Int(sqlite3_column_bytes(statement, column))
        return String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self)
    }

    func int(_ column: Int32) -> Int {
        Int(sqlite3_column_int64(statement, column))
    }

    func double(_ column: Int32) -> Double {
        sqlite3_column_double(statement, column)
    }

    func optionalInt64(_ column: Int32) -> Int64? {
        sqlite3_column_type(statement, column) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, column)
    }
}

/// The ledger could not be read or written.
public struct LedgerError: Error, Sendable, CustomStringConvertible {
    /// What happened and what to do, for a person.
    public var message: String
    /// The error underneath, when there was one (a transport's, the file system's), for programs that look.
    public var cause: (any Error & Sendable)?
    /// The ledger's store could not be reached (a server restarting, a network down): worth trying again later.
    public var isUnreachable: Bool

    public init(_ message: String, cause: (any Error & Sendable)? = nil, isUnreachable: Bool = false) {
        self.message = message
        self.cause = cause
        self.isUnreachable = isUnreachable
    }

    public var description: String { message }
}
