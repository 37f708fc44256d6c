import ControlProtocol
import Foundation
import Testing

/// A request line as the service thread reads it (`ControlRequest(line:)`): a bare verb by its own
/// scan, every other line by `JSONDecoder`; both give what `JSONDecoder` alone gave.
@Suite("Control request lines")
struct ControlRequestLineTests {
    static func decoded(_ line: String) -> ControlRequest? {
        try? JSONDecoder().decode(ControlRequest.self, from: Data(line.utf8))
    }

    /// Lines the scan reads: bessctl's own, and the same with JSON whitespace between the tokens.
    @Test("a bare verb reads as JSONDecoder reads it", arguments: [
        #"{"verb":"status"}"#, #"{"verb":"faults"}"#, #"{"verb":"site"}"#, #"{"verb":"metrics"}"#, #"{"verb":"config"}"#,
        #"{"verb":"reset"}"#, #"{"verb":"Status"}"#, #"{"verb":"nosuchverb"}"#, " { \"verb\" :\t\"status\" }\r ",
        #"{"verb":"abcdefghijklmnopqrstuvwxyzABCDEF"}"#,
    ])
    func bareVerb(line: String) throws {
        #expect(ControlRequest.bareVerb(Array(line.utf8)) != nil, "read by the scan")
        let expected = try #require(Self.decoded(line))
        #expect(ControlRequest(line: Array(line.utf8)) == expected)
    }

    /// Lines the scan leaves to the decoder (other keys, escapes, spaces inside the verb, a verb of
    /// 33 letters, not an object, not JSON): the same request or the same refusal as before.
    @Test("every other line reads as JSONDecoder reads it", arguments: [
        #"{"verb":"override","unit":"U1","power_kw":-20,"for_s":900}"#, #"{"verb":"mode","mode":5,"unit":null}"#,
        #"{"verb":"stat\u0075s"}"#, #"{"verb":"status "}"#, #"{"verb":" status"}"#, #"{"verb":""}"#, #"{"verb":1}"#,
        #"{"verb":"status","verb":"reset"}"#, #"{"verb":"abcdefghijklmnopqrstuvwxyzABCDEFG"}"#, #"{"verb":"status"}x"#,
        #"{"verb":"status"},"#, #"["status"]"#, #"{"verb":"status""#, "", "{}", #"{"Verb":"status"}"#, "\u{FEFF}{\"verb\":\"status\"}",
    ])
    func otherLines(line: String) {
        #expect(ControlRequest.bareVerb(Array(line.utf8)) == nil, "left to the decoder")
        #expect(ControlRequest(line: Array(line.utf8)) == Self.decoded(line))
    }
}
