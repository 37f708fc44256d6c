import Foundation

/// Compact JSON written straight to bytes from the `[String: Any]` trees bessd answers with.
///
/// The control socket answers `bessctl status` (and every reader polling it) from the service
/// thread. Foundation's `JSONSerialization` spends most of that thread's time on an answer in
/// dynamic casts and in sorting keys by locale-aware collation; this writer dispatches on each
/// value's exact type and sorts keys by code point (the costs of both: hil/results/README.md,
/// "Figures behind the code"). Keys are in code-point order; Foundation's collation orders
/// differently only keys that differ in letter case or in the length of a number.
///
/// It knows the types the answers are built from: `String`, `Double`, `Int`, `Int64`, `UInt64`,
/// `Int32`, `UInt32`, `Bool`, `NSNull`, arrays and string-keyed dictionaries of those. A
/// non-finite `Double` is written as `null` (JSON has no NaN). Any other value (an `NSNumber`, an
/// `Optional`, a `Date`…) makes `encode` return nil, and the caller falls back to
/// `JSONSerialization`, so an answer is never cut short by this writer.
public enum JSONText {
    /// `object` as one line of compact JSON (no trailing newline), keys in code-point order; nil
    /// when it holds a value this writer does not know.
    public static func encode(_ object: [String: Any]) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        return write(object, &out) ? out : nil
    }

    /// `object` as the one line a control-socket answer is: this writer's text, or Foundation's
    /// for a value this writer does not know (`{}` if neither can write it), then a newline.
    public static func line(_ object: [String: Any]) -> [UInt8] {
        var bytes = encode(object)
            ?? Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
        bytes.append(0x0A)
        return bytes
    }

    private static func write(_ value: Any, _ out: inout [UInt8]) -> Bool {
        // Exact types first: a cast would also accept an NSNumber as a Double or a Bool.
        let type = Swift.type(of: value)
        if type == String.self {
            string(value as! String, &out)
        } else if type == Double.self {
            number(value as! Double, &out)
        } else if type == Int.self {
            out.append(contentsOf: String(value as! Int).utf8)
        } else if type == Bool.self {
            out.append(contentsOf: (value as! Bool) ? "true".utf8 : "false".utf8)
        } else if type == NSNull.self {
            out.append(contentsOf: "null".utf8)
        } else if type == Int64.self {
            out.append(contentsOf: String(value as! Int64).utf8)
        } else if type == UInt64.self {
            out.append(contentsOf: String(value as! UInt64).utf8)
        } else if type == Int32.self {
            out.append(contentsOf: String(value as! Int32).utf8)
        } else if type == UInt32.self {
            out.append(contentsOf: String(value as! UInt32).utf8)
        } else if let object = value as? [String: Any] {
            // Containers by cast (any element type): their elements are dispatched by exact type.
            out.append(UInt8(ascii: "{"))
            for (i, key) in object.keys.sorted().enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                string(key, &out)
                out.append(UInt8(ascii: ":"))
                guard write(object[key]!, &out) else { return false }
            }
            out.append(UInt8(ascii: "}"))
        } else if let array = value as? [Any] {
            out.append(UInt8(ascii: "["))
            for (i, element) in array.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                guard write(element, &out) else { return false }
            }
            out.append(UInt8(ascii: "]"))
        } else {
            return false
        }
        return true
    }

    /// Integral values within ±2⁵³ as integers (as JSONSerialization writes them, so a reader
    /// taking `as? Int` still gets one); others as Swift's shortest round-trip text.
    private static func number(_ x: Double, _ out: inout [UInt8]) {
        guard x.isFinite else {
            out.append(contentsOf: "null".utf8)
            return
        }
        if x == x.rounded(), abs(x) <= 9_007_199_254_740_992 {
            out.append(contentsOf: String(Int64(x)).utf8)
        } else {
            out.append(contentsOf: x.description.utf8)
        }
    }

    private static let hex = Array("0123456789abcdef".utf8)

    private static func string(_ s: String, _ out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(contentsOf: [UInt8(ascii: "\\"), byte])
            case 0x0A: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                out.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"),
                                        hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]])
            default: out.append(byte)  // UTF-8 passes through: JSON text is UTF-8
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
