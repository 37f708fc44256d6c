import Glibc

/// The one lexer of JSON (RFC 8259) in a stranger's bytes, under both bounded readers (the
/// `/.well-known/csipaus` reader and the aggregator's batch reader): a cursor over the bytes that
/// takes white space, a literal, a number by the strict grammar (and its value, exact or refused),
/// an object key without escapes, and strings through `JSONStringScanner`. It trusts no length but
/// the buffer's and never moves past it; on a refusal the cursor stays where the refusal showed, so
/// each reader words it as its own coded error. The readers build their values on it.
public struct JSONLexer {
    /// The bytes read.
    public let bytes: UnsafeBufferPointer<UInt8>
    /// The next byte to read.
    public var index: Int

    /// A lexer over `bytes` from `index`.
    @inlinable public init(_ bytes: UnsafeBufferPointer<UInt8>, index: Int = 0) {
        self.bytes = bytes
        self.index = index
    }

    /// Past white space (space, tab, line feed, carriage return).
    @inlinable public mutating func skipSpace() {
        while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 { index += 1 }
    }

    /// Whether the next byte is `byte`.
    @inlinable public func at(_ byte: UInt8) -> Bool { index < bytes.count && bytes[index] == byte }

    /// Past `word` when it comes next (true); else false and the cursor stays.
    @inlinable public mutating func literal(_ word: StaticString) -> Bool {
        let n = word.utf8CodeUnitCount
        guard n <= bytes.count - index else { return false }
        let text = word.utf8Start
        for k in 0..<n where bytes[index + k] != text[k] { return false }
        index += n
        return true
    }

    /// Past a run of ASCII digits; how many.
    @inlinable public mutating func digits() -> Int {
        let start = index
        while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    /// Why a number is refused; the cursor is where the digit was wanted.
    public enum NumberFailure: Error, Equatable, Sendable, CustomStringConvertible {
        /// No digit where the integer part starts.
        case digitExpected
        /// No digit after the decimal point.
        case digitAfterPoint
        /// No digit in the exponent.
        case digitInExponent

        public var description: String {
            switch self {
            case .digitExpected: "a digit expected"
            case .digitAfterPoint: "a digit expected after '.'"
            case .digitInExponent: "a digit expected in the exponent"
            }
        }
    }

    /// Past a number by the strict grammar (`-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)? ([eE] [+-]? [0-9]+)?);
    /// its span.
    @inlinable public mutating func number() -> Result<Range<Int>, NumberFailure> {
        let start = index
        if at(UInt8(ascii: "-")) { index += 1 }
        guard index < bytes.count else { return .failure(.digitExpected) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if digits() == 0 {
            return .failure(.digitExpected)
        }
        if at(UInt8(ascii: ".")) {
            index += 1
            guard digits() > 0 else { return .failure(.digitAfterPoint) }
        }
        if at(UInt8(ascii: "e")) || at(UInt8(ascii: "E")) {
            index += 1
            if at(UInt8(ascii: "+")) || at(UInt8(ascii: "-")) { index += 1 }
            guard digits() > 0 else { return .failure(.digitInExponent) }
        }
        return .success(start..<index)
    }

    /// A number as a Double, correctly rounded (strtod in the C locale); nil beyond Double's range,
    /// and for an underflow to zero or a zero with an exponent (`1e-400`, `0e5`), which a caller's
    /// fallback decides.
    public mutating func double() -> Double? {
        guard case .success(let span) = number(), span.count < 64 else { return nil }
        let parsed = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 64) { buffer -> (Double, Int) in
            for k in 0..<span.count { buffer[k] = CChar(bitPattern: bytes[span.lowerBound + k]) }
            buffer[span.count] = 0
            var end: UnsafeMutablePointer<CChar>?
            let value = strtod(buffer.baseAddress!, &end)
            return (value, end.map { $0 - buffer.baseAddress! } ?? 0)
        }
        // strtod follows the process's locale: a decimal comma would stop it short of the span.
        guard parsed.1 == span.count else { return nil }
        let value = parsed.0
        guard value.isFinite else { return nil }
        if value == 0 {
            for k in span where bytes[k] >= UInt8(ascii: "1") && bytes[k] <= UInt8(ascii: "9") || bytes[k] | 0x20 == UInt8(ascii: "e") {
                return nil
            }
        }
        return value
    }

    /// A plain integer (no fraction, no exponent) that fits an Int64.
    @inlinable public mutating func int64() -> Int64? {
        let negative = at(UInt8(ascii: "-"))
        guard let magnitude = integer(allowMinus: true) else { return nil }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else { return nil }
            return magnitude == UInt64(Int64.max) + 1 ? Int64.min : -Int64(magnitude)
        }
        guard magnitude <= UInt64(Int64.max) else { return nil }
        return Int64(magnitude)
    }

    /// A plain non-negative integer that fits a UInt64.
    @inlinable public mutating func uint64() -> UInt64? {
        guard !at(UInt8(ascii: "-")) else { return nil }
        return integer(allowMinus: false)
    }

    /// The magnitude of a plain integer; nil for a fraction, an exponent, or overflow.
    @inlinable public mutating func integer(allowMinus: Bool) -> UInt64? {
        if allowMinus, at(UInt8(ascii: "-")) { index += 1 }
        guard index < bytes.count else { return nil }
        var value: UInt64 = 0
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            let start = index
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                let (times, o1) = value.multipliedReportingOverflow(by: 10)
                let (plus, o2) = times.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                guard !o1, !o2 else { return nil }
                value = plus
                index += 1
            }
            guard index > start else { return nil }
        }
        guard !at(UInt8(ascii: ".")), !at(UInt8(ascii: "e")), !at(UInt8(ascii: "E")) else { return nil }
        return value
    }

    /// `true` or `false`.
    @inlinable public mutating func bool() -> Bool? {
        if literal("true") { return true }
        if literal("false") { return false }
        return nil
    }

    /// An object key: a string without escapes or control characters, printable ASCII or valid
    /// UTF-8; the span between its quotes.
    @inlinable public mutating func plainKey() -> Range<Int>? {
        guard at(UInt8(ascii: "\"")) else { return nil }
        let start = index + 1
        var k = start, ascii = true
        while k < bytes.count {
            let c = bytes[k]
            if c == UInt8(ascii: "\"") { break }
            if c == UInt8(ascii: "\\") || c < 0x20 { return nil }
            if c >= 0x80 { ascii = false }
            k += 1
        }
        guard k < bytes.count, ascii || JSONStringScanner.isValidUTF8(UnsafeBufferPointer(rebasing: bytes[start..<k])) else { return nil }
        index = k + 1
        return start..<k
    }

    /// Whether the spans `a` and `b` hold the same bytes.
    @inlinable public func same(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        guard a.count == b.count else { return false }
        for k in 0..<a.count where bytes[a.lowerBound + k] != bytes[b.lowerBound + k] { return false }
        return true
    }

    /// Whether the span `span` holds `name`.
    @inlinable public func key(_ span: Range<Int>, is name: StaticString) -> Bool {
        guard span.count == name.utf8CodeUnitCount else { return false }
        let text = name.utf8Start
        for k in 0..<span.count where bytes[span.lowerBound + k] != text[k] { return false }
        return true
    }

    /// The string at the cursor (its opening quote), escapes resolved (`JSONStringScanner.read`);
    /// on a refusal the cursor moves to where it showed.
    @inlinable public mutating func string(maximumBytes: Int = .max, surrogatePairs: Bool = true) throws(JSONStringScanner.Failure) -> String {
        do throws(JSONStringScanner.Failure) {
            let (text, end) = try JSONStringScanner.read(bytes, quote: index, maximumBytes: maximumBytes, surrogatePairs: surrogatePairs)
            index = end
            return text
        } catch {
            index = error.offset
            throw error
        }
    }

    /// Past the string at the cursor, checked as `string` checks it, without making its text; on a
    /// refusal the cursor stays.
    @inlinable public mutating func skipString(surrogatePairs: Bool = true) -> Bool {
        guard at(UInt8(ascii: "\"")), let span = try? JSONStringScanner.scan(bytes, quote: index, surrogatePairs: surrogatePairs) else { return false }
        index = span.end
        return true
    }
}
