/// Compact JSON written straight to bytes: the writer the control socket's typed replies write
/// themselves through (`ControlReply`).
///
/// The service thread answers `bessctl status` (and every reader polling it); this writer costs it
/// no dynamic casts, no key sorting and no intermediate tree: a reply writes its fields in
/// code-point order of their keys (checked in debug builds), numbers as JSONSerialization writes
/// them (integral values within ±2⁵³ as integers), a non-finite `Double` as `null` (JSON has no
/// NaN), and every string escaped so that an answer stays one line.
public struct JSONText {
    /// The text written so far.
    public private(set) var bytes: [UInt8] = []
    /// Whether the next value or key needs a comma before it.
    private var needsComma = false
    #if DEBUG
    /// The last key of each open object, innermost last: keys must come in code-point order.
    private var lastKeys: [String?] = []
    #endif

    public init(capacity: Int = 1024) { bytes.reserveCapacity(capacity) }

    /// `value` as one line of compact JSON, without its newline.
    public static func encode(_ value: some JSONWritable) -> [UInt8] {
        var text = JSONText()
        value.write(to: &text)
        return text.bytes
    }

    /// `value` as the one line a control-socket answer is, newline included.
    public static func line(_ value: some JSONWritable) -> [UInt8] {
        // One allocation for most answers: a status of 8 units is about 2.5 kB.
        var text = JSONText(capacity: 4096)
        value.write(to: &text)
        text.bytes.append(0x0A)
        return text.bytes
    }

    // MARK: objects and arrays

    /// Opens an object: `field` calls follow, then `endObject`.
    public mutating func beginObject() {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        #if DEBUG
        lastKeys.append(nil)
        #endif
    }

    public mutating func endObject() {
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
        #if DEBUG
        lastKeys.removeLast()
        #endif
    }

    /// One field of the open object; keys must come in code-point order.
    public mutating func field(_ key: String, _ value: some JSONWritable) {
        self.key(key)
        value.write(to: &self)
    }

    /// A field's key and its colon; keys must come in code-point order.
    private mutating func key(_ key: String) {
        #if DEBUG
        if let last = lastKeys.last ?? nil {
            assert(Array(last.utf8).lexicographicallyPrecedes(Array(key.utf8)), "JSON keys out of order: \(last) before \(key)")
        }
        if !lastKeys.isEmpty { lastKeys[lastKeys.count - 1] = key }
        #endif
        string(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    // The fields of the replies' scalar types, written without going through the generic
    // `JSONWritable` witness (the runtime's metadata lookups for `Optional<Double>` and the like
    // were a fifth of a status answer's writing).

    /// A number field; nil and non-finite as `null`.
    public mutating func field(_ key: some CodingKey, _ value: Double?) {
        self.key(key.stringValue)
        if let value { number(value) } else { null() }
    }

    /// A string field; nil as `null`.
    public mutating func field(_ key: some CodingKey, _ value: String?) {
        self.key(key.stringValue)
        if let value { string(value) } else { null() }
    }

    /// A boolean field; nil as `null`.
    public mutating func field(_ key: some CodingKey, _ value: Bool?) {
        self.key(key.stringValue)
        if let value { bool(value) } else { null() }
    }

    /// An integer field.
    public mutating func field(_ key: some CodingKey, _ value: Int64) {
        self.key(key.stringValue)
        digits(value.magnitude, negative: value < 0)
    }

    /// An integer field.
    public mutating func field(_ key: some CodingKey, _ value: Int) { field(key, Int64(value)) }

    /// An unsigned integer field.
    public mutating func field(_ key: some CodingKey, _ value: UInt64) {
        self.key(key.stringValue)
        digits(value, negative: false)
    }

    /// An array of strings.
    public mutating func field(_ key: some CodingKey, _ value: [String]) {
        self.key(key.stringValue)
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for element in value { string(element) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    /// One field named by a `CodingKey` (the key the reply's `Decodable` reads).
    public mutating func field(_ key: some CodingKey, _ value: some JSONWritable) {
        field(key.stringValue, value)
    }

    /// The field when `value` is not nil; nothing (not `null`) when it is.
    public mutating func field(_ key: some CodingKey, ifPresent value: (some JSONWritable)?) {
        if let value { field(key.stringValue, value) }
    }

    /// A JSON array of `elements`.
    public mutating func array<S: Sequence>(_ elements: S) where S.Element: JSONWritable {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for element in elements { element.write(to: &self) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    // MARK: values

    public mutating func null() { raw("null") }

    public mutating func bool(_ b: Bool) { raw(b ? "true" : "false") }

    public mutating func integer(_ n: some BinaryInteger) {
        if let v = Int64(exactly: n) {
            digits(v.magnitude, negative: v < 0)
        } else if let v = UInt64(exactly: n) {
            digits(v, negative: false)
        } else {
            raw(String(n))
        }
    }

    /// Integral values within ±2⁵³ as integers (as JSONSerialization writes them, so a reader taking
    /// an integer still gets one); others as Swift's shortest round-trip text; non-finite as null.
    public mutating func number(_ x: Double) {
        guard x.isFinite else { return null() }
        if x == x.rounded(), abs(x) <= 9_007_199_254_740_992 {
            let n = Int64(x)
            digits(n.magnitude, negative: n < 0)
        } else {
            raw(x.description)
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// A string with `"`, `\` and every control character escaped; other UTF-8 passes through.
    public mutating func string(_ s: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        // Most strings (keys, ids, codes) need no escape: their bytes go in with one copy.
        let copied = s.utf8.withContiguousStorageIfAvailable { utf8 in
            guard !utf8.contains(where: Self.needsEscape) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        } ?? false
        if !copied { escaped(s) }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    /// Whether a byte of a string must be written as an escape.
    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    /// The string's bytes, each that needs it escaped (between the quotes `string` writes).
    private mutating func escaped(_ s: String) {
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), byte])
            case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                          Self.hex[Int(byte >> 4)], Self.hex[Int(byte & 0x0F)]])
            default: bytes.append(byte)  // UTF-8 passes through: JSON text is UTF-8
            }
        }
    }

    /// A decimal integer written digit by digit into the text, without an intermediate `String`.
    private mutating func digits(_ magnitude: UInt64, negative: Bool) {
        separate()
        if negative { bytes.append(UInt8(ascii: "-")) }
        let start = bytes.count
        var rest = magnitude
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10))
            rest /= 10
        } while rest > 0
        bytes[start...].reverse()
        needsComma = true
    }

    private mutating func raw(_ text: String) {
        separate()
        bytes.append(contentsOf: text.utf8)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}

/// A value that writes itself as JSON through `JSONText`.
public protocol JSONWritable {
    func write(to json: inout JSONText)
}

extension String: JSONWritable {
    public func write(to json: inout JSONText) { json.string(self) }
}

extension Double: JSONWritable {
    public func write(to json: inout JSONText) { json.number(self) }
}

extension Bool: JSONWritable {
    public func write(to json: inout JSONText) { json.bool(self) }
}

extension Int: JSONWritable {
    public func write(to json: inout JSONText) { json.integer(self) }
}

extension Int64: JSONWritable {
    public func write(to json: inout JSONText) { json.integer(self) }
}

extension UInt64: JSONWritable {
    public func write(to json: inout JSONText) { json.integer(self) }
}

extension Optional: JSONWritable where Wrapped: JSONWritable {
    /// The value, or `null`.
    public func write(to json: inout JSONText) {
        if let self { self.write(to: &json) } else { json.null() }
    }
}

extension Array: JSONWritable where Element: JSONWritable {
    public func write(to json: inout JSONText) { json.array(self) }
}
