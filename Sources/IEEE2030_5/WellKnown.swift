public import BessBase
import ControlCore

/// `/.well-known/csipaus` (CSIP-AUS service discovery, cactus procedure SDVN-01): a JSON object
/// `{"supportedSchemaVersions": {"<namespace URI>": {"dcap": ["/path", …]}, …}}` naming, per CSIP-AUS
/// version the server speaks, where its DeviceCapability is. The form is the one the CSIP-AUS test
/// server (bsgip/synergy-au cactus-runner) serves and checks with its JSON schema
/// (`tests/data/json/wellknown.schema.json`: `supportedSchemaVersions` an object of at least one
/// version, each an object whose one key `dcap` is an array of strings); a v1.2-only server answers 410.
///
/// bessd reads v1.3 (`https://csipaus.org/ns/v1.3`) first, then v1.2 (`https://csipaus.org/ns/v1.2`,
/// or the bare `https://csipaus.org/ns` the v1.2 documents use); any other key (an unknown version, a
/// malformed one such as `null`) is never followed, and there is no fall back to a default path.
/// The reader is bounded like the XML one: `maximumBytes`, depth 8, 4096 values, strings of 1 KiB;
/// it trusts no length and refuses what it cannot read with `SEP2_WELL_KNOWN_INVALID`.
public struct WellKnownCSIPAUS: Hashable, Sendable {
    /// The largest document read, bytes.
    public static let maximumBytes = 65_536
    /// The keys of the versions bessd reads, most preferred first.
    public static let versionKeys: [(key: String, version: CSIPAUSVersion)] = [
        ("https://csipaus.org/ns/v1.3", .v1_3), ("https://csipaus.org/ns/v1.2", .v1_2), ("https://csipaus.org/ns", .v1_2),
    ]

    /// The version chosen.
    public var version: CSIPAUSVersion
    /// Its DeviceCapability's path: the first of its `dcap` paths that is an absolute path `SEP2Href` accepts.
    public var deviceCapabilityPath: String
    /// Every version the document names, as written (for messages and tests), in document order.
    public var named: [String]

    /// Whether `bytes` is a JSON object rather than an XML document (its first byte after white space and
    /// a byte order mark is `{`): how the entry path's answer is told apart from a DeviceCapability.
    public static func isJSON(_ bytes: [UInt8]) -> Bool {
        var index = bytes.starts(with: [0xEF, 0xBB, 0xBF]) ? 3 : 0
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index < bytes.count && bytes[index] == UInt8(ascii: "{")
    }

    /// Reads `bytes` and chooses the DeviceCapability of the newest version bessd reads that names one.
    public static func read(_ bytes: [UInt8]) throws(SEP2Error) -> WellKnownCSIPAUS {
        guard bytes.count <= maximumBytes else {
            throw SEP2Error(.wellKnownInvalid, message: "\(bytes.count) bytes (at most \(maximumBytes))")
        }
        var parser = JSONScanner(bytes: bytes)
        let root = try parser.document()
        guard case .object(let members) = root else { throw SEP2Error(.wellKnownInvalid, message: "the document is not a JSON object") }
        guard case .object(let versions)? = members.first(where: { $0.key == "supportedSchemaVersions" })?.value else {
            throw SEP2Error(.wellKnownInvalid, message: "no supportedSchemaVersions object")
        }
        var skipped: [String] = []
        for (key, version) in versionKeys {
            guard let entry = versions.first(where: { $0.key == key })?.value else { continue }
            guard case .object(let fields) = entry, case .array(let paths)? = fields.first(where: { $0.key == "dcap" })?.value else {
                skipped.append("\(quoted(key, limit: 40)) has no dcap array")
                continue
            }
            for case .string(let path) in paths {
                guard let href = try? SEP2Href.check(path, "") else { continue }
                return WellKnownCSIPAUS(version: version, deviceCapabilityPath: href, named: versions.map(\.key))
            }
            skipped.append("\(quoted(key, limit: 40)) names no absolute dcap path")
        }
        let named = versions.prefix(4).map { quoted($0.key, limit: 40) }.joined(separator: ", ")
        throw SEP2Error(.wellKnownInvalid, message: "no DeviceCapability for CSIP-AUS v1.3 or v1.2 among \(versions.count) version(s) "
                            + "[\(named)\(versions.count > 4 ? ", …" : "")]" + (skipped.isEmpty ? "" : ": " + skipped.joined(separator: "; ")))
    }
}

/// A JSON value as the well-known reader keeps it (numbers are checked, not kept).
enum JSONValue: Sendable {
    case object([(key: String, value: JSONValue)])
    case array([JSONValue])
    case string(String)
    case number
    case bool(Bool)
    case null
}

/// A bounded JSON (RFC 8259) reader: depth, values and string lengths limited, UTF-8 checked; its
/// tokens are ControlCore's `JSONLexer`, as the aggregator's batch reader's are.
struct JSONScanner {
    static let maximumDepth = 8
    static let maximumValues = 4_096
    static let maximumStringBytes = 1_024

    let bytes: [UInt8]
    var index = 0
    var values = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    func fail(_ what: String) -> SEP2Error {
        SEP2Error(.wellKnownInvalid, message: "byte \(index): \(what)")
    }

    /// One value and nothing after it but white space.
    mutating func document() throws(SEP2Error) -> JSONValue {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { index = 3 }
        let value = try self.value(depth: 0)
        skipSpace()
        guard index == bytes.count else { throw fail("text after the JSON value") }
        return value
    }

    /// Runs `body` on ControlCore's `JSONLexer` at the cursor, and moves the cursor where it left.
    mutating func lex<T>(_ body: (inout JSONLexer) -> T) -> T {
        let start = index
        let (result, end) = bytes.withUnsafeBufferPointer { buffer in
            var lexer = JSONLexer(buffer, index: start)
            let result = body(&lexer)
            return (result, lexer.index)
        }
        index = end
        return result
    }

    mutating func skipSpace() { lex { $0.skipSpace() } }

    mutating func value(depth: Int) throws(SEP2Error) -> JSONValue {
        guard depth < Self.maximumDepth else { throw fail("nested deeper than \(Self.maximumDepth)") }
        values += 1
        guard values <= Self.maximumValues else { throw fail("more than \(Self.maximumValues) values") }
        skipSpace()
        guard index < bytes.count else { throw fail("a value expected, the document ended") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            var members: [(key: String, value: JSONValue)] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            while true {
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw fail("a member name expected") }
                let key = try string()
                skipSpace()
                guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { throw fail("':' expected") }
                index += 1
                let member = try value(depth: depth + 1)
                guard !members.contains(where: { $0.key == key }) else { throw fail("member \(quoted(key)) twice") }
                members.append((key, member))
                skipSpace()
                guard index < bytes.count else { throw fail("'}' expected, the document ended") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "}") else { throw fail("',' or '}' expected") }
                index += 1
                return .object(members)
            }
        case UInt8(ascii: "["):
            index += 1
            var items: [JSONValue] = []
            skipSpace()
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(items)
            }
            while true {
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard index < bytes.count else { throw fail("']' expected, the document ended") }
                if bytes[index] == UInt8(ascii: ",") { index += 1; continue }
                guard bytes[index] == UInt8(ascii: "]") else { throw fail("',' or ']' expected") }
                index += 1
                return .array(items)
            }
        case UInt8(ascii: "\""):
            return .string(try string())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try number()
            return .number
        default:
            throw fail("byte 0x\(String(bytes[index], radix: 16)) cannot start a value")
        }
    }

    mutating func literal(_ word: StaticString) throws(SEP2Error) {
        guard lex({ $0.literal(word) }) else { throw fail("\(word) expected") }
    }

    /// A number by the strict grammar, checked, not kept.
    mutating func number() throws(SEP2Error) {
        if case .failure(let failure) = lex({ $0.number() }) { throw fail(failure.description) }
    }

    /// A string at `index` (its opening quote): escapes resolved, the UTF-8 checked, at most
    /// `maximumStringBytes` once decoded (ControlCore's `JSONLexer`, which the batch reader shares).
    mutating func string() throws(SEP2Error) -> String {
        let read = lex { lexer in Result { () throws(JSONStringScanner.Failure) in try lexer.string(maximumBytes: Self.maximumStringBytes) } }
        switch read {
        case .success(let text): return text
        case .failure(let error): throw fail(error.reason.description)
        }
    }
}
