import ControlCore
import Fieldbus
internal import Yams

/// A profile's `alarms:` and `groups:`, which name its signals, and the checks across signals: no two
/// values the cycle uses share bits, no quantity is given twice, every group has the signals that fill
/// its part, and an inverter reports its active power.
enum ProfileRules {
    static let alarmKeys = ConfigKeys("alarms[]", ["signal", "bit", "equals", "condition", "severity"])
    static let groupKeys = ConfigKeys("groups[]", ["part", "presence", "period_s"])

    /// The quantities a group's part needs among the signals (`protection` needs an alarm instead).
    static func quantities(feeding part: ProfileGroup.Part) -> [ProfileQuantity] {
        switch part {
        case .status: [.soc]
        case .limits: [.chargeCurrentLimit, .dischargeCurrentLimit]
        case .measurements: [.packVoltage, .packCurrent, .temperature]
        case .cells: [.minCellVoltage, .maxCellVoltage, .minCellTemperature, .maxCellTemperature]
        case .requests: [.chargeEnabled, .dischargeEnabled]
        case .protection: []
        }
    }

    /// `alarms:` — a bit of a signal's raw value, or raw values it may equal, → a BMS condition.
    static func decodeAlarms(_ top: ConfigReader.Fields, _ r: ConfigReader, signals: [ProfileSignalReader.Read]?) -> [ProfileAlarm] {
        var alarms: [ProfileAlarm] = []
        for (index, node) in (top.sequence("alarms") ?? []).enumerated() {
            guard let a = r.fields(node, "alarms[\(index)]") else { continue }
            let name = a.required(a.string("signal"), "signal")
            let signal = signals?.first { $0.signal.name == name }
            if let name, let signals, signal == nil {
                r.error(a.mark("signal"), a.child("signal"), "names no signal of this profile (signals: "
                        + "\(signals.map(\.signal.name).joined(separator: ", ")))", got: "'\(name)'")
            }
            let bit = a.int("bit", range: 0...63)
            let equals = ProfileSignalReader.integers(a, "equals", r)
            if a.has("bit") == a.has("equals") { r.error(a.node, a.path, "give bit or equals, one of them") }
            if let bit, let signal, bit >= signal.width {
                r.error(a.mark("bit"), a.child("bit"), "is beyond signal '\(signal.signal.name)', which has \(signal.width) bits",
                        got: String(bit))
            }
            let condition = a.required(a.choice("condition", ProfileAlarm.Condition.allCases.map { ($0.rawValue, Optional($0)) },
                                                default: nil), "condition")
            let severity = a.required(a.choice("severity", ProfileAlarm.Severity.allCases.map { ($0.rawValue, Optional($0)) },
                                               default: nil), "severity")
            a.finish(alarmKeys)
            if let name, let condition, let severity {
                alarms.append(ProfileAlarm(signal: name, bit: bit, equals: equals ?? [], condition: condition, severity: severity))
            }
        }
        return alarms
    }

    /// `groups:` (BMS only) — which part of the snapshot each fills, when its absence counts, its period.
    static func decodeGroups(_ top: ConfigReader.Fields, _ r: ConfigReader, kind: DeviceProfile.Kind?,
                             signals: [ProfileSignalReader.Read]?, alarms: [ProfileAlarm]) -> [ProfileGroup] {
        guard let list = top.sequence("groups") else { return [] }
        if let kind, kind != .bms, !list.isEmpty {
            r.error(top.mark("groups"), "groups", "only a BMS profile has groups; this one is kind \(kind.rawValue)")
        }
        var groups: [ProfileGroup] = []
        var parts: [ProfileGroup.Part: Int] = [:]
        for (index, node) in list.enumerated() {
            guard let g = r.fields(node, "groups[\(index)]") else { continue }
            let part = g.required(g.choice("part", ProfileGroup.Part.allCases.map { ($0.rawValue, Optional($0)) }, default: nil), "part")
            let presence = g.choice("presence", ProfileGroup.Presence.allCases.map { ($0.rawValue, $0) }, default: .required)
            let period = g.double("period_s", default: 1, range: 0...3600, exclusiveLower: true, unit: "seconds")!
            g.finish(groupKeys)
            guard let part else { continue }
            if let first = parts[part] {
                r.error(g.mark("part"), g.child("part"), "duplicates groups[\(first)].part", got: part.rawValue)
            }
            parts[part] = parts[part] ?? index
            let given = Set((signals ?? []).compactMap(\.signal.quantity))
            let missing = quantities(feeding: part).filter { !given.contains($0) }
            if signals != nil, !missing.isEmpty {
                r.error(g.mark("part"), g.child("part"), "no signal feeds it: needs signals of quantity "
                        + missing.map(\.rawValue).joined(separator: ", "), got: part.rawValue)
            }
            if part == .protection, alarms.isEmpty {
                r.error(g.mark("part"), g.child("part"), "no alarm feeds it: list the conditions under alarms:", got: part.rawValue)
            }
            groups.append(ProfileGroup(part: part, presence: presence, period: .seconds(fromDouble: period)))
        }
        return groups
    }

    /// The checks across signals: shared bits or registers, a quantity given twice, an inverter's power.
    static func check(_ signals: [ProfileSignalReader.Read]?, _ r: ConfigReader, top: ConfigReader.Fields, kind: DeviceProfile.Kind?) {
        guard let signals else { return }
        for (k, b) in signals.enumerated() {
            for a in signals[..<k] {
                if let quantity = b.signal.quantity, quantity == a.signal.quantity {
                    r.error(b.fields.mark("quantity"), b.fields.child("quantity"), "is already \(a.fields.path)'s quantity",
                            got: quantity.rawValue)
                }
                guard a.signal.quantity != nil || b.signal.quantity != nil, let shared = overlap(a.signal.location, b.signal.location)
                else { continue }
                let key = if case .can = b.signal.location { "can" } else { "modbus" }
                r.error(b.fields.mark(key), b.fields.child(key), "shares \(shared) with \(a.fields.path) '\(a.signal.name)'; "
                        + "only signals with no quantity may share bits")
            }
        }
        // A part of the BMS snapshot is made from all its quantities or none: one half given (a charge
        // limit without the discharge limit) would be read and never used (found by make fuzz).
        if kind == .bms {
            for part in ProfileGroup.Part.allCases {
                let needed = quantities(feeding: part)
                let given = signals.filter { $0.signal.quantity.map(needed.contains) ?? false }
                let missing = needed.filter { q in !given.contains { $0.signal.quantity == q } }
                guard let first = given.first, !missing.isEmpty else { continue }
                r.error(first.fields.mark("quantity"), first.fields.child("quantity"),
                        "the \(part.rawValue) part needs \(missing.map(\.rawValue).joined(separator: ", ")) too (all of "
                        + needed.map(\.rawValue).joined(separator: ", ") + ", or none)", got: first.signal.quantity?.rawValue ?? "")
            }
        }
        if kind == .inverter, !signals.contains(where: { $0.signal.quantity == .activePower }) {
            r.error(top.mark("signals"), "signals", "an inverter profile needs a signal of quantity active_power")
        }
    }

    /// What two locations share (`bits 8…15 of frame 0x351`, `register 4999`), or nil.
    static func overlap(_ a: SignalLocation, _ b: SignalLocation) -> String? {
        switch (a, b) {
        case (.can(let x), .can(let y)):
            guard x.frameID == y.frameID else { return nil }
            let low = max(x.byte * 8 + x.bit, y.byte * 8 + y.bit)
            let high = min(x.byte * 8 + x.bit + x.bits, y.byte * 8 + y.bit + y.bits)
            return low < high ? "bits \(low)…\(high - 1) of frame \(ProfileReader.hex(x.frameID))" : nil
        case (.modbus(let x), .modbus(let y)):
            guard x.table == y.table else { return nil }
            let low = max(x.address, y.address)
            let high = min(x.address + x.count, y.address + y.count)
            return low < high ? "\(x.table.rawValue) register \(low)" : nil
        default:
            return nil
        }
    }
}
