public import BessBase
import ControlCore
/// How much of a document the reader takes before it refuses it (`SEP2_XML_OVERSIZED`). The defaults
/// hold a DERControlList of 64 controls with room to spare; nothing a 2030.5 server sends needs more.
public struct XMLLimits: Hashable, Sendable {
    /// Bytes in the whole document.
    public var maximumBytes = 262_144
    /// Elements nested in one another, the root being 1.
    public var maximumDepth = 16
    /// Elements in the whole document.
    public var maximumElements = 8_192
    /// Attributes on one element, namespace declarations included.
    public var maximumAttributes = 16
    /// Bytes of text in one element, and in one attribute value.
    public var maximumTextBytes = 1_024
    /// Bytes in one name (prefix and local part).
    public var maximumNameBytes = 64

    /// The defaults.
    public init() {}
}

/// An element's expanded name: its namespace URI (empty for none) and its local part.
public struct XMLName: Hashable, Sendable, CustomStringConvertible {
    /// The namespace the element's prefix (or the default declaration) binds, "" for none.
    public var namespace: String
    /// The name after the prefix.
    public var local: String

    /// `{namespace}local`, escaped for a message.
    public var description: String { quoted(namespace.isEmpty ? local : "{\(namespace)}\(local)", limit: 96) }

    /// The name `local` in `namespace`.
    public init(_ namespace: String, _ local: String) {
        self.namespace = namespace
        self.local = local
    }
}

/// One element of a parsed document: its name, attributes, text and children, namespaces resolved.
public struct XMLElement: Sendable {
    /// The element's expanded name.
    public var name: XMLName
    /// Attributes other than namespace declarations, by expanded name (unprefixed ones have no namespace).
    public var attributes: [XMLName: String]
    /// The element's character data (references decoded, CDATA included), children's text excluded.
    public var text: String
    /// Child elements in document order.
    public var children: [XMLElement]
    /// The byte offset of the element's `<` in the document, for messages.
    public var offset: Int
}

/// A small XML 1.0 reader for the documents a 2030.5 server sends: namespace-aware, every length and
/// count bounded by `XMLLimits`, no DOCTYPE, no entities but the five predefined and character
/// references, nothing fetched. Pure and without Foundation, so it is fuzzed like the other decoders.
public enum XMLDocument {
    /// The root element of `bytes`, or a coded refusal.
    public static func parse(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) throws(SEP2Error) -> XMLElement {
        guard bytes.count <= limits.maximumBytes else {
            throw SEP2Error(.xmlOversized, message: "a document of \(bytes.count) bytes (at most \(limits.maximumBytes))")
        }
        var reader = Reader(bytes: bytes, limits: limits)
        return try reader.document()
    }

    /// The namespace the `xml` prefix is bound to by definition.
    static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"
}

/// The reader's cursor and namespace scopes.
private struct Reader {
    let bytes: [UInt8]
    let limits: XMLLimits
    var index = 0
    var elements = 0
    /// Declarations in force, innermost last: (prefix, URI); prefix "" is the default namespace.
    var scopes: [(prefix: String, uri: String)] = [("xml", XMLDocument.xmlNamespace)]

    init(bytes: [UInt8], limits: XMLLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    func malformed(_ what: String, at offset: Int? = nil) -> SEP2Error {
        SEP2Error(.xmlMalformed, message: "byte \(offset ?? index): \(what)")
    }

    func oversized(_ what: String) -> SEP2Error {
        SEP2Error(.xmlOversized, message: "byte \(index): \(what)")
    }

    func peek(_ literal: String) -> Bool {
        var at = index
        for byte in literal.utf8 {
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
        }
        return true
    }

    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }

    mutating func skipSpace() {
        while index < bytes.count, Self.isSpace(bytes[index]) { index += 1 }
    }

    /// Document: BOM, prolog (declaration, comments, PIs), one element, then comments and PIs only.
    mutating func document() throws(SEP2Error) -> XMLElement {
        if peek("\u{FEFF}") { index += 3 }
        try misc()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "<") else { throw malformed("no root element") }
        let root = try element(depth: 1)
        try misc()
        guard index == bytes.count else { throw malformed("content after the root element") }
        return root
    }

    /// White space, comments and processing instructions (the XML declaration among them).
    mutating func misc() throws(SEP2Error) {
        while true {
            skipSpace()
            if peek("<!--") { try comment() } else if peek("<?") { try processingInstruction() } else if peek("<!") {
                throw malformed("DOCTYPE and other declarations are refused")
            } else { return }
        }
    }

    mutating func comment() throws(SEP2Error) {
        let start = index
        index += 4
        while index + 2 < bytes.count {
            if bytes[index] == UInt8(ascii: "-"), bytes[index + 1] == UInt8(ascii: "-") {
                guard bytes[index + 2] == UInt8(ascii: ">") else { throw malformed("\"--\" inside a comment") }
                index += 3
                return
            }
            index += 1
        }
        throw malformed("unterminated comment", at: start)
    }

    mutating func processingInstruction() throws(SEP2Error) {
        let start = index
        index += 2
        while index + 1 < bytes.count {
            if bytes[index] == UInt8(ascii: "?"), bytes[index + 1] == UInt8(ascii: ">") { index += 2; return }
            index += 1
        }
        throw malformed("unterminated processing instruction", at: start)
    }

    /// A name: letters, digits, `_ - . :` and any non-ASCII byte, not starting with a digit, `-` or `.`.
    mutating func name() throws(SEP2Error) -> String {
        let start = index
        while index < bytes.count {
            guard Self.isNameByte(bytes[index], first: index == start) else { break }
            index += 1
            guard index - start <= limits.maximumNameBytes else { throw oversized("a name longer than \(limits.maximumNameBytes) bytes") }
        }
        guard index > start, let text = String(validating: bytes[start..<index], as: UTF8.self) else { throw malformed("a name expected", at: start) }
        return text
    }

    static func isNameByte(_ byte: UInt8, first: Bool) -> Bool {
        switch byte {
        case 0x41...0x5A, 0x61...0x7A, 0x5F, 0x3A, 0x80...0xFF: true  // A–Z a–z _ : non-ASCII
        case 0x30...0x39, 0x2D, 0x2E: !first  // 0–9 - .
        default: false
        }
    }

    /// An element and everything in it; the cursor is on its `<`.
    mutating func element(depth: Int) throws(SEP2Error) -> XMLElement {
        let start = index
        guard depth <= limits.maximumDepth else { throw oversized("elements nested deeper than \(limits.maximumDepth)") }
        elements += 1
        guard elements <= limits.maximumElements else { throw oversized("more than \(limits.maximumElements) elements") }
        index += 1
        let qualified = try name()
        var raw: [(name: String, value: String, offset: Int)] = []
        var selfClosing = false
        while true {
            let before = index
            skipSpace()
            guard index < bytes.count else { throw malformed("unterminated start tag", at: start) }
            if bytes[index] == UInt8(ascii: ">") { index += 1; break }
            if peek("/>") { index += 2; selfClosing = true; break }
            guard index > before else { throw malformed("white space expected before an attribute") }
            let offset = index
            let attribute = try name()
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: "=") else { throw malformed("\"=\" expected after an attribute name") }
            index += 1
            skipSpace()
            let value = try attributeValue()
            guard !raw.contains(where: { $0.name == attribute }) else { throw malformed("an attribute repeated", at: offset) }
            raw.append((attribute, value, offset))
            guard raw.count <= limits.maximumAttributes else { throw oversized("more than \(limits.maximumAttributes) attributes on one element") }
        }
        // Declarations first, then names resolved in the new scope.
        let outer = scopes.count
        defer { scopes.removeSubrange(outer...) }
        for attribute in raw {
            if attribute.name == "xmlns" {
                scopes.append(("", attribute.value))
            } else if attribute.name.hasPrefix("xmlns:") {
                let prefix = String(attribute.name.dropFirst(6))
                guard !prefix.isEmpty, !attribute.value.isEmpty, prefix != "xml", prefix != "xmlns" else {
                    throw malformed("a namespace declaration that binds nothing or a reserved prefix", at: attribute.offset)
                }
                scopes.append((prefix, attribute.value))
            }
        }
        var node = XMLElement(name: try resolve(qualified, element: true, at: start), attributes: [:], text: "", children: [], offset: start)
        for attribute in raw where attribute.name != "xmlns" && !attribute.name.hasPrefix("xmlns:") {
            let expanded = try resolve(attribute.name, element: false, at: attribute.offset)
            guard node.attributes.updateValue(attribute.value, forKey: expanded) == nil else { throw malformed("an attribute repeated", at: attribute.offset) }
        }
        if selfClosing { return node }
        var text: [UInt8] = []
        // White space not yet known to be text: before the first child it is held here, and becomes text
        // only if text or the end tag follows rather than a child (indentation is not text).
        var space: [UInt8] = []
        while true {
            guard index < bytes.count else { throw malformed("unterminated element \(quoted(qualified))", at: start) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "<") {
                if peek("</") {
                    index += 2
                    let closing = try name()
                    skipSpace()
                    guard closing == qualified, index < bytes.count, bytes[index] == UInt8(ascii: ">") else {
                        throw malformed("closing tag </\(quoted(qualified))> expected")
                    }
                    index += 1
                    text += space
                    guard text.count <= limits.maximumTextBytes else { throw oversized("more than \(limits.maximumTextBytes) bytes of text in one element") }
                    break
                } else if peek("<!--") {
                    try comment()
                } else if peek("<![CDATA[") {
                    let open = index
                    index += 9
                    text += space
                    space.removeAll()
                    while !peek("]]>") {
                        guard index < bytes.count else { throw malformed("unterminated CDATA section", at: open) }
                        text.append(bytes[index])
                        index += 1
                    }
                    index += 3
                } else if peek("<?") {
                    try processingInstruction()
                } else if peek("<!") {
                    throw malformed("a declaration inside an element")
                } else {
                    space.removeAll()
                    node.children.append(try element(depth: depth + 1))
                }
            } else if byte == UInt8(ascii: "&") {
                text += space
                space.removeAll()
                try reference(into: &text)
            } else {
                // White space before, between and after child elements (a pretty-printed list's
                // indentation) is not the element's text and does not count against the limit.
                if !Self.isSpace(byte) {
                    text += space
                    space.removeAll()
                    text.append(byte)
                } else if node.children.isEmpty {
                    space.append(byte)
                }
                index += 1
            }
            guard text.count <= limits.maximumTextBytes else { throw oversized("more than \(limits.maximumTextBytes) bytes of text in one element") }
        }
        guard let decoded = String(validating: text, as: UTF8.self) else { throw malformed("text that is not UTF-8", at: start) }
        node.text = decoded
        return node
    }

    /// A quoted attribute value, references decoded; no `<` inside.
    mutating func attributeValue() throws(SEP2Error) -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") || bytes[index] == UInt8(ascii: "'") else {
            throw malformed("a quoted attribute value expected")
        }
        let quote = bytes[index], start = index
        index += 1
        var value: [UInt8] = []
        while true {
            guard index < bytes.count else { throw malformed("unterminated attribute value", at: start) }
            let byte = bytes[index]
            if byte == quote { index += 1; break }
            if byte == UInt8(ascii: "<") { throw malformed("\"<\" in an attribute value") }
            if byte == UInt8(ascii: "&") { try reference(into: &value) } else { value.append(byte); index += 1 }
            guard value.count <= limits.maximumTextBytes else { throw oversized("an attribute value longer than \(limits.maximumTextBytes) bytes") }
        }
        guard let text = String(validating: value, as: UTF8.self) else { throw malformed("an attribute value that is not UTF-8", at: start) }
        return text
    }

    /// `&lt;` `&gt;` `&amp;` `&quot;` `&apos;` `&#N;` `&#xH;`, appended as UTF-8.
    mutating func reference(into out: inout [UInt8]) throws(SEP2Error) {
        let start = index
        index += 1
        var body: [UInt8] = []
        while index < bytes.count, bytes[index] != UInt8(ascii: ";"), body.count < 10 {
            body.append(bytes[index])
            index += 1
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ";") else { throw malformed("an unterminated or unknown reference", at: start) }
        index += 1
        let scalarValue: UInt32?
        switch String(decoding: body, as: UTF8.self) {
        case "lt": scalarValue = 0x3C
        case "gt": scalarValue = 0x3E
        case "amp": scalarValue = 0x26
        case "quot": scalarValue = 0x22
        case "apos": scalarValue = 0x27
        case let other where other.hasPrefix("#x"): scalarValue = UInt32(other.dropFirst(2), radix: 16)
        case let other where other.hasPrefix("#"): scalarValue = UInt32(other.dropFirst(1), radix: 10)
        default: throw malformed("an entity other than the five predefined ones", at: start)
        }
        guard let value = scalarValue, value == 0x9 || value == 0xA || value == 0xD || value >= 0x20,
              let scalar = Unicode.Scalar(value) else {
            throw malformed("a character reference to no XML character", at: start)
        }
        out.append(contentsOf: Array(String(Character(scalar)).utf8))
    }

    /// A qualified name resolved against the scopes: an element without prefix takes the default
    /// namespace, an attribute without prefix none.
    func resolve(_ qualified: String, element: Bool, at offset: Int) throws(SEP2Error) -> XMLName {
        let parts = qualified.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 2, !parts.contains(where: \.isEmpty) else { throw malformed("a name with an empty or second prefix", at: offset) }
        let prefix = parts.count == 2 ? String(parts[0]) : ""
        let local = String(parts[parts.count - 1])
        if prefix.isEmpty && !element { return XMLName("", local) }
        guard let binding = scopes.last(where: { $0.prefix == prefix }) else {
            if prefix.isEmpty { return XMLName("", local) }
            throw malformed("the prefix \(quoted(prefix)) is bound to no namespace", at: offset)
        }
        return XMLName(binding.uri, local)
    }
}
