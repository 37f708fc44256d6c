import BessBase
import ControlCore
@testable import IEEE2030_5
import Testing
@testable import UplinkIngest

/// The JSON string escapes both JSON readers of strangers' bytes take, one table run against each: the
/// `/.well-known/csipaus` reader (`JSONScanner.string`, its message with the byte it stopped at) and the
/// uplink batch reader (`BatchReader.string` and `skip`, nil where `JSONDecoder` must decide). It pins
/// what each answers for every input, the offset reached included, so that a change in how either reads
/// a string shows here; both now call ControlCore's `JSONStringScanner`, run here as each calls it. It
/// lives in FuzzTests, the test target that links both readers.
@Suite("JSON string escapes: the well-known and uplink batch readers")
struct JSONStringEscapeTests {
    /// What a reader makes of a string whose opening quote is at byte 0.
    enum Outcome: Equatable, CustomStringConvertible {
        /// The text, and the offset just past the closing quote.
        case read(String, end: Int)
        /// The well-known reader's message (`byte N: what`); "" for the batch reader's nil.
        case refused(String)

        var description: String {
            switch self {
            case .read(let text, let end): "read \(TextQuoting.quoted(text, limit: 40)) to byte \(end)"
            case .refused(let message): "refused \(message.isEmpty ? "(nil)" : message)"
            }
        }
    }

    struct Case: CustomStringConvertible {
        var name: String
        var bytes: [UInt8]
        var wellKnown: Outcome
        var batch: Outcome
        var description: String { name }
    }

    static let maximum = JSONScanner.maximumStringBytes
    static func b(_ text: String) -> [UInt8] { Array(text.utf8) }
    static func both(_ name: String, _ bytes: [UInt8], _ outcome: Outcome) -> Case {
        Case(name: name, bytes: bytes, wellKnown: outcome, batch: outcome)
    }
    /// A case the well-known reader answers with `wellKnown` and the batch reader leaves to JSONDecoder.
    static func wellKnownOnly(_ name: String, _ bytes: [UInt8], _ wellKnown: Outcome) -> Case {
        Case(name: name, bytes: bytes, wellKnown: wellKnown, batch: .refused(""))
    }
    static func refused(_ name: String, _ bytes: [UInt8], _ message: String) -> Case {
        wellKnownOnly(name, bytes, .refused(message))
    }
    static let hex = "four hex digits expected after \\u"
    static let lone = "a lone surrogate"

    static let cases: [Case] = {
        var cases: [Case] = [
            // Valid text and escapes: both read the same.
            both("plain", b(#""abc" }"#), .read("abc", end: 5)),
            both("empty", b(#""" }"#), .read("", end: 2)),
            both("the short escapes", b(#""\"\\\/\b\f\n\r\t" }"#), .read("\"\\/\u{08}\u{0C}\n\r\t", end: 18)),
            both("\\u escapes, both cases of hex, NUL", b(#""\u0041\u00e9\u20AC\u0000" }"#), .read("A\u{E9}\u{20AC}\u{0}", end: 26)),
            both("escapes between text", b(#""a\nb\u0063d" }"#), .read("a\nbcd", end: 13)),
            both("raw UTF-8", b("\"\u{E9}\u{1F600}\" }"), .read("\u{E9}\u{1F600}", end: 8)),
            both("raw DEL and space", b("\"\u{7F} \" }"), .read("\u{7F} ", end: 4)),
            // Surrogate pairs: the well-known reader reads them; the batch reader leaves every escaped surrogate to JSONDecoder.
            wellKnownOnly("a surrogate pair between text", b(#""x\ud83d\ude00y" }"#), .read("x\u{1F600}y", end: 16)),
            wellKnownOnly("a surrogate pair in capitals", b(#""\uD83D\uDE00" }"#), .read("\u{1F600}", end: 14)),
            wellKnownOnly("the last surrogate pair", b(#""\uDBFF\uDFFF" }"#), .read("\u{10FFFF}", end: 14)),
            // Lone and reversed surrogates.
            refused("a lone high surrogate before the quote", b(#""\ud800" }"#), "byte 7: \(lone)"),
            refused("a lone high surrogate before text", b(#""\ud800abcdef" }"#), "byte 7: \(lone)"),
            refused("a high surrogate then a short escape", b(#""\ud800\n" }"#), "byte 7: \(lone)"),
            refused("a high surrogate then a letter", b(#""\ud800\u0041" }"#), "byte 13: \(lone)"),
            refused("two high surrogates", b(#""\ud800\udbff" }"#), "byte 13: \(lone)"),
            refused("a lone low surrogate", b(#""\udc00" }"#), "byte 7: \(lone)"),
            refused("a reversed pair", b(#""\udc00\ud800" }"#), "byte 7: \(lone)"),
            refused("a high surrogate at the end of the input", b(#""\ud800"#), "byte 7: \(lone)"),
            // Bad hex.
            refused("a bad third hex digit", b(#""\u12G4" }"#), "byte 5: \(hex)"),
            refused("a bad first hex digit", b(#""\uZ000" }"#), "byte 3: \(hex)"),
            refused("a quote among the hex digits", b(#""\u12" }"#), "byte 5: \(hex)"),
            refused("a bad hex digit in the low half", b(#""\ud800\udG00" }"#), "byte 10: \(hex)"),
            refused("too few hex digits before the end", b(#""\u12"#), "byte 3: \(hex)"),
            refused("unknown escape", b(#""\x" }"#), "byte 3: an unknown escape"),
            refused("\\U is not \\u", b(#""\U0041" }"#), "byte 3: an unknown escape"),
            refused("\\' is no escape", b(#""\'" }"#), "byte 3: an unknown escape"),
            // Unterminated.
            refused("no closing quote", b(#""abc"#), "byte 4: the string does not end"),
            refused("only the opening quote", b(#"""#), "byte 1: the string does not end"),
            refused("a backslash at the end", b(#""abc\"#), "byte 5: the string does not end"),
            refused("an escaped quote at the end", b(#""abc\""#), "byte 6: the string does not end"),
            refused("a surrogate pair at the end", b(#""\ud83d\ude00"#), "byte 13: the string does not end"),
            // Invalid UTF-8 is refused at the closing quote, after every other check.
            refused("a raw 0xFF", [0x22, 0xFF, 0x22, 0x20], "byte 3: a string that is not UTF-8"),
            refused("a cut sequence before a short escape", [0x22, 0xC3] + b(#"\n""#), "byte 5: a string that is not UTF-8"),
            refused("a cut sequence before a \\u escape", [0x22, 0xC3] + b(#"\u00a9" }"#), "byte 9: a string that is not UTF-8"),
            refused("a continuation byte after an escape", b(#""\n"#) + [0xA9, 0x22], "byte 5: a string that is not UTF-8"),
            refused("an encoded surrogate", [0x22, 0xED, 0xA0, 0x80, 0x22], "byte 5: a string that is not UTF-8"),
            refused("an overlong slash", [0x22, 0xC0, 0xAF, 0x22], "byte 4: a string that is not UTF-8"),
            refused("invalid UTF-8, then a control character", [0x22, 0xFF, 0x01, 0x22], "byte 3: a control character in a string"),
            refused("invalid UTF-8, unterminated", [0x22, 0xFF], "byte 2: the string does not end"),
            // The well-known reader's bound (1024 bytes once decoded); the batch reader has none but the payload.
            both("the bound exactly", b("\"" + String(repeating: "a", count: maximum) + "\" }"), .read(String(repeating: "a", count: maximum), end: maximum + 2)),
            Case(name: "one over the bound", bytes: b("\"" + String(repeating: "a", count: maximum + 1) + "\" }"),
                 wellKnown: .refused("byte \(maximum + 2): a string longer than \(maximum) bytes"),
                 batch: .read(String(repeating: "a", count: maximum + 1), end: maximum + 3)),
            both("the bound exactly, its last two bytes escaped", b("\"" + String(repeating: "a", count: maximum - 2) + #"\u00e9" }"#),
                 .read(String(repeating: "a", count: maximum - 2) + "\u{E9}", end: maximum + 6)),
            Case(name: "over the bound by an escape's last bytes", bytes: b("\"" + String(repeating: "a", count: maximum - 1) + #"\u20AC" }"#),
                 wellKnown: .refused("byte \(maximum + 6): a string longer than \(maximum) bytes"),
                 batch: .read(String(repeating: "a", count: maximum - 1) + "\u{20AC}", end: maximum + 7)),
            refused("over the bound, unterminated", b("\"" + String(repeating: "a", count: maximum + 1)), "byte \(maximum + 2): the string does not end"),
            refused("over the bound, then a control character", b("\"" + String(repeating: "a", count: maximum + 1)) + [0x01, 0x22],
                    "byte \(maximum + 2): a string longer than \(maximum) bytes"),
        ]
        for control in UInt8(0)..<0x20 {
            cases.append(refused("raw control character 0x\(String(control, radix: 16))", [0x22, 0x61, control, 0x62, 0x22, 0x20],
                                 "byte 3: a control character in a string"))
        }
        return cases
    }()

    static func wellKnown(_ bytes: [UInt8]) -> Outcome {
        var scanner = JSONScanner(bytes: bytes)
        do {
            let text = try scanner.string()
            return .read(text, end: scanner.index)
        } catch {
            return .refused(error.message)
        }
    }

    static func batch(_ bytes: [UInt8]) -> (string: Outcome, skip: Outcome) {
        bytes.withUnsafeBufferPointer { buffer in
            var reader = BatchReader(buffer)
            let string: Outcome = reader.string().map { .read($0, end: reader.i) } ?? .refused(reader.i == 0 ? "" : "moved to \(reader.i)")
            var skipper = BatchReader(buffer)
            let skip: Outcome = skipper.skip(depth: 0) ? .read(string.text ?? "?", end: skipper.i) : .refused(skipper.i == 0 ? "" : "moved to \(skipper.i)")
            return (string, skip)
        }
    }

    @Test("each reader answers each case as the table says", arguments: cases)
    func table(_ test: Case) {
        #expect(Self.wellKnown(test.bytes) == test.wellKnown, "well-known reader")
        let batch = Self.batch(test.bytes)
        #expect(batch.string == test.batch, "batch reader, string()")
        #expect(batch.skip == test.batch, "batch reader, skip(depth:)")
        // The shared scanner itself, as each reader calls it; its span's length is the text's.
        #expect(Self.scanner(test.bytes, maximumBytes: Self.maximum, surrogatePairs: true) == test.wellKnown, "scanner as the well-known reader calls it")
        #expect(Self.scanner(test.bytes, maximumBytes: .max, surrogatePairs: false).text == test.batch.text, "scanner as the batch reader calls it")
    }

    static func scanner(_ bytes: [UInt8], maximumBytes: Int, surrogatePairs: Bool) -> Outcome {
        bytes.withUnsafeBufferPointer { buffer in
            do throws(JSONStringScanner.Failure) {
                let span = try JSONStringScanner.scan(buffer, quote: 0, maximumBytes: maximumBytes, surrogatePairs: surrogatePairs)
                let read = try JSONStringScanner.read(buffer, quote: 0, maximumBytes: maximumBytes, surrogatePairs: surrogatePairs)
                #expect(span.end == read.end && span.decodedCount == read.text.utf8.count && span.decodedCount <= maximumBytes)
                return .read(read.text, end: read.end)
            } catch {
                return .refused(error.description)
            }
        }
    }

    @Test("the table holds every raw control character and both sides of the bound")
    func coverage() {
        #expect(Self.cases.count(where: { $0.name.hasPrefix("raw control character") }) == 32)
        #expect(Self.cases.contains { $0.name == "the bound exactly" } && Self.cases.contains { $0.name == "one over the bound" })
    }
}

extension JSONStringEscapeTests.Outcome {
    var text: String? {
        if case .read(let text, _) = self { text } else { nil }
    }
}
