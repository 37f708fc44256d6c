import ControlCore
import Cycle
import Foundation
import Logging
import Service
import Uplink

/// Dispatch commands as both transports deliver them: the HTTP batch answer (`BatchResponse`) and one
/// MQTT command message, validated and applied to a two-unit site's mailbox. Invariants: every
/// command gets one answer; a refused one changes nothing; what reaches the mailbox is inside each
/// unit's rating and ends within 24 h.
enum DispatchHarness {
    static let units: [(String, Double)] = [("A", 50), ("B", 100)]
    static let logger = Logger(label: "fuzz", factory: { _ in SwiftLogNoOpLogHandler() })

    static func run(_ input: inout FuzzInput) -> [String] {
        let flags = input.u8()
        let payload = input.rest()
        var commands: [DispatchCommand]
        var violations = Violations()
        if flags & 1 == 0 {
            guard let answer = try? JSONDecoder().decode(BatchResponse.self, from: Data(payload)) else { return [] }
            commands = answer.commands
        } else {
            switch MQTTUplinkSender.decodeCommand(payload) {
            case .malformed(let refusal):
                violations.check(!refusal.accepted && (refusal.reason ?? "").hasPrefix("MQTT_COMMAND_MALFORMED"),
                                 "a malformed message answered \(refusal)")
                violations.check(refusal.id.count <= 128, "a refusal echoes an id of \(refusal.id.count) characters")
                return violations.list
            case .command(let command): commands = [command]
            }
        }
        // Expiry relative to now when asked: a fixed seed would otherwise expire with the calendar.
        let now = Date().timeIntervalSince1970
        if flags & 2 != 0 { for i in commands.indices { commands[i].expiresUnix += now } }
        let shared = SharedState(units: units.count, view: SiteView.Settings(capacitiesWh: [], ratingsW: units.map { $0.1 * 1000 }))
        let intake = DispatchIntake(shared: shared, logger: logger, units: units)
        let acks = intake.apply(commands)
        violations.check(acks.count == commands.count, "\(commands.count) commands, \(acks.count) answers")
        let mailbox = shared.peekMailbox()
        let accepted = acks.filter(\.accepted).count
        violations.check(accepted > 0 || mailbox.generation == 0, "refused commands changed the mailbox")
        for (i, unit) in units.enumerated() {
            if let dispatch = mailbox.dispatch[i] {
                violations.check(dispatch.power.value.isFinite && abs(dispatch.power.value) <= unit.1 * 1000 + 1e-6,
                                 "unit \(unit.0): dispatch \(dispatch.power) beyond ±\(unit.1) kW")
                violations.check(dispatch.lasting > .zero && dispatch.lasting <= .seconds(86_400 + 5),
                                 "unit \(unit.0): dispatch for \(dispatch.lasting)")
            }
            if let remote = mailbox.remoteMode[i] {
                violations.check(remote.lasting > .zero && remote.lasting <= .seconds(86_400 + 5),
                                 "unit \(unit.0): remote mode for \(remote.lasting)")
            }
        }
        return violations.list
    }

    static func seeds() -> [[UInt8]] {
        let http = #"{"acked_seq": 12, "commands": [{"id": "c1", "kind": "power", "power_kw": 60, "expires_unix": 600}, "#
            + #"{"id": "c2", "kind": "mode", "unit": "A", "mode": "standby", "expires_unix": 300}, "#
            + #"{"id": "c3", "kind": "emergency_stop", "unit": "B", "expires_unix": 60}]}"#
        let mqtt = #"{"id": "m1", "kind": "power", "unit": "B", "power_kw": -80.5, "expires_unix": 120}"#
        return [[2] + Array(http.utf8), [3] + Array(mqtt.utf8), [1] + Array(#"{"id": "x", "kind": "power"}"#.utf8)]
    }
}
