import BessBase
import BessSystem
import ControlCore
import Sep2Link

/// An HTTP/1.1 answer as the utility's 2030.5 server (or anyone on the path) sends it, into
/// `HTTPResponseParser` (`Sources/Sep2Link`): once whole (`parse`: one feed, then the close) and once
/// in pieces as TCP may deliver them. The first input byte picks the body limit, the second how the
/// bytes are cut (0: one byte at a time; n: pieces of 1…n bytes from a generator the byte seeds);
/// the rest is what the server sent.
///
/// Invariants: a refusal is `SEP2_HTTP_MALFORMED`, `SEP2_HTTP_TOO_LARGE` or `SEP2_HTTP_CLOSED` with a
/// message of printable ASCII only (what the server sent is quoted, never raw); an answer is final
/// (200–599) with a body within the limit, header names of token characters and values without
/// control characters but tab, and a body as long as its Content-Length when it has one and no
/// Transfer-Encoding (none at all for 204 and 304); the pieces give exactly what the whole gives
/// (the same answer, or a refusal with the same code), the same connection verdict and the same
/// bytes consumed; a finished parser takes nothing more.
enum HTTPHarness {
    static let codes: [HTTPClientErrorCode] = [.malformed, .tooLarge, .closed]
    /// The body limits a first byte picks from (the client's own is 256 KiB).
    static let limits = [0, 1, 64, 4_096, 262_144]

    /// What one reading of the bytes came to.
    struct Outcome {
        var response: HTTPResponse?
        var code: HTTPClientErrorCode?
        var keepAlive = true
        var consumed = 0
    }

    static func run(_ input: inout FuzzInput) -> [String] {
        var violations = Violations()
        let maximumBody = limits[Int(input.u8()) % limits.count]
        let cut = input.u8()
        let bytes = input.rest()

        var whole = Outcome()
        do {
            var parser = HTTPResponseParser(maximumBody: maximumBody)
            var response = try parser.feed(bytes)
            if response == nil { response = try parser.finish() }
            whole = Outcome(response: response, keepAlive: parser.keepAlive, consumed: parser.received - parser.surplus)
            let more = try parser.feed([0x48])
            violations.check(more == nil, "a finished parser took more")
        } catch {
            check(error, &violations)
            whole.code = error.code
        }
        // The same through `parse`, the form the client's tests use.
        do {
            let response = try HTTPResponseParser.parse(bytes, maximumBody: maximumBody)
            violations.check(response == whole.response, "parse differs from feed and finish")
        } catch {
            violations.check(error.code == whole.code, "parse refused with \(error.code), feed with \(String(describing: whole.code))")
        }
        if let response = whole.response { check(response, maximumBody: maximumBody, &violations) }

        let pieces = split(bytes.count, cut)
        var pieced = Outcome()
        do {
            var parser = HTTPResponseParser(maximumBody: maximumBody)
            var response: HTTPResponse?
            var start = 0
            for length in pieces where response == nil {
                response = try parser.feed(bytes[start..<(start + length)])
                start += length
            }
            if response == nil { response = try parser.finish() }
            pieced = Outcome(response: response, keepAlive: parser.keepAlive, consumed: parser.received - parser.surplus)
        } catch {
            check(error, &violations)
            pieced.code = error.code
        }
        violations.check(pieced.code == whole.code, "in \(pieces.count) pieces refused with \(String(describing: pieced.code)), whole with \(String(describing: whole.code))")
        violations.check(pieced.response == whole.response, "in \(pieces.count) pieces a different answer than whole")
        if whole.response != nil, pieced.response != nil {
            violations.check(pieced.keepAlive == whole.keepAlive, "in pieces keep-alive \(pieced.keepAlive), whole \(whole.keepAlive)")
            violations.check(pieced.consumed == whole.consumed, "in pieces \(pieced.consumed) bytes consumed, whole \(whole.consumed)")
        }
        return violations.list
    }

    /// Piece lengths summing to `count`: one byte each for 0, else 1…`cut` from a generator it seeds.
    static func split(_ count: Int, _ cut: UInt8) -> [Int] {
        var lengths: [Int] = []
        var left = count
        var state = UInt32(cut) &* 2_654_435_761 | 1
        while left > 0 {
            state = state &* 1_664_525 &+ 1_013_904_223
            let length = cut == 0 ? 1 : min(left, 1 + Int(state >> 16) % Int(cut))
            lengths.append(length)
            left -= length
        }
        return lengths
    }

    static func check(_ error: HTTPClientError, _ violations: inout Violations) {
        violations.check(codes.contains(error.code), "refused with \(error.code)")
        violations.check(error.message.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7F || $0 == "…" },
                         "a message with unescaped text: \(error.message.unicodeScalars.map { String($0.value, radix: 16) }.prefix(40))")
    }

    static func check(_ response: HTTPResponse, maximumBody: Int, _ violations: inout Violations) {
        violations.check((200...599).contains(response.status), "an answer with status \(response.status)")
        violations.check(response.body.count <= maximumBody, "a body of \(response.body.count) bytes over \(maximumBody)")
        for (name, value) in response.headers {
            violations.check(!name.isEmpty && name.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F && !"\"(),/:;<=>?@[\\]{}".utf8.contains($0) },
                             "a header name that is not a token: \(PeerText.quoted(name))")
            violations.check(value.unicodeScalars.allSatisfy { $0 == "\t" || $0.value >= 0x20 && $0.value != 0x7F }, "a header value with a control character")
        }
        if response.status == 204 || response.status == 304 {
            violations.check(response.body.isEmpty, "a \(response.status) with a body")
        } else if response.header("Transfer-Encoding") == nil, let length = response.header("Content-Length") {
            violations.check(Int(length) == response.body.count, "Content-Length \(PeerText.quoted(length)) with \(response.body.count) bytes")
        }
    }

    /// Answers a 2030.5 server gives (a document with Content-Length, chunked with a trailer, 429 with
    /// Retry-After, 100-continue then 204, 201 with Location, HTTP/1.0 to the close, a redirect), each
    /// whole-ish, in small pieces and byte by byte.
    static func seeds() -> [[UInt8]] {
        let document = "<DeviceCapability xmlns=\"urn:ieee:std:2030.5:ns\" href=\"/dcap\" pollRate=\"900\"><TimeLink href=\"/tm\"/>"
            + "<EndDeviceListLink href=\"/edev\" all=\"1\"/></DeviceCapability>"
        let type = "Content-Type: application/sep+xml\r\n"
        let chunks = stride(from: 0, to: document.utf8.count, by: 40).map { start in
            let piece = document.utf8.dropFirst(start).prefix(40)
            return String(piece.count, radix: 16) + (start == 0 ? ";name=first" : "") + "\r\n" + String(decoding: piece, as: UTF8.self) + "\r\n"
        }.joined()
        let answers = [
            "HTTP/1.1 200 OK\r\n\(type)Content-Length: \(document.utf8.count)\r\n\r\n\(document)",
            "HTTP/1.1 200 OK\r\n\(type)Transfer-Encoding: chunked\r\n\r\n\(chunks)0\r\nX-Checksum: 1\r\n\r\n",
            "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 120\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n",
            "HTTP/1.1 201 Created\r\nLocation: /mup/3\r\nContent-Length: 0\r\n\r\n",
            "HTTP/1.0 200 OK\r\n\(type)\r\n\(document)",
            "HTTP/1.1 301 Moved Permanently\r\nLocation: /dcap2\r\nContent-Length: 5\r\n\r\nmoved",
        ]
        return answers.enumerated().flatMap { index, answer in
            [[3, 255], [UInt8(index % 5), 7], [4, 0]].map { $0 + Array(answer.utf8) }
        }
    }
}
