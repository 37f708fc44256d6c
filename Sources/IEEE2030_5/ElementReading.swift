import BessBase
import ControlCore
/// Typed reads of an element's children and attributes, each refusal coded and its text quoted.
extension XMLElement {
    /// The first child named `local` in 2030.5's namespace, or in either CSIP-AUS namespace when `csipaus`.
    func child(_ local: String, csipaus: Bool = false) -> XMLElement? {
        children.first { $0.name.local == local && (csipaus ? CSIPAUSVersion(rawValue: $0.name.namespace) != nil : $0.name.namespace == SEP2Namespace.sep) }
    }

    /// Every child named `local` in 2030.5's namespace.
    func all(_ local: String) -> [XMLElement] {
        children.filter { $0.name.local == local && $0.name.namespace == SEP2Namespace.sep }
    }

    /// The child `local`, which the resource requires.
    func required(_ local: String) throws(SEP2Error) -> XMLElement {
        guard let found = child(local) else {
            throw SEP2Error(.documentUnexpected, message: "\(name) at byte \(offset) has no \(local)")
        }
        return found
    }

    /// An integer child in `range`, nil when absent.
    func integer<T: FixedWidthInteger>(_ local: String, _ type: T.Type, in range: ClosedRange<Int64>? = nil, csipaus: Bool = false) throws(SEP2Error) -> T? {
        guard let found = child(local, csipaus: csipaus) else { return nil }
        return try found.integerValue(type, in: range)
    }

    /// A required integer child.
    func requiredInteger<T: FixedWidthInteger>(_ local: String, _ type: T.Type, in range: ClosedRange<Int64>? = nil) throws(SEP2Error) -> T {
        try required(local).integerValue(type, in: range)
    }

    /// This element's text as an xsd integer of `type` (optional sign, digits, white space around) in `range`.
    func integerValue<T: FixedWidthInteger>(_ type: T.Type, in range: ClosedRange<Int64>? = nil) throws(SEP2Error) -> T {
        guard let value = Self.parseInteger(text), let typed = T(exactly: value), range.map({ $0.contains(value) }) ?? true else {
            throw SEP2Error(.valueInvalid, message: "\(name) at byte \(offset): \(quoted(text)) is not an integer of its type")
        }
        return typed
    }

    /// A boolean child (`true`, `false`, `1`, `0`), nil when absent.
    func boolean(_ local: String) throws(SEP2Error) -> Bool? {
        guard let found = child(local) else { return nil }
        switch found.text.trimmingSpace {
        case "true", "1": return true
        case "false", "0": return false
        default: throw SEP2Error(.valueInvalid, message: "\(found.name) at byte \(found.offset): \(quoted(found.text)) is not a boolean")
        }
    }

    /// A text child, nil when absent.
    func string(_ local: String) -> String? { child(local)?.text }

    /// An mRID (HexBinary128: 1–32 hex digits), as written.
    func mRID() throws(SEP2Error) -> String {
        let found = try required("mRID")
        let text = found.text.trimmingSpace
        guard (1...32).contains(text.utf8.count), text.utf8.allSatisfy({ $0.isHexDigit }) else {
            throw SEP2Error(.valueInvalid, message: "\(found.name) at byte \(found.offset): \(quoted(found.text)) is not HexBinary128")
        }
        return text
    }

    /// The `href` attribute of the child link `local` (DefaultDERControlLink), nil when absent.
    func link(_ local: String) -> String? { child(local)?.attributes[XMLName("", "href")] }

    /// An unprefixed attribute.
    func attribute(_ local: String) -> String? { attributes[XMLName("", local)] }

    /// An integer attribute, nil when absent.
    func integerAttribute<T: FixedWidthInteger>(_ local: String, _ type: T.Type) throws(SEP2Error) -> T? {
        guard let text = attribute(local) else { return nil }
        guard let value = Self.parseInteger(text), let typed = T(exactly: value) else {
            throw SEP2Error(.valueInvalid, message: "\(name) at byte \(offset): attribute \(local) \(quoted(text)) is not an integer of its type")
        }
        return typed
    }

    /// The root checked: named `local` in 2030.5's namespace.
    func expectRoot(_ local: String) throws(SEP2Error) {
        guard name == XMLName(SEP2Namespace.sep, local) else {
            throw SEP2Error(.documentUnexpected, message: "root element \(name), \(local) expected")
        }
    }

    /// An xsd integer: white space, an optional sign, 1–19 digits, white space.
    static func parseInteger(_ text: String) -> Int64? {
        let trimmed = text.trimmingSpace
        var digits = Substring(trimmed)
        var negative = false
        if let first = digits.first, first == "-" || first == "+" {
            negative = first == "-"
            digits = digits.dropFirst()
        }
        guard (1...19).contains(digits.utf8.count), digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let magnitude = Int64(digits) else { return nil }
        return negative ? -magnitude : magnitude
    }
}

extension String {
    /// The text without XML white space at either end.
    var trimmingSpace: String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}

extension UInt8 {
    /// 0–9, a–f, A–F.
    var isHexDigit: Bool { (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self) }
}
