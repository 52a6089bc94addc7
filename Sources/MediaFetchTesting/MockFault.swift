/// Something a test makes the mock server do wrong for one request, chosen by the hook given to
/// ``MockCatalogServer/setFaultHook(_:)``.
///
/// Faults that limit the body (`truncate`, `reset`, `stall`) count body bytes only, after the headers, and
/// apply to whatever the request would have got (a file, a range of it, a search answer).
public enum MockFault: Sendable {
    /// Answer with exactly this instead; `Content-Length` and `Connection` are added when missing. With a
    /// `Transfer-Encoding` among `headers` no length is added, and `body` goes out as given: for `chunked`, it is
    /// the chunks, sizes and all (see ``chunked(_:pieceSize:)``).
    case respond(status: Int, headers: [(String, String)], body: [UInt8])
    /// Promise the full `Content-Length`, send this many body bytes, then close normally (FIN).
    case truncate(afterBytes: Int)
    /// Send this many body bytes, then close with `SO_LINGER` 0 so that the peer sees a reset (RST).
    case reset(afterBytes: Int)
    /// Send this many body bytes, then nothing for `seconds`, then close.
    case stall(afterBytes: Int, seconds: Double)
    /// Send the body at about this rate (headers at once).
    case drip(bytesPerSecond: Int)
    /// Ignore `Range` and `If-Range`: always 200 with the full body.
    case ignoreRange
    /// Serve the resource as if it had changed: this ETag (quoted when given bare) and a later
    /// `Last-Modified`, so that an `If-Range` with the old validator gets the full body.
    case changedETag(String)
    /// Send no `ETag`, so that `Last-Modified` is the only validator (as many plain file servers do).
    case withoutETag
    /// Answer with a redirect to `location` (absolute, or a path on this server).
    case redirect(status: Int, location: String)
    /// Send `Connection: close` and close after this response.
    case closeAfterResponse
    /// Wait this long before answering (an upload: once its body is in).
    case delay(seconds: Double)
    /// Close the connection without answering at all.
    case dropConnection
    /// All of these at once, e.g. `[.delay(seconds: 1), .truncate(afterBytes: 10)]`; a later fault of the
    /// same kind replaces an earlier one.
    case combined([MockFault])

    /// `body` in HTTP/1.1's chunked framing (each piece's size in hex, the piece, then the last, empty chunk): the
    /// body of a ``respond(status:headers:body:)`` whose headers say `Transfer-Encoding: chunked`, an answer that
    /// announces no length.
    public static func chunked(_ body: [UInt8], pieceSize: Int = 4096) -> [UInt8] {
        var framed: [UInt8] = []
        var start = 0
        while start < body.count {
            let end = min(body.count, start + max(1, pieceSize))
            framed += Array((String(end - start, radix: 16) + "\r\n").utf8) + body[start..<end] + [13, 10]
            start = end
        }
        return framed + Array("0\r\n\r\n".utf8)
    }
}

/// What a response should look like after applying faults; built once per request.
struct FaultPlan: Sendable {
    var delay: Double = 0
    var replacement: Replacement?
    var bodyLimit: Int64?
    var ending: Ending = .normal
    var bytesPerSecond: Int?
    var ignoreRange = false
    var changedETag: String?
    var withoutETag = false
    var closeAfterResponse = false
    var drop = false

    enum Replacement: Sendable {
        case respond(status: Int, headers: [(String, String)], body: [UInt8])
        case redirect(status: Int, location: String)
    }

    /// How the connection ends once `bodyLimit` bytes are out.
    enum Ending: Sendable {
        case normal
        case close
        case reset
        case stall(seconds: Double)
    }

    init(_ fault: MockFault?) {
        if let fault { apply(fault) }
    }

    private mutating func apply(_ fault: MockFault) {
        switch fault {
        case .respond(let status, let headers, let body):
            replacement = .respond(status: status, headers: headers, body: body)
        case .truncate(let count):
            bodyLimit = Int64(max(0, count))
            ending = .close
        case .reset(let count):
            bodyLimit = Int64(max(0, count))
            ending = .reset
        case .stall(let count, let seconds):
            bodyLimit = Int64(max(0, count))
            ending = .stall(seconds: seconds)
        case .drip(let rate):
            bytesPerSecond = max(1, rate)
        case .ignoreRange:
            ignoreRange = true
        case .changedETag(let tag):
            changedETag = tag.hasPrefix("\"") || tag.hasPrefix("W/") ? tag : "\"" + tag + "\""
        case .withoutETag:
            withoutETag = true
        case .redirect(let status, let location):
            replacement = .redirect(status: status, location: location)
        case .closeAfterResponse:
            closeAfterResponse = true
        case .delay(let seconds):
            delay = max(0, seconds)
        case .dropConnection:
            drop = true
        case .combined(let faults):
            for fault in faults { apply(fault) }
        }
    }
}
