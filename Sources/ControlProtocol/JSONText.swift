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
        var text = JSONText()
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
        #if DEBUG
        if let last = lastKeys.last ?? nil {
            assert(Array(last.utf8).lexicographicallyPrecedes(Array(key.utf8)), "JSON keys out of order: \(last) before \(key)")
        }
        if !lastKeys.isEmpty { lastKeys[lastKeys.count - 1] = key }
        #endif
        string(key)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
        value.write(to: &self)
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

    public mutating func integer(_ n: some BinaryInteger) { raw(String(n)) }

    /// Integral values within ±2⁵³ as integers (as JSONSerialization writes them, so a reader taking
    /// an integer still gets one); others as Swift's shortest round-trip text; non-finite as null.
    public mutating func number(_ x: Double) {
        guard x.isFinite else { return null() }
        if x == x.rounded(), abs(x) <= 9_007_199_254_740_992 {
            raw(String(Int64(x)))
        } else {
            raw(x.description)
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    /// A string with `"`, `\` and every control character escaped; other UTF-8 passes through.
    public mutating func string(_ s: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
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
        bytes.append(UInt8(ascii: "\""))
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
