import ControlCore
import Cycle
import Foundation
import Logging
import Service
import Uplink

/// Dispatch commands as both transports deliver them: the HTTP batch answer (`BatchResponse`) and one
/// MQTT command message, validated and applied one at a time (as the ledger hands them over) to a
/// two-unit site's mailbox. Invariants: every command gets one answer; a refused one changes nothing;
/// what reaches the mailbox is finite, inside each unit's rating (power) and apparent rating
/// (`reactive_kvar`), and ends within 24 h; an accepted `reactive_kvar` is a `power` dispatch's, and
/// its parts add up to it.
enum DispatchHarness {
    /// id, `max_power_kw`, and the apparent rating the validator bounds kvar by (B sets
    /// `max_apparent_power_kva`; A falls back to its kW).
    static let units: [(String, Double)] = [("A", 50), ("B", 100)]
    static let apparent: [String: Double] = ["B": 120]
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
        let intake = DispatchIntake(shared: shared, logger: logger, units: units, apparent: apparent)
        for command in commands {
            let before = shared.peekMailbox()
            let acks = intake.apply([command])
            violations.check(acks.count == 1, "one command, \(acks.count) answers")
            let after = shared.peekMailbox()
            guard acks.first?.accepted == true else {
                violations.check(after.generation == before.generation && fingerprint(after) == fingerprint(before),
                                 "refused command \(command.id) changed the mailbox")
                continue
            }
            check(accepted: command, mailbox: after, &violations)
        }
        let mailbox = shared.peekMailbox()
        for (i, unit) in units.enumerated() {
            if let dispatch = mailbox.dispatch[i] {
                violations.check(dispatch.power.value.isFinite && abs(dispatch.power.value) <= unit.1 * 1000 + 1e-6,
                                 "unit \(unit.0): dispatch \(dispatch.power) beyond ±\(unit.1) kW")
                let kva = apparent[unit.0] ?? unit.1
                if let vars = dispatch.reactive {
                    violations.check(vars.isFinite && abs(vars) <= kva * 1000 + 1e-6, "unit \(unit.0): \(vars) var beyond ±\(kva) kVA")
                }
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

    /// An accepted command's `reactive_kvar`: on a `power` dispatch only, finite, inside the apparent
    /// rating of its unit (or the site's sum), and its parts in the mailbox add up to it.
    static func check(accepted command: DispatchCommand, mailbox: Mailbox, _ violations: inout Violations) {
        let targets = command.unit.map { id in units.indices.filter { units[$0].0 == id } } ?? Array(units.indices)
        guard let kvar = command.reactiveKVar else {
            if command.kind == "power" {
                violations.check(targets.allSatisfy { mailbox.dispatch[$0]?.reactive == nil }, "a power dispatch without kvar entered var")
            }
            return
        }
        violations.check(command.kind == "power", "reactive_kvar accepted on kind \(command.kind)")
        let bound = targets.reduce(0.0) { $0 + (apparent[units[$1].0] ?? units[$1].1) }
        violations.check(kvar.isFinite && abs(kvar) <= bound, "reactive_kvar \(kvar) accepted beyond ±\(bound) kVA")
        let parts = targets.map { mailbox.dispatch[$0]?.reactive }
        let sum = parts.reduce(0.0) { $0 + ($1 ?? .nan) }
        violations.check(abs(sum - kvar * 1000) <= 1e-6 * max(1, abs(kvar * 1000)), "reactive_kvar \(kvar) entered as \(parts) var")
    }

    /// What a command can change in the mailbox, comparable.
    static func fingerprint(_ mailbox: Mailbox) -> [String] {
        mailbox.dispatch.map { d in d.map { "\($0.power.value) \($0.reactive ?? .nan) \($0.lasting) \($0.pinned)" } ?? "-" }
            + mailbox.remoteMode.map { r in r.map { "\($0.mode) \($0.lasting) \($0.emergency)" } ?? "-" }
            + mailbox.clearDispatch.map { "\($0)" }
    }

    static func seeds() -> [[UInt8]] {
        let http = #"{"acked_seq": 12, "commands": [{"id": "c1", "kind": "power", "power_kw": 60, "expires_unix": 600}, "#
            + #"{"id": "c2", "kind": "mode", "unit": "A", "mode": "standby", "expires_unix": 300}, "#
            + #"{"id": "c3", "kind": "emergency_stop", "unit": "B", "expires_unix": 60}, "#
            + #"{"id": "c4", "kind": "power", "power_kw": -30, "reactive_kvar": -170, "expires_unix": 600}, "#
            + #"{"id": "c5", "kind": "power", "unit": "B", "power_kw": 10, "reactive_kvar": 120.5, "expires_unix": 600}, "#
            + #"{"id": "c6", "kind": "mode", "unit": "A", "mode": "auto", "reactive_kvar": 5, "expires_unix": 300}]}"#
        let mqtt = #"{"id": "m1", "kind": "power", "unit": "B", "power_kw": -80.5, "expires_unix": 120}"#
        let mqttVar = #"{"id": "m2", "kind": "power", "unit": "A", "power_kw": 0, "reactive_kvar": 49.9, "expires_unix": 120}"#
        return [[2] + Array(http.utf8), [3] + Array(mqtt.utf8), [3] + Array(mqttVar.utf8),
                [1] + Array(#"{"id": "x", "kind": "power"}"#.utf8)]
    }
}
