public import BessBase
import ControlCore

/// A bounded writer of the 2030.5 documents bessd sends: elements in the standard's namespace
/// (`urn:ieee:std:2030.5:ns`, the root's default) and, when the document is given a CSIP-AUS version, that
/// version's namespace under the prefix `csipaus` (`https://csipaus.org/ns` or `https://csipaus.org/ns/v1.3`,
/// the one the server uses).
///
/// Every text and attribute value is escaped (`&`, `<`, `>`, and in attributes `"`, `'`, tab, line feed
/// and carriage return as references), so an mRID or href the server sent cannot change the document's
/// structure. What XML 1.0 cannot carry at all (control characters other than tab, LF and CR, U+FFFE,
/// U+FFFF), a name that is not a plain ASCII name, or output past `maximumBytes` makes `finish()` throw
/// (`SEP2_VALUE_INVALID`, `SEP2_XML_OVERSIZED`); the writer stops appending at the first failure.
public struct XMLWriter: Sendable {
    /// The default bound on a written document, bytes (a DER status or a reading list is well under 4 KiB).
    public static let defaultMaximumBytes = 65_536
    /// The prefix CSIP-AUS elements are written with.
    public static let csipausPrefix = "csipaus"

    /// The bound on the document's size, bytes.
    public let maximumBytes: Int
    /// The CSIP-AUS namespace the root declares, nil when the document uses none.
    public let csipaus: CSIPAUSVersion?
    private var bytes: [UInt8] = []
    private var open: [String] = []
    private var failure: SEP2Error?
    private var startTagOpen = false

    /// Starts a document whose root element `root` declares 2030.5's namespace as the default and, with
    /// `csipaus`, that CSIP-AUS version's under the prefix `csipaus`; with `rootInCSIPAUS` the root is
    /// itself a CSIP-AUS element (`csipaus:ConnectionPoint`).
    public init(root: String, csipaus: CSIPAUSVersion? = nil, rootInCSIPAUS: Bool = false, attributes: [(name: String, value: String)] = [],
                maximumBytes: Int = XMLWriter.defaultMaximumBytes) {
        self.maximumBytes = maximumBytes
        self.csipaus = csipaus
        var declared = [(name: "xmlns", value: SEP2Namespace.sep)]
        if let csipaus { declared.append((name: "xmlns:\(Self.csipausPrefix)", value: csipaus.namespace)) }
        start(root, csipaus: rootInCSIPAUS, attributes: declared + attributes)
    }

    /// Opens `name` (in CSIP-AUS's namespace when `csipaus`) with `attributes`; `close()` ends it.
    public mutating func start(_ name: String, csipaus: Bool = false, attributes: [(name: String, value: String)] = []) {
        guard let qualified = qualify(name, csipaus: csipaus) else { return }
        endStartTag()
        append("<")
        append(qualified)
        for attribute in attributes {
            guard Self.isName(attribute.name, allowColon: true) else {
                fail(SEP2Error(.valueInvalid, message: "attribute name \(quoted(attribute.name)) is not an XML name"))
                return
            }
            append(" ")
            append(attribute.name)
            append("=\"")
            escape(attribute.value, inAttribute: true)
            append("\"")
        }
        open.append(qualified)
        startTagOpen = true
    }

    /// Ends the innermost open element (an element with nothing inside is written as `<name/>`).
    public mutating func close() {
        guard failure == nil, let name = open.popLast() else { return }
        if startTagOpen {
            append("/>")
            startTagOpen = false
        } else {
            append("</")
            append(name)
            append(">")
        }
    }

    /// `<name>text</name>`, the text escaped.
    public mutating func element(_ name: String, _ text: String, csipaus: Bool = false) {
        start(name, csipaus: csipaus)
        guard failure == nil else { return }
        endStartTag()
        escape(text, inAttribute: false)
        close()
    }

    /// `<name>value</name>` in decimal.
    public mutating func element(_ name: String, _ value: some BinaryInteger, csipaus: Bool = false) {
        element(name, String(value), csipaus: csipaus)
    }

    /// `<name>true</name>` or `<name>false</name>`.
    public mutating func element(_ name: String, _ value: Bool, csipaus: Bool = false) {
        element(name, value ? "true" : "false", csipaus: csipaus)
    }

    /// `<name>…</name>` as `xs:hexBinary` of `bytes` bytes (`HexBinary8` 1, `HexBinary16` 2, `HexBinary32`
    /// 4): upper-case, two digits a byte, leading zeros kept.
    public mutating func hexElement(_ name: String, _ value: UInt64, bytes: Int, csipaus: Bool = false) {
        element(name, Self.hex(value, bytes: bytes), csipaus: csipaus)
    }

    /// The document: every element still open closed. Throws the first failure met while writing.
    public mutating func finish() throws(SEP2Error) -> [UInt8] {
        while !open.isEmpty && failure == nil { close() }
        if let failure { throw failure }
        return bytes
    }

    /// `value` as upper-case hex of `bytes` bytes, leading zeros kept (`hex(3, bytes: 2)` is `0003`).
    public static func hex(_ value: UInt64, bytes: Int) -> String {
        let digits = String(value, radix: 16, uppercase: true)
        let width = max(2 * bytes, digits.count + digits.count % 2)
        return String(repeating: "0", count: width - digits.count) + digits
    }

    // MARK: - Private

    private mutating func qualify(_ name: String, csipaus: Bool) -> String? {
        guard failure == nil else { return nil }
        guard Self.isName(name, allowColon: false) else {
            fail(SEP2Error(.valueInvalid, message: "element name \(quoted(name)) is not an XML name"))
            return nil
        }
        guard csipaus else { return name }
        guard self.csipaus != nil else {
            fail(SEP2Error(.valueInvalid, message: "CSIP-AUS element \(quoted(name)) in a document that declares no CSIP-AUS namespace"))
            return nil
        }
        return "\(Self.csipausPrefix):\(name)"
    }

    private mutating func endStartTag() {
        if startTagOpen {
            append(">")
            startTagOpen = false
        }
    }

    private mutating func fail(_ error: SEP2Error) {
        if failure == nil { failure = error }
    }

    private mutating func append(_ text: String) {
        guard failure == nil else { return }
        let utf8 = text.utf8
        guard bytes.count + utf8.count <= maximumBytes else {
            fail(SEP2Error(.xmlOversized, message: "the document written would pass \(maximumBytes) bytes"))
            return
        }
        bytes.append(contentsOf: utf8)
    }

    private mutating func escape(_ text: String, inAttribute: Bool) {
        var escaped = ""
        escaped.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": escaped += "&amp;"
            case "<": escaped += "&lt;"
            case ">": escaped += "&gt;"
            case "\"" where inAttribute: escaped += "&quot;"
            case "'" where inAttribute: escaped += "&apos;"
            case "\t" where inAttribute: escaped += "&#9;"
            case "\n" where inAttribute: escaped += "&#10;"
            case "\r": escaped += "&#13;"
            default:
                guard Self.isXMLCharacter(scalar) else {
                    fail(SEP2Error(.valueInvalid, message: "text \(quoted(text)) has a character XML 1.0 cannot carry"))
                    return
                }
                escaped.unicodeScalars.append(scalar)
            }
        }
        append(escaped)
    }

    /// XML 1.0's `Char`: tab, LF, CR, U+0020…U+D7FF, U+E000…U+FFFD, U+10000…U+10FFFF (Swift scalars are never
    /// surrogates).
    static func isXMLCharacter(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0D: true
        case 0x20...0xFFFD: true
        case 0x10000...: true
        default: false
        }
    }

    /// A plain ASCII XML name: a letter or `_` first, then letters, digits, `_`, `-`, `.` (and one `:`
    /// between two such names when `allowColon`, for `xmlns:csipaus`).
    static func isName(_ name: String, allowColon: Bool) -> Bool {
        let parts = name.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 1 || (allowColon && parts.count == 2) else { return false }
        return parts.allSatisfy { part in
            guard let first = part.utf8.first, first.isASCIILetter || first == UInt8(ascii: "_"), part.utf8.count <= 64 else { return false }
            return part.utf8.allSatisfy { $0.isASCIILetter || (0x30...0x39).contains($0) || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".") }
        }
    }
}

extension UInt8 {
    fileprivate var isASCIILetter: Bool { (0x41...0x5A).contains(self) || (0x61...0x7A).contains(self) }
}
