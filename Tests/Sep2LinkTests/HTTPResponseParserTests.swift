import BessBase
import ControlCore
@testable import Sep2Link
import Testing

/// The response parser as a pure function: strict framing, bounds, and coded errors whatever bytes
/// arrive, in whatever pieces.
@Suite("HTTP response parser")
struct HTTPResponseParserTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    /// The code of the parse's failure, nil when it parsed.
    static func code(_ text: [UInt8], maximumBody: Int = 1_000) -> String? {
        do throws(HTTPClientError) {
            _ = try HTTPResponseParser.parse(text, maximumBody: maximumBody)
            return nil
        } catch {
            return "\(error.code)"
        }
    }

    @Test("HTTP bodies: Content-Length, chunked, until close, 204; 100 skipped; close and HTTP/1.0 end it")
    func framings() throws {
        let length = try HTTPResponseParser.parse(Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nX:  a b \r\n\r\nabc"), maximumBody: 10)
        #expect(length == HTTPResponse(status: 200, headers: [("Content-Length", "3"), ("X", "a b")], body: Self.bytes("abc")))
        let chunked = try HTTPResponseParser.parse(
            Self.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n2;x=y\r\nab\r\nA\r\n0123456789\r\n0\r\nT: 1\r\n\r\n"), maximumBody: 12)
        #expect(chunked.body == Self.bytes("ab0123456789"))
        let untilClose = try HTTPResponseParser.parse(Self.bytes("HTTP/1.1 200 \r\n\r\nrest"), maximumBody: 10)
        #expect(untilClose.body == Self.bytes("rest"))
        let empty = try HTTPResponseParser.parse(Self.bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204\r\n\r\n"), maximumBody: 0)
        #expect(empty.status == 204 && empty.body.isEmpty)
        var parser = HTTPResponseParser(maximumBody: 10)
        #expect(try parser.feed(Self.bytes("HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n")) != nil)
        #expect(!parser.keepAlive)
        var old = HTTPResponseParser(maximumBody: 10)
        #expect(try old.feed(Self.bytes("HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n")) != nil && !old.keepAlive)
    }

    @Test("fed one byte at a time, the same response as fed whole")
    func byteByByte() throws {
        let text = Self.bytes("HTTP/1.1 201 Created\r\nLocation: /rsps/1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        var parser = HTTPResponseParser(maximumBody: 100)
        var response: HTTPResponse?
        for byte in text {
            #expect(response == nil, "complete before the last byte")
            response = try parser.feed([byte])
        }
        #expect(response == (try HTTPResponseParser.parse(text, maximumBody: 100)))
        #expect(response?.location == "/rsps/1" && parser.keepAlive && parser.surplus == 0)
    }

    @Test("malformed answers SEP2_HTTP_MALFORMED, oversized SEP2_HTTP_TOO_LARGE, cut SEP2_HTTP_CLOSED", arguments: [
        ("HTXP/1.1 200 OK\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 20 OK\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 600 Odd\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/2 200 OK\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\nContent-Length: 0\n\n\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 101 Switching\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        (String(repeating: "HTTP/1.1 100 Continue\r\n\r\n", count: 9) + "HTTP/1.1 204\r\n\r\n", "SEP2_HTTP_MALFORMED"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 1001\r\n\r\n", "SEP2_HTTP_TOO_LARGE"),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3e9\r\n", "SEP2_HTTP_TOO_LARGE"),
        ("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab", "SEP2_HTTP_CLOSED"),
        ("HTTP/1.1 200 OK\r\n", "SEP2_HTTP_CLOSED"),
        ("", "SEP2_HTTP_CLOSED"),
    ])
    func refused(text: String, code: String) {
        #expect(Self.code(Self.bytes(text)) == code, "\(text.debugDescription)")
    }

    /// A head over 16 KiB, more than 64 fields, or a body run to the close over the bound.
    @Test("oversized heads, fields or bodies are SEP2_HTTP_TOO_LARGE")
    func bounds() {
        let long = "HTTP/1.1 200 OK\r\nX: " + String(repeating: "a", count: 17_000) + "\r\n\r\n"
        #expect(Self.code(Self.bytes(long)) == "SEP2_HTTP_TOO_LARGE")
        let many = "HTTP/1.1 200 OK\r\n" + (0..<65).map { "X\($0): 1\r\n" }.joined() + "Content-Length: 0\r\n\r\n"
        #expect(Self.code(Self.bytes(many)) == "SEP2_HTTP_TOO_LARGE")
        #expect(Self.code(Self.bytes("HTTP/1.1 200 OK\r\n\r\n") + [UInt8](repeating: 0x41, count: 1_001)) == "SEP2_HTTP_TOO_LARGE")
    }

    @Test("what the server sent reaches a message escaped")
    func escaped() {
        do throws(HTTPClientError) {
            _ = try HTTPResponseParser.parse(Self.bytes("HTTP/1.1 2\u{1B}[2J0 OK\r\n\r\n"), maximumBody: 10)
            Issue.record("parsed")
        } catch {
            #expect(error.code == .malformed && !error.message.contains("\u{1B}") && error.message.contains("\\u{1b}"), "\(error.message)")
        }
    }

    /// xorshift64*: deterministic, so a failing round repeats.
    struct XorShift: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return state &* 2_685_821_657_736_338_717
        }
    }

    /// 20000 answers.
    @Test("fuzz: random and mutated answers in pieces give a response or a bounded coded error, never a crash")
    func fuzz() {
        let seeds = [
            Self.bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"),
            Self.bytes("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;a=b\r\nhello\r\n0\r\nX: y\r\n\r\n"),
            Self.bytes("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nRetry-After: 12\r\n\r\n"),
        ]
        let alphabet = Self.bytes("HTTP/1.0 \r\n:;0123456789abcdefABCDEF-chunkedContent-LengthTransfer-Encoding") + [0, 0x1B, 0x7F, 0xFF]
        let codes: Set<String> = ["SEP2_HTTP_MALFORMED", "SEP2_HTTP_TOO_LARGE", "SEP2_HTTP_CLOSED"]
        var generator = XorShift(state: 2030_5)
        for round in 0..<20_000 {
            var input: [UInt8]
            if round % 2 == 0 {
                input = (0..<Int.random(in: 0...200, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }
            } else {
                input = seeds[round % seeds.count]
                for _ in 0..<Int.random(in: 1...4, using: &generator) where !input.isEmpty {
                    let at = Int.random(in: 0..<input.count, using: &generator)
                    switch Int.random(in: 0...2, using: &generator) {
                    case 0: input[at] = UInt8.random(in: 0...255, using: &generator)
                    case 1: input.remove(at: at)
                    default: input.insert(alphabet.randomElement(using: &generator)!, at: at)
                    }
                }
            }
            var parser = HTTPResponseParser(maximumBody: 64)
            var offset = 0
            var outcome: Result<HTTPResponse?, HTTPClientError> = .success(nil)
            while offset < input.count, case .success(nil) = outcome {
                let piece = Int.random(in: 1...16, using: &generator)
                let slice = input[offset..<min(input.count, offset + piece)]
                offset += slice.count
                outcome = Result { () throws(HTTPClientError) in try parser.feed(slice) }
            }
            if case .success(nil) = outcome {
                outcome = Result { () throws(HTTPClientError) in try parser.finish() }.map { Optional($0) }
            }
            switch outcome {
            case .success(let response?):
                #expect((100...599).contains(response.status) && response.body.count <= 64, "round \(round)")
            case .success(nil):
                Issue.record("round \(round): neither a response nor an error")
            case .failure(let error):
                #expect(codes.contains("\(error.code)"), "round \(round): \(error)")
                #expect(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value != 0x7F }, "round \(round): \(error.message)")
            }
        }
    }
}
