import Dispatch
import Foundation
import Glibc
import MediaFetchCore

/// Serves one accepted connection on its own thread: reads requests one after another (keep-alive,
/// pipelining) and writes each answer, applying the fault the hook chose.
final class MockConnection {
    private let core: MockServerCore
    private let socket: Int32
    private let number: Int
    /// Bytes read but not yet used: the rest of a pipelined request stays here for the next round.
    private var inbox: [UInt8] = []
    private var sequence = 0
    /// Body bytes go out through this buffer in chunks; a 512 MiB file is never in memory.
    private let chunk: UnsafeMutableRawBufferPointer
    private static let chunkSize = 64 << 10
    /// Request bodies (unusual for GET) are read and dropped up to this size; larger ones get 413.
    private static let bodyLimit = 1 << 20

    init(core: MockServerCore, socket: Int32, number: Int) {
        self.core = core
        self.socket = socket
        self.number = number
        chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
    }

    deinit {
        chunk.deallocate()
    }

    /// How a response left the connection.
    private enum Outcome {
        case keepOpen
        case close
        /// Close after reading what the client still sends: closing with unread input makes the kernel send
        /// RST, which can destroy the error answer before the client reads it.
        case closeAfterDraining
        case reset
    }

    func run() {
        var outcome = Outcome.close
        while let head = readHead() {
            outcome = serve(head)
            if case .keepOpen = outcome { continue }
            break
        }
        if outcome == .closeAfterDraining { drainBeforeClose() }
        core.closeSocket(socket, reset: outcome == .reset)
    }

    /// Half-closes, then reads and drops input for a short while (the "lingering close" of nginx and Apache).
    private func drainBeforeClose() {
        shutdown(socket, Int32(SHUT_WR))
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        var total = 0
        while total < 1 << 20 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            guard poll(&descriptor, 1, 500) > 0 else { return }
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return }
            total += count
        }
    }

    // MARK: - Reading

    private enum HeadRead {
        case head(ArraySlice<UInt8>)
        case tooLarge
    }

    /// The next request head, or nil when the peer closed (or the server is stopping).
    private func readHead() -> HeadRead? {
        var scanFrom = 0
        while true {
            // Blank lines before a request line are allowed (RFC 9112 2.2).
            let leading = inbox.prefix { $0 == UInt8(ascii: "\r") || $0 == UInt8(ascii: "\n") }.count
            if leading > 0 {
                inbox.removeFirst(leading)
                scanFrom = 0
            }
            if let (headEnd, consumed) = Self.findHeadEnd(inbox, from: scanFrom) {
                // One read can bring a whole oversized head; the limit is on the head, not on what is buffered.
                if headEnd > MockServerCore.headerLimit { return .tooLarge }
                let head = ArraySlice(inbox[0..<headEnd])
                inbox.removeFirst(consumed)
                return .head(head)
            }
            if inbox.count > MockServerCore.headerLimit { return .tooLarge }
            scanFrom = max(0, inbox.count - 3)
            guard receive() else { return nil }
        }
    }

    /// Reads what is available into `inbox`. Returns false on end of stream or error.
    private func receive() -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                inbox.append(contentsOf: buffer[0..<count])
                return true
            }
            if count < 0 && errno == EINTR { continue }
            return false
        }
    }

    /// Finds the blank line ending a head: returns where the head ends and how many bytes it used with its
    /// terminator. Accepts bare LF as well as CRLF, as robust servers do.
    private static func findHeadEnd(_ bytes: [UInt8], from start: Int) -> (Int, Int)? {
        var index = max(0, start)
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "\n") {
                if index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "\n") { return (index + 1, index + 2) }
                if index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "\r"),
                    bytes[index + 2] == UInt8(ascii: "\n")
                {
                    return (index + 1, index + 3)
                }
            }
            index += 1
        }
        return nil
    }

    /// Reads and drops a request body of `length` bytes.
    private func discardBody(_ length: Int) -> Bool {
        var remaining = length
        while remaining > 0 {
            if inbox.isEmpty, !receive() { return false }
            let used = min(remaining, inbox.count)
            inbox.removeFirst(used)
            remaining -= used
        }
        return true
    }

    // MARK: - Answering

    private func serve(_ read: HeadRead) -> Outcome {
        guard case .head(let bytes) = read else {
            return sendSimple(status: 431, text: "Request header fields too large", keepAlive: false)
        }
        let head: HTTPHeadParser.Head
        switch HTTPHeadParser.parse(bytes) {
        case .success(let parsed): head = parsed
        case .failure(let failure): return sendSimple(status: failure.status, text: failure.reason, keepAlive: false)
        }
        if head.headers.contains("Transfer-Encoding") {
            // The mock never needs request bodies; without chunked decoding it cannot find the next request.
            let text = "request bodies with Transfer-Encoding are not supported"
            return sendSimple(status: 501, text: text, keepAlive: false)
        }
        // Uploads are taken under their own prefix only: the catalog's API answers GET and HEAD, as Apple's does.
        if head.method == "PUT" || head.method == "POST", head.target.hasPrefix(MockUpload.pathPrefix) {
            return receiveUpload(head)
        }
        if let lengthText = head.headers["Content-Length"] {
            guard let length = Int(lengthText), length >= 0 else {
                return sendSimple(status: 400, text: "bad Content-Length", keepAlive: false)
            }
            guard length <= Self.bodyLimit else {
                return sendSimple(status: 413, text: "request body too large", keepAlive: false)
            }
            guard discardBody(length) else { return .close }
        }
        sequence += 1
        let request = MockRequest(
            method: head.method, target: head.target, headers: head.headers, version: head.version,
            connection: number, sequenceOnConnection: sequence
        )
        let plan = FaultPlan(core.record(request))
        if plan.drop { return .close }
        if plan.delay > 0, core.waitForStop(seconds: plan.delay) { return .close }
        let keepAlive = Self.wantsKeepAlive(head) && !plan.closeAfterResponse
        return respond(to: request, plan: plan, keepAlive: keepAlive)
    }

    /// Reads an upload's body as it comes (see ``MockUpload``), applying the hook's fault while reading, and
    /// answers with what arrived.
    private func receiveUpload(_ head: HTTPHeadParser.Head) -> Outcome {
        guard let lengthText = head.headers["Content-Length"], let length = Int64(lengthText), length >= 0 else {
            return sendSimple(status: 411, text: "an upload needs a Content-Length", keepAlive: false)
        }
        sequence += 1
        var request = MockRequest(
            method: head.method, target: head.target, headers: head.headers, version: head.version,
            connection: number, sequenceOnConnection: sequence
        )
        let plan = FaultPlan(core.fault(for: request))
        var hasher = SHA256()
        var received: Int64 = 0
        while received < length {
            if let limit = plan.bodyLimit, received >= limit {
                switch plan.ending {
                case .reset: return .reset
                case .stall(let seconds):
                    _ = core.waitForStop(seconds: seconds)
                    return .close
                case .normal, .close: return .close
                }
            }
            if inbox.isEmpty, !receive() { return .close }
            var used = Int(min(Int64(inbox.count), length - received))
            if let limit = plan.bodyLimit { used = Int(min(Int64(used), max(0, limit - received))) }
            inbox.withUnsafeBytes { hasher.update(UnsafeRawBufferPointer(rebasing: $0[0..<used])) }
            inbox.removeFirst(used)
            received += Int64(used)
        }
        request.uploadedBytes = received
        request.uploadedSHA256 = hasher.finalize()
        core.log(request)
        if plan.delay > 0, core.waitForStop(seconds: plan.delay) { return .close }
        let keepAlive = Self.wantsKeepAlive(head) && !plan.closeAfterResponse
        if case .respond(let status, let headers, let body) = plan.replacement {
            let fields = Self.withLength(headers, of: body)
            let content = MockContent(bytes: body)
            return send(
                status: status, headers: fields, body: content, range: 0..<content.count, isHead: false,
                plan: FaultPlan(nil), keepAlive: keepAlive)
        }
        let answer = MockUpload.answer(bytes: received, sha256: request.uploadedSHA256 ?? "")
        let content = MockContent(bytes: answer.body)
        return send(
            status: 200, headers: answer.headers, body: content, range: 0..<content.count, isHead: false,
            plan: FaultPlan(nil), keepAlive: keepAlive)
    }

    /// A scripted answer's `headers`, with the `Content-Length` of `body` added unless they frame it themselves (a
    /// `Content-Length`, or a `Transfer-Encoding` whose framing the scripted body carries).
    private static func withLength(_ headers: [(String, String)], of body: [UInt8]) -> [(String, String)] {
        let framed = headers.contains { ["content-length", "transfer-encoding"].contains($0.0.lowercased()) }
        return framed ? headers : headers + [("Content-Length", String(body.count))]
    }

    private static func wantsKeepAlive(_ head: HTTPHeadParser.Head) -> Bool {
        let tokens = (head.headers["Connection"] ?? "").lowercased().split(separator: ",").map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        if tokens.contains("close") { return false }
        return head.version == "HTTP/1.1" || tokens.contains("keep-alive")
    }

    private func respond(to request: MockRequest, plan: FaultPlan, keepAlive: Bool) -> Outcome {
        let isHead = request.method == "HEAD"
        switch plan.replacement {
        case .respond(let status, let headers, let body):
            let content = MockContent(bytes: body)
            let fields = Self.withLength(headers, of: body)
            // A scripted `Connection: close` must really close, or the client and the server disagree.
            let scriptedClose = headers.contains {
                $0.0.lowercased() == "connection" && $0.1.lowercased().contains("close")
            }
            return send(
                status: status, headers: fields, body: content, range: 0..<content.count, isHead: isHead,
                plan: plan, keepAlive: keepAlive && !scriptedClose)
        case .redirect(let status, let location):
            let fields = [("Location", location), ("Content-Length", "0")]
            return send(
                status: status, headers: fields, body: nil, range: 0..<0, isHead: isHead, plan: plan,
                keepAlive: keepAlive)
        case nil:
            break
        }
        guard request.method == "GET" || isHead else {
            let fields = [("Allow", "GET, HEAD"), ("Content-Length", "0")]
            return send(
                status: 405, headers: fields, body: nil, range: 0..<0, isHead: isHead, plan: plan,
                keepAlive: keepAlive)
        }
        switch core.resolve(request) {
        case .api(let status, let body):
            let content = MockContent(bytes: body)
            let fields = [("Content-Type", MockITunesAPI.contentType), ("Content-Length", String(body.count))]
            return send(
                status: status, headers: fields, body: content, range: 0..<content.count, isHead: isHead,
                plan: plan, keepAlive: keepAlive)
        case .notFound:
            let content = MockContent(bytes: Array("Not Found\n".utf8))
            let fields = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", String(content.count))]
            return send(
                status: 404, headers: fields, body: content, range: 0..<content.count, isHead: isHead,
                plan: plan, keepAlive: keepAlive)
        case .file(let file):
            return sendFile(file, request: request, plan: plan, keepAlive: keepAlive)
        }
    }

    private func sendFile(_ file: MockFile, request: MockRequest, plan: FaultPlan, keepAlive: Bool) -> Outcome {
        let isHead = request.method == "HEAD"
        var etag = file.etag
        var lastModified = file.lastModified
        if let changed = plan.changedETag {
            etag = changed
            lastModified = MockFile.changedLastModified
        }
        let size = file.content.count
        var status = 200
        var range: Range<Int64> = 0..<size
        var fields = [("Content-Type", file.contentType), ("Accept-Ranges", "bytes")]
        if !plan.withoutETag { fields.append(("ETag", etag)) }
        fields.append(("Last-Modified", lastModified))
        if Self.notModified(request.headers, etag: plan.withoutETag ? nil : etag, lastModified: lastModified) {
            // A conditional GET of the version the client has: the validators again, and no body.
            return send(
                status: 304, headers: fields.filter { $0.0 != "Accept-Ranges" }, body: nil, range: 0..<0,
                isHead: isHead, plan: plan, keepAlive: keepAlive)
        }
        if !plan.ignoreRange, let rangeHeader = request.headers["Range"],
            Self.ifRangeHolds(
                request.headers["If-Range"], etag: plan.withoutETag ? nil : etag,
                lastModified: lastModified)
        {
            switch MockByteRange.parse(rangeHeader, size: size) {
            case .ignored:
                break
            case .unsatisfiable:
                fields.append(("Content-Range", "bytes */\(size)"))
                fields.append(("Content-Length", "0"))
                return send(
                    status: 416, headers: fields, body: nil, range: 0..<0, isHead: isHead, plan: plan,
                    keepAlive: keepAlive)
            case .satisfiable(let satisfied):
                status = 206
                range = satisfied
                fields.append(("Content-Range", "bytes \(satisfied.lowerBound)-\(satisfied.upperBound - 1)/\(size)"))
            }
        }
        fields.append(("Content-Length", String(range.count)))
        return send(
            status: status, headers: fields, body: file.content, range: range, isHead: isHead, plan: plan,
            keepAlive: keepAlive)
    }

    /// Whether a conditional request names the version served (RFC 9110 13.1.2 and 13.1.3): `If-None-Match`
    /// listing its ETag (weakly compared) or `*`; without `If-None-Match`, an `If-Modified-Since` equal to its
    /// `Last-Modified`, the date the mock always sends.
    private static func notModified(_ headers: HTTPHeaders, etag: String?, lastModified: String) -> Bool {
        if let match = headers["If-None-Match"] {
            let opaque = { (tag: String) in tag.hasPrefix("W/") ? String(tag.dropFirst(2)) : tag }
            let listed = match.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            return listed.contains("*") || (etag.map { tag in listed.contains { opaque($0) == opaque(tag) } } ?? false)
        }
        return headers["If-Modified-Since"] == lastModified
    }

    /// Whether a `Range` may be honoured: no `If-Range`, or one naming the current version. A weak ETag never
    /// matches (RFC 9110 13.1.5).
    private static func ifRangeHolds(_ value: String?, etag: String?, lastModified: String) -> Bool {
        guard let value else { return true }
        if value.hasPrefix("W/") { return false }
        return value == etag || value == lastModified
    }

    private func sendSimple(status: Int, text: String, keepAlive: Bool) -> Outcome {
        let content = MockContent(bytes: Array((text + "\n").utf8))
        let fields = [("Content-Type", "text/plain; charset=utf-8"), ("Content-Length", String(content.count))]
        let outcome = send(
            status: status, headers: fields, body: content, range: 0..<content.count, isHead: false,
            plan: FaultPlan(nil), keepAlive: keepAlive)
        return outcome == .close ? .closeAfterDraining : outcome
    }

    /// Writes the status line, `headers` plus `Server` and `Connection`, then `range` of `body` (nothing for
    /// HEAD), obeying the plan's body limit, ending and rate.
    private func send(
        status: Int,
        headers: [(String, String)],
        body: MockContent?,
        range: Range<Int64>,
        isHead: Bool,
        plan: FaultPlan,
        keepAlive: Bool
    ) -> Outcome {
        var head = "HTTP/1.1 \(status) \(Self.reason(status))\r\nServer: MockCatalogServer\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if !headers.contains(where: { $0.0.lowercased() == "connection" }) {
            head += keepAlive ? "Connection: keep-alive\r\n" : "Connection: close\r\n"
        }
        head += "\r\n"
        let headBytes = Array(head.utf8)
        let bodyLength: Int64 = isHead || body == nil ? 0 : Int64(range.count)
        let allowed = min(bodyLength, plan.bodyLimit ?? bodyLength)

        var pending = 0
        // Headers and the first body bytes go out in one send when they fit: fewer packets, no Nagle waits.
        if headBytes.count <= Self.chunkSize / 4, plan.bytesPerSecond == nil {
            headBytes.withUnsafeBytes { chunk.copyMemory(from: $0) }
            pending = headBytes.count
        } else if !sendAll(headBytes) {
            return .close
        }
        var sent: Int64 = 0
        let started = DispatchTime.now().uptimeNanoseconds
        let slice = plan.bytesPerSecond.map { max(1, min(Self.chunkSize, $0 / 20)) } ?? Self.chunkSize
        while sent < allowed || pending > 0 {
            var bodyBytes = 0
            if let body, sent < allowed {
                let room = min(slice, Self.chunkSize - pending, Int(allowed - sent))
                let target = UnsafeMutableRawBufferPointer(rebasing: chunk[pending..<(pending + room)])
                let filled = body.fill(target, from: range.lowerBound + sent)
                pending += filled
                sent += Int64(filled)
                bodyBytes = filled
                if filled == 0 { break }
            }
            // Counted before the send, so that a client that has read them never sees an older count.
            core.served(bodyBytes)
            guard sendAll(UnsafeRawBufferPointer(rebasing: chunk[0..<pending])) else { return .close }
            pending = 0
            if let rate = plan.bytesPerSecond, sent < allowed {
                // Sleep until the schedule says the bytes sent so far were due, so the rate does not drift.
                let due = started + UInt64(Double(sent) / Double(rate) * 1e9)
                let now = DispatchTime.now().uptimeNanoseconds
                if due > now, core.waitForStop(seconds: Double(due - now) / 1e9) { return .close }
            }
        }
        if plan.bodyLimit != nil {
            switch plan.ending {
            case .normal, .close: return .close
            case .reset: return .reset
            case .stall(let seconds):
                _ = core.waitForStop(seconds: seconds)
                return .close
            }
        }
        return keepAlive ? .keepOpen : .close
    }

    private func sendAll(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { sendAll($0) }
    }

    /// Sends every byte, retrying short writes; false when the peer is gone (MSG_NOSIGNAL: no SIGPIPE).
    private func sendAll(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let base = bytes.baseAddress else { return true }
        var offset = 0
        while offset < bytes.count {
            let count = Glibc.send(socket, base + offset, bytes.count - offset, Int32(MSG_NOSIGNAL))
            if count > 0 {
                offset += count
            } else if count < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 303: "See Other"
        case 304: "Not Modified"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 413: "Content Too Large"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 502: "Bad Gateway"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: "Status"
        }
    }
}
