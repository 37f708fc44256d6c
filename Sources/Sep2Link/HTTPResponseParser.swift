import BessBase
import BessSystem
import ControlCore

/// Reads one HTTP/1.1 response (RFC 9112) from the bytes a server sent, fed in pieces as they
/// arrive: no I/O, no clock, so a test (or a fuzzer) can feed it anything.
///
/// Strict where a lenient reading could be steered: a status line `HTTP/1.x NNN reason`, CRLF line
/// ends, header names of token characters with the colon right after, no folded lines, a
/// Content-Length of digits (several only when equal), never both Content-Length and
/// Transfer-Encoding, and no transfer coding but `chunked`. Bounded: the head (status line and
/// fields) and each chunk-size or trailer line in bytes, the fields in number, the body by
/// `maximumBody`. Interim (1xx) responses are skipped, up to `maximumInterim` of them. Every error
/// is an `HTTPClientError` (`SEP2_HTTP_MALFORMED`, `SEP2_HTTP_TOO_LARGE`, `SEP2_HTTP_CLOSED`) whose
/// message quotes what the server sent only through `PeerText.quoted`.
package struct HTTPResponseParser {
    /// The largest head (status line and header fields with their line ends) accepted.
    package static let maximumHeadBytes = 16_384
    /// The most header fields accepted.
    package static let maximumHeaderCount = 64
    /// The longest chunk-size line (with extensions) accepted.
    package static let maximumChunkLine = 1_024
    /// The most interim (1xx) answers skipped before the final one: a server that sends them
    /// without end would otherwise hold the client as long as it keeps sending.
    package static let maximumInterim = 8

    /// How the body ends.
    private enum Framing {
        case length(Int)
        case chunked
        case untilClose
    }

    /// Where the parser stands.
    private enum State {
        case head
        case body(remaining: Int)
        case chunkSize
        case chunkData(remaining: Int)
        case chunkDataEnd
        case trailer(fields: Int)
        case untilClose
        case done
    }

    /// The largest body accepted.
    package let maximumBody: Int
    private var buffer: [UInt8] = []
    /// The first byte not yet consumed.
    private var position = 0
    /// Where the search for the head's end resumes.
    private var scanned = 0
    private var state = State.head
    private var interim = 0
    private var status = 0
    private var headers: [(name: String, value: String)] = []
    private var body: [UInt8] = []
    /// False when the server said it closes the connection (or spoke HTTP/1.0).
    package private(set) var keepAlive = true

    /// A parser for one response whose body may hold up to `maximumBody` bytes.
    package init(maximumBody: Int) {
        self.maximumBody = maximumBody
    }

    /// Bytes received after the complete response (a server must send none: bessd never pipelines).
    package var surplus: Int {
        guard case .done = state else { return 0 }
        return buffer.count - position
    }

    /// Bytes received so far.
    package private(set) var received = 0

    /// Takes the next bytes; the response once it is complete, nil while more are needed.
    package mutating func feed(_ bytes: some Collection<UInt8>) throws(HTTPClientError) -> HTTPResponse? {
        if case .done = state { return nil }
        // What was consumed goes (bodies are copied out), so memory stays bounded by the limits
        // whatever a server sends: endless interim answers or chunk extensions included.
        if position >= 65_536 {
            buffer.removeFirst(position)
            scanned = max(0, scanned - position)
            position = 0
        }
        buffer.append(contentsOf: bytes)
        received += bytes.count
        return try advance()
    }

    /// The server closed the connection: completes a body that runs to the close; otherwise the
    /// response is cut short (`SEP2_HTTP_CLOSED`).
    package mutating func finish() throws(HTTPClientError) -> HTTPResponse {
        if case .untilClose = state {
            body.append(contentsOf: buffer[position...])
            try checkBodySize()
            position = buffer.count
            state = .done
            keepAlive = false
            return response
        }
        let what = received == 0 ? "before any byte of the answer" : "after \(received) bytes of an incomplete answer"
        throw HTTPClientError(.closed, message: "the server closed the connection \(what)")
    }

    /// The whole of `bytes` as one response, the connection closed after them: the pure form the
    /// fuzz tests drive.
    package static func parse(_ bytes: [UInt8], maximumBody: Int) throws(HTTPClientError) -> HTTPResponse {
        var parser = HTTPResponseParser(maximumBody: maximumBody)
        if let response = try parser.feed(bytes) { return response }
        return try parser.finish()
    }

    private var response: HTTPResponse { HTTPResponse(status: status, headers: headers, body: body) }

    /// Runs the states over the bytes received, as far as they go.
    private mutating func advance() throws(HTTPClientError) -> HTTPResponse? {
        while true {
            switch state {
            case .head:
                let end = headEnd()
                // Before its end has come, the head is at least what came but the last three bytes
                // (they may begin its CRLF CRLF): the same bound whatever pieces the bytes come in.
                guard (end ?? buffer.count - 3) - position <= Self.maximumHeadBytes else {
                    throw HTTPClientError(.tooLarge, message: "the answer's head exceeds \(Self.maximumHeadBytes) bytes")
                }
                guard let end else { return nil }
                // The head's lines, each with its CRLF; the empty line that ends it left out.
                let head = buffer[position..<(end + 2)]
                position = end + 4
                scanned = position
                _ = try readHead(head)
            case .body(let remaining):
                let left = takeBody(remaining)
                guard left == 0 else {
                    state = .body(remaining: left)
                    return nil
                }
                state = .done
            case .chunkSize:
                guard let line = try line(limit: Self.maximumChunkLine, what: "chunk-size line") else { return nil }
                let size = try chunkSize(line)
                if size == 0 {
                    state = .trailer(fields: 0)
                } else {
                    guard body.count + size <= maximumBody else { throw tooLarge(body.count + size) }
                    state = .chunkData(remaining: size)
                }
            case .chunkData(let remaining):
                let left = takeBody(remaining)
                guard left == 0 else {
                    state = .chunkData(remaining: left)
                    return nil
                }
                state = .chunkDataEnd
            case .chunkDataEnd:
                guard buffer.count - position >= 2 else { return nil }
                guard buffer[position] == 0x0D, buffer[position + 1] == 0x0A else {
                    throw HTTPClientError(.malformed, message: "a chunk's data is not followed by CRLF")
                }
                position += 2
                state = .chunkSize
            case .trailer(let fields):
                guard let line = try line(limit: Self.maximumHeadBytes, what: "trailer field") else { return nil }
                if line.isEmpty {
                    state = .done
                    continue
                }
                guard fields < Self.maximumHeaderCount else {
                    throw HTTPClientError(.tooLarge, message: "the answer has more than \(Self.maximumHeaderCount) trailer fields")
                }
                _ = try Self.field(line)
                state = .trailer(fields: fields + 1)
            case .untilClose:
                guard buffer.count - position <= maximumBody else { throw tooLarge(buffer.count - position) }
                return nil
            case .done:
                return response
            }
        }
    }

    /// Moves up to `remaining` received bytes into the body; how many are still to come.
    private mutating func takeBody(_ remaining: Int) -> Int {
        let available = min(remaining, buffer.count - position)
        body.append(contentsOf: buffer[position..<(position + available)])
        position += available
        return remaining - available
    }

    /// The index of the CRLF CRLF that ends the head, searching on from where the last call stopped.
    private mutating func headEnd() -> Int? {
        var index = max(scanned, position)
        while index + 3 < buffer.count {
            if buffer[index] == 0x0D, buffer[index + 1] == 0x0A, buffer[index + 2] == 0x0D, buffer[index + 3] == 0x0A {
                return index
            }
            index += 1
        }
        scanned = max(position, buffer.count - 3)
        return nil
    }

    /// Reads a head: the status line and the fields. False when the response is interim (1xx) and
    /// another head follows; true when the body's state is set.
    private mutating func readHead(_ head: ArraySlice<UInt8>) throws(HTTPClientError) -> Bool {
        let lines = head.split(separator: 0x0A, omittingEmptySubsequences: false).dropLast()
        let statusLine = try Self.withoutCR(lines[lines.startIndex], what: "status line")
        let (code, http10) = try Self.statusLine(statusLine)
        guard lines.count - 1 <= Self.maximumHeaderCount else {
            throw HTTPClientError(.tooLarge, message: "the answer has more than \(Self.maximumHeaderCount) header fields")
        }
        var fields: [(name: String, value: String)] = []
        for raw in lines.dropFirst() {
            fields.append(try Self.field(try Self.withoutCR(raw, what: "header field")))
        }
        if (100...199).contains(code) {
            guard code != 101 else { throw HTTPClientError(.malformed, message: "the server switched protocols (101) unasked") }
            interim += 1
            guard interim <= Self.maximumInterim else {
                throw HTTPClientError(.malformed, message: "more than \(Self.maximumInterim) interim (1xx) answers")
            }
            return false  // 100 Continue and the like: the real answer follows.
        }
        status = code
        headers = fields
        keepAlive = !http10 && !Self.listContains(fields, "connection", "close")
        switch try Self.framing(fields, status: code) {
        case .length(let length):
            guard length <= maximumBody else { throw tooLarge(length) }
            state = length == 0 ? .done : .body(remaining: length)
        case .chunked:
            state = .chunkSize
        case .untilClose:
            keepAlive = false
            state = .untilClose
        }
        return true
    }

    /// A line ending in CRLF from `position`, without it; nil while incomplete.
    private mutating func line(limit: Int, what: String) throws(HTTPClientError) -> ArraySlice<UInt8>? {
        var index = position
        while index < buffer.count, buffer[index] != 0x0A {
            index += 1
        }
        guard index < buffer.count else {
            if buffer.count - position > limit { throw HTTPClientError(.tooLarge, message: "a \(what) exceeds \(limit) bytes") }
            return nil
        }
        guard index - position <= limit else { throw HTTPClientError(.tooLarge, message: "a \(what) exceeds \(limit) bytes") }
        let line = try Self.withoutCR(buffer[position..<index], what: what)
        position = index + 1
        return line
    }

    private func checkBodySize() throws(HTTPClientError) {
        guard body.count <= maximumBody else { throw tooLarge(body.count) }
    }

    private func tooLarge(_ size: Int) -> HTTPClientError {
        HTTPClientError(.tooLarge, message: "the answer's body of \(size) bytes or more exceeds the \(maximumBody) allowed")
    }

    // MARK: - Pieces

    /// `line` (which ended in LF) without its CR; a line without one is malformed.
    private static func withoutCR(_ line: ArraySlice<UInt8>, what: String) throws(HTTPClientError) -> ArraySlice<UInt8> {
        guard line.last == 0x0D else { throw HTTPClientError(.malformed, message: "a \(what) ends in LF without CR") }
        let content = line.dropLast()
        guard !content.contains(0x0D) else { throw HTTPClientError(.malformed, message: "a \(what) holds a bare CR: \(quoted(content))") }
        return content
    }

    /// `HTTP/1.1 200 OK` (the reason may be empty or absent): the code, and whether it is HTTP/1.0.
    private static func statusLine(_ line: ArraySlice<UInt8>) throws(HTTPClientError) -> (Int, Bool) {
        let bytes = Array(line)
        let prefix = Array("HTTP/1.".utf8)
        guard bytes.count >= 12, bytes.starts(with: prefix), bytes[7] == 0x30 || bytes[7] == 0x31, bytes[8] == 0x20,
              bytes[9...11].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), bytes.count == 12 || bytes[12] == 0x20,
              bytes.dropFirst(13).allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F })
        else {
            throw HTTPClientError(.malformed, message: "not an HTTP/1.1 status line: \(quoted(line))")
        }
        let code = bytes[9...11].reduce(0) { $0 * 10 + Int($1 - 0x30) }
        guard (100...599).contains(code) else {
            throw HTTPClientError(.malformed, message: "status code \(code) is outside 100-599")
        }
        return (code, bytes[7] == 0x30)
    }

    /// `name: value` with the value's surrounding spaces and tabs trimmed.
    private static func field(_ line: ArraySlice<UInt8>) throws(HTTPClientError) -> (name: String, value: String) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
              line[..<colon].allSatisfy(isTokenByte)
        else {
            let folded = line.first == 0x20 || line.first == 0x09
            throw HTTPClientError(.malformed, message: folded ? "a folded header line (obsolete line folding)"
                                                       : "not a header field: \(quoted(line))")
        }
        var value = line[(colon + 1)...]
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x20 || last == 0x09 { value = value.dropLast() }
        guard value.allSatisfy({ $0 == 0x09 || $0 >= 0x20 && $0 != 0x7F }) else {
            throw HTTPClientError(.malformed, message: "header \(quoted(line[..<colon])) holds a control character")
        }
        return (String(decoding: line[..<colon], as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// RFC 9110 token characters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"), UInt8(ascii: "'"),
             UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "^"), UInt8(ascii: "_"),
             UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }

    /// Whether a comma-separated header (`Connection`) lists `token`, any case.
    private static func listContains(_ fields: [(name: String, value: String)], _ name: String, _ token: String) -> Bool {
        fields.contains { field in
            field.name.lowercased() == name
                && field.value.split(separator: ",").contains { $0.trimmingSpaces.lowercased() == token }
        }
    }

    /// How the body of a `status` answer with these fields ends (RFC 9112 §6.3).
    private static func framing(_ fields: [(name: String, value: String)], status: Int) throws(HTTPClientError) -> Framing {
        if status == 204 || status == 304 { return .length(0) }
        let codings = fields.filter { $0.name.lowercased() == "transfer-encoding" }.map(\.value)
        let lengths = fields.filter { $0.name.lowercased() == "content-length" }.map(\.value)
        if !codings.isEmpty {
            guard lengths.isEmpty else {
                throw HTTPClientError(.malformed, message: "the answer has both Transfer-Encoding and Content-Length")
            }
            guard codings.count == 1, codings[0].lowercased() == "chunked" else {
                throw HTTPClientError(.malformed, message: "transfer coding \(PeerText.quoted(codings.joined(separator: ", "))) is not chunked alone")
            }
            return .chunked
        }
        guard let first = lengths.first else { return .untilClose }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.count <= 18,
              first.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let length = Int(first)
        else {
            throw HTTPClientError(.malformed, message: "Content-Length \(PeerText.quoted(lengths.joined(separator: ", "))) is not one number")
        }
        return .length(length)
    }

    /// A chunk-size line's size (hex, extensions after `;` ignored).
    private func chunkSize(_ line: ArraySlice<UInt8>) throws(HTTPClientError) -> Int {
        let digits = line.prefix { $0 != UInt8(ascii: ";") && $0 != 0x20 && $0 != 0x09 }
        let rest = line.dropFirst(digits.count).drop { $0 == 0x20 || $0 == 0x09 }
        guard !digits.isEmpty, digits.count <= 8, rest.isEmpty || rest.first == UInt8(ascii: ";"),
              let size = Int(String(decoding: digits, as: UTF8.self), radix: 16), size >= 0,
              digits.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x66) })
        else {
            throw HTTPClientError(.malformed, message: "not a chunk size: \(Self.quoted(line))")
        }
        return size
    }

    /// Bytes a server sent, quoted for a message.
    static func quoted(_ bytes: ArraySlice<UInt8>) -> String { PeerText.quoted(String(decoding: bytes, as: UTF8.self)) }
}

extension Substring {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text = text.dropFirst() }
        while let last = text.last, last == " " || last == "\t" { text = text.dropLast() }
        return text
    }
}
