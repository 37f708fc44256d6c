/// A JSON (RFC 8259 §7) string in a stranger's bytes: the one reader of string escapes for the readers of
/// JSON that peers send (the `/.well-known/csipaus` reader, the aggregator's batch reader).
///
/// `scan` walks the string once without writing anything: it checks the escapes (`\" \\ \/ \b \f \n \r
/// \t`, `\uXXXX` with surrogate pairs), refuses raw control characters and invalid UTF-8, enforces the
/// caller's bound on the decoded length, and finds the closing quote; it trusts no length but the
/// buffer's. `read` then makes the text with one allocation, the string's own (none for a short one).
/// A refusal says why and at which offset, one past the byte that showed it (the offending hex digit
/// itself), so each caller words it as its own coded error.
public enum JSONStringScanner {
    /// A string that `scan` checked: where its text lies and how long it is once decoded.
    public struct Span: Hashable, Sendable {
        /// The bytes between the quotes.
        public let content: Range<Int>
        /// The text's length in UTF-8 bytes, escapes resolved: at most the bound it was scanned with.
        public let decodedCount: Int
        /// Whether the content holds an escape; if not, the text is the content's bytes.
        public let escaped: Bool
        /// The offset just past the closing quote.
        public var end: Int { content.upperBound + 1 }
    }

    /// Why a string is refused, and where.
    public struct Failure: Error, Hashable, Sendable, CustomStringConvertible {
        /// Why a string is refused.
        public enum Reason: Hashable, Sendable, CustomStringConvertible {
            /// The bytes end before the closing quote.
            case unterminated
            /// The decoded text would be longer than the caller's bound.
            case tooLong(maximumBytes: Int)
            /// A raw byte below 0x20.
            case controlCharacter
            /// Raw bytes that are not well-formed UTF-8 (said at the closing quote, after every other check).
            case notUTF8
            /// `\u` not followed by four hex digits.
            case badHex
            /// A high surrogate without a low one after it, or a low one alone.
            case loneSurrogate
            /// Any escaped surrogate, where the caller asked for none (`surrogatePairs: false`).
            case escapedSurrogate
            /// A backslash before anything but `" \ / b f n r t u`.
            case unknownEscape

            /// What is wrong, in words (`a lone surrogate`).
            public var description: String {
                switch self {
                case .unterminated: "the string does not end"
                case .tooLong(let maximumBytes): "a string longer than \(maximumBytes) bytes"
                case .controlCharacter: "a control character in a string"
                case .notUTF8: "a string that is not UTF-8"
                case .badHex: "four hex digits expected after \\u"
                case .loneSurrogate: "a lone surrogate"
                case .escapedSurrogate: "an escaped surrogate"
                case .unknownEscape: "an unknown escape"
                }
            }
        }

        /// Why.
        public var reason: Reason
        /// Where the reader stopped: one past the byte that showed the fault (for a bad hex digit, the
        /// digit's own offset; for the bound, the offset of the byte it would read next).
        public var offset: Int

        /// `byte N: reason`.
        public var description: String { "byte \(offset): \(reason)" }
    }

    static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\"), u = UInt8(ascii: "u")
    static let highSurrogates: Range<UInt32> = 0xD800..<0xDC00, lowSurrogates: Range<UInt32> = 0xDC00..<0xE000

    /// Checks the string whose opening quote is at `quote` (which must be a `"` inside `bytes`) and finds
    /// its end. `maximumBytes` bounds the decoded text; `surrogatePairs: false` refuses every escaped
    /// surrogate (`escapedSurrogate`) for a caller that leaves them to another decoder.
    public static func scan(_ bytes: UnsafeBufferPointer<UInt8>, quote: Int, maximumBytes: Int = .max,
                            surrogatePairs: Bool = true) throws(Failure) -> Span {
        precondition(quote >= 0 && quote < bytes.count && bytes[quote] == Self.quote, "scan starts at a string's opening quote")
        let start = quote + 1
        var k = start, decoded = 0, escaped = false
        // The raw bytes since the last escape (checked as UTF-8 when it ends), whether they hold a byte
        // ≥ 0x80, and whether every run so far was valid: a fault is said at the closing quote.
        var run = start, wide = false, valid = true
        while true {
            guard k < bytes.count else { throw Failure(reason: .unterminated, offset: k) }
            guard decoded <= maximumBytes else { throw Failure(reason: .tooLong(maximumBytes: maximumBytes), offset: k) }
            let byte = bytes[k]
            k += 1
            if byte == Self.quote {
                if wide, valid { valid = isValidUTF8(UnsafeBufferPointer(rebasing: bytes[run..<(k - 1)])) }
                guard valid else { throw Failure(reason: .notUTF8, offset: k) }
                return Span(content: start..<(k - 1), decodedCount: decoded, escaped: escaped)
            }
            guard byte >= 0x20 else { throw Failure(reason: .controlCharacter, offset: k) }
            guard byte == Self.backslash else {
                decoded += 1
                if byte >= 0x80 { wide = true }
                continue
            }
            if wide, valid { valid = isValidUTF8(UnsafeBufferPointer(rebasing: bytes[run..<(k - 1)])) }
            wide = false
            escaped = true
            guard k < bytes.count else { throw Failure(reason: .unterminated, offset: k) }
            let escape = bytes[k]
            k += 1
            switch escape {
            case Self.quote, Self.backslash, UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"), UInt8(ascii: "n"), UInt8(ascii: "r"),
                 UInt8(ascii: "t"):
                decoded += 1
            case Self.u:
                var code = try hex4(bytes, &k)
                if highSurrogates.contains(code) {
                    guard surrogatePairs else { throw Failure(reason: .escapedSurrogate, offset: k) }
                    guard bytes.count - k >= 2, bytes[k] == Self.backslash, bytes[k + 1] == Self.u else {
                        throw Failure(reason: .loneSurrogate, offset: k)
                    }
                    k += 2
                    let low = try hex4(bytes, &k)
                    guard lowSurrogates.contains(low) else { throw Failure(reason: .loneSurrogate, offset: k) }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                } else if lowSurrogates.contains(code) {
                    throw Failure(reason: surrogatePairs ? .loneSurrogate : .escapedSurrogate, offset: k)
                }
                decoded += utf8Count(code)
            default:
                throw Failure(reason: .unknownEscape, offset: k)
            }
            run = k
        }
    }

    /// The text of the string whose opening quote is at `quote`, and the offset just past its closing quote:
    /// `scan`, then the text made in place (one allocation, the string's; none for a short one).
    public static func read(_ bytes: UnsafeBufferPointer<UInt8>, quote: Int, maximumBytes: Int = .max,
                            surrogatePairs: Bool = true) throws(Failure) -> (text: String, end: Int) {
        let span = try scan(bytes, quote: quote, maximumBytes: maximumBytes, surrogatePairs: surrogatePairs)
        return (decode(bytes, span), span.end)
    }

    /// The text of a span `scan` made of these same bytes (so every escape in it is well formed).
    static func decode(_ bytes: UnsafeBufferPointer<UInt8>, _ span: Span) -> String {
        let content = UnsafeBufferPointer(rebasing: bytes[span.content])
        guard span.escaped else { return String(decoding: content, as: UTF8.self) }
        return String(unsafeUninitializedCapacity: span.decodedCount) { out in
            var k = 0, n = 0
            func put(_ byte: UInt8) {
                precondition(n < out.count, "a span decodes to its decodedCount")
                out[n] = byte
                n += 1
            }
            while k < content.count {
                let byte = content[k]
                k += 1
                guard byte == Self.backslash else {
                    put(byte)
                    continue
                }
                let escape = content[k]
                k += 1
                switch escape {
                case UInt8(ascii: "b"): put(0x08)
                case UInt8(ascii: "f"): put(0x0C)
                case UInt8(ascii: "n"): put(0x0A)
                case UInt8(ascii: "r"): put(0x0D)
                case UInt8(ascii: "t"): put(0x09)
                case Self.u:
                    var code = hexValue(content, k)
                    k += 4
                    if highSurrogates.contains(code) {
                        code = 0x10000 + ((code - 0xD800) << 10) + (hexValue(content, k + 2) - 0xDC00)
                        k += 6
                    }
                    // A scalar, as scan checked: 1 to 4 bytes.
                    switch code {
                    case ..<0x80:
                        put(UInt8(code))
                    case ..<0x800:
                        put(UInt8(0xC0 | code >> 6))
                        put(UInt8(0x80 | code & 0x3F))
                    case ..<0x10000:
                        put(UInt8(0xE0 | code >> 12))
                        put(UInt8(0x80 | code >> 6 & 0x3F))
                        put(UInt8(0x80 | code & 0x3F))
                    default:
                        put(UInt8(0xF0 | code >> 18))
                        put(UInt8(0x80 | code >> 12 & 0x3F))
                        put(UInt8(0x80 | code >> 6 & 0x3F))
                        put(UInt8(0x80 | code & 0x3F))
                    }
                default:
                    put(escape)  // " \ /
                }
            }
            return n
        }
    }

    /// Whether `bytes` are well-formed UTF-8 (Unicode's table 3-7: no overlong forms, no surrogates, nothing
    /// past U+10FFFF).
    public static func isValidUTF8(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var decoder = UTF8()
        var iterator = bytes.makeIterator()
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue: continue
            case .emptyInput: return true
            case .error: return false
            }
        }
    }

    /// Four hex digits at `k`, `k` moved past them; refused at the first that is not one (or at `k` when
    /// fewer than four bytes are left).
    static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, _ k: inout Int) throws(Failure) -> UInt32 {
        guard bytes.count - k >= 4 else { throw Failure(reason: .badHex, offset: k) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = hexDigit(bytes[k]) else { throw Failure(reason: .badHex, offset: k) }
            value = value << 4 | digit
            k += 1
        }
        return value
    }

    /// Four hex digits at `k` that `hex4` has already checked.
    static func hexValue(_ bytes: UnsafeBufferPointer<UInt8>, _ k: Int) -> UInt32 {
        var value: UInt32 = 0
        for offset in k..<(k + 4) { value = value << 4 | (hexDigit(bytes[offset]) ?? 0) }
        return value
    }

    static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// The UTF-8 length of a scalar.
    static func utf8Count(_ code: UInt32) -> Int {
        switch code {
        case ..<0x80: 1
        case ..<0x800: 2
        case ..<0x10000: 3
        default: 4
        }
    }
}
