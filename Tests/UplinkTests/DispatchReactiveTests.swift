import BessBase
import Foundation
import Testing
import Uplink

/// The aggregator's `reactive_kvar` on a `power` dispatch (docs/design/0010-reactive-power.md): read
/// from both transports, written back only when set, and refused (`DISPATCH_REFUSED`) on another
/// kind, when not finite, or beyond the configured apparent rating of its unit or of the site.
@Suite("Dispatch: reactive_kvar on a power dispatch")
struct DispatchReactiveTests {
    static let now = 1_800_000_000.0
    /// U1: 100 kW, 120 kVA configured; U2: 250 kW, no kVA (its kW bounds its kvar). Site: 370 kVA.
    static let ratings = ["U1": 100.0, "U2": 250.0]
    static let apparent = ["U1": 120.0]

    @Test("read from a batch answer and from an MQTT command message, with its sign")
    func decodes() throws {
        let answer = #"{"acked_seq": 3, "commands": [{"id": "q1", "kind": "power", "unit": "U1", "power_kw": 40, "#
            + #""reactive_kvar": -12.5, "expires_unix": 1800000600}, {"id": "p1", "kind": "power", "power_kw": 5, "expires_unix": 1800000600}]}"#
        let commands = try JSONDecoder().decode(BatchResponse.self, from: Data(answer.utf8)).commands
        #expect(commands.map(\.reactiveKVar) == [-12.5, nil])
        #expect(commands.first?.powerKW == 40)
        let message = #"{"id": "q2", "kind": "power", "power_kw": 0, "reactive_kvar": 30, "expires_unix": 1800000600}"#
        guard case .command(let command) = MQTTUplinkSender.decodeCommand(Array(message.utf8)) else {
            Issue.record("the MQTT message was not read as a command")
            return
        }
        #expect(command.reactiveKVar == 30 && command.unit == nil)
        // Not a number: not a command (MQTT_COMMAND_MALFORMED), never a kvar of 0.
        let word = #"{"id": "q3", "kind": "power", "power_kw": 0, "reactive_kvar": "lots", "expires_unix": 1800000600}"#
        guard case .malformed(let refusal) = MQTTUplinkSender.decodeCommand(Array(word.utf8)) else {
            Issue.record("a text reactive_kvar was read as a command")
            return
        }
        #expect(refusal.id == "q3" && !refusal.accepted)
    }

    @Test("written as reactive_kvar when set and left out when not, so the bytes of a P-only dispatch do not change")
    func encodes() throws {
        let withVar = DispatchCommand(id: "q1", kind: "power", unit: "U1", powerKW: 40, reactiveKVar: -12.5, expiresUnix: Self.now + 60)
        let text = String(decoding: try JSONEncoder().encode(withVar), as: UTF8.self)
        #expect(text.contains(#""reactive_kvar":-12.5"#))
        #expect(try JSONDecoder().decode(DispatchCommand.self, from: Data(text.utf8)) == withVar)
        let without = DispatchCommand(id: "p1", kind: "power", powerKW: 5, expiresUnix: Self.now + 60)
        #expect(!String(decoding: try JSONEncoder().encode(without), as: UTF8.self).contains("reactive"))
    }

    @Test("the OpenAPI document defines reactive_kvar as a number on the command")
    func openAPI() throws {
        let command = DispatchCommand(id: "q1", kind: "power", unit: "U1", powerKW: 40, reactiveKVar: -12.5, expiresUnix: Self.now + 60)
        let answer = try JSONEncoder().encode(BatchResponse(ackedSeq: 3, commands: [command]))
        #expect(try WireTests.openAPIVerdict(answer, schema: "BatchResponse") == "VALID")
        let text = String(decoding: answer, as: UTF8.self).replacingOccurrences(of: "-12.5", with: "\"lots\"")
        #expect(try WireTests.openAPIVerdict(Data(text.utf8), schema: "BatchResponse").hasPrefix("INVALID"), "the schema takes any reactive_kvar")
    }

    struct Refused: Sendable, CustomTestStringConvertible {
        let command: DispatchCommand
        let reason: String
        var testDescription: String { reason + " (\(command.id))" }
    }

    static let refused: [Refused] = [
        Refused(command: DispatchCommand(id: "mode", kind: "mode", reactiveKVar: 5, mode: "auto", expiresUnix: now + 60),
                reason: "reactive_kvar is taken only on a power dispatch"),
        Refused(command: DispatchCommand(id: "stop", kind: "emergency_stop", unit: "U1", reactiveKVar: 0, expiresUnix: now + 60),
                reason: "reactive_kvar is taken only on a power dispatch"),
        Refused(command: DispatchCommand(id: "nan", kind: "power", powerKW: 1, reactiveKVar: .nan, expiresUnix: now + 60),
                reason: "reactive_kvar must be a finite number"),
        Refused(command: DispatchCommand(id: "inf", kind: "power", unit: "U1", powerKW: 1, reactiveKVar: -.infinity, expiresUnix: now + 60),
                reason: "reactive_kvar must be a finite number"),
        Refused(command: DispatchCommand(id: "u1", kind: "power", unit: "U1", powerKW: 1, reactiveKVar: 120.5, expiresUnix: now + 60),
                reason: "reactive_kvar 120.5 beyond the apparent rating ±120.0 kVA"),
        Refused(command: DispatchCommand(id: "u2", kind: "power", unit: "U2", powerKW: 1, reactiveKVar: -250.1, expiresUnix: now + 60),
                reason: "reactive_kvar -250.1 beyond the apparent rating ±250.0 kVA"),
        Refused(command: DispatchCommand(id: "site", kind: "power", powerKW: 1, reactiveKVar: 370.01, expiresUnix: now + 60),
                reason: "reactive_kvar 370.01 beyond the apparent rating ±370.0 kVA"),
        // The other checks still come first: the power, and a unit's name quoted.
        Refused(command: DispatchCommand(id: "p", kind: "power", unit: "U1", powerKW: 101, reactiveKVar: 1, expiresUnix: now + 60),
                reason: "power_kw 101.0 beyond the rating ±100.0 kW"),
        Refused(command: DispatchCommand(id: "q", kind: "power", reactiveKVar: 1, expiresUnix: now + 60),
                reason: "power_kw must be a finite number"),
        Refused(command: DispatchCommand(id: "who", kind: "power", unit: "U9\n", powerKW: 1, reactiveKVar: 1, expiresUnix: now + 60),
                reason: #"unknown unit "U9\u{a}""#),
    ]

    @Test("refused, coded DISPATCH_REFUSED, with the reason", arguments: refused)
    func refusals(row: Refused) {
        let refusal = DispatchValidator.refusal(row.command, ratings: Self.ratings, apparent: Self.apparent, now: Self.now)
        #expect(refusal?.code == .refused)
        #expect(refusal?.reason == row.reason, "\(String(describing: refusal?.reason))")
    }

    @Test("taken up to the bound on either sign: a unit's kVA (else its kW), the site's sum of them")
    func accepted() {
        for c in [DispatchCommand(id: "1", kind: "power", unit: "U1", powerKW: -100, reactiveKVar: 120, expiresUnix: Self.now + 900),
                  DispatchCommand(id: "2", kind: "power", unit: "U1", powerKW: 0, reactiveKVar: -120, expiresUnix: Self.now + 900),
                  DispatchCommand(id: "3", kind: "power", unit: "U2", powerKW: 10, reactiveKVar: 250, expiresUnix: Self.now + 900),
                  DispatchCommand(id: "4", kind: "power", powerKW: 350, reactiveKVar: -370, expiresUnix: Self.now + 900),
                  DispatchCommand(id: "5", kind: "power", powerKW: 0, reactiveKVar: 0, expiresUnix: Self.now + 900)] {
            #expect(DispatchValidator.refusal(c, ratings: Self.ratings, apparent: Self.apparent, now: Self.now) == nil, "\(c.id)")
        }
        // Without the kVA map (a caller that knows only kW), the kW bounds the kvar.
        let u1 = DispatchCommand(id: "6", kind: "power", unit: "U1", powerKW: 0, reactiveKVar: 110, expiresUnix: Self.now + 900)
        #expect(DispatchValidator.validate(u1, ratings: Self.ratings, now: Self.now) == "reactive_kvar 110.0 beyond the apparent rating ±100.0 kVA")
    }
}
