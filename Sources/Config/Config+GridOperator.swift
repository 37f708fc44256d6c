import Cycle
import ControlCore
internal import Yams

extension GridLimitInputsConfiguration {
    /// The keys of `grid_operator`.
    static let operatorKeys = ConfigKeys("grid_operator", [
        "inputs",
    ])

    /// The keys of `grid_operator.inputs.contacts[]`.
    static let contactKeys = ConfigKeys("grid_operator.inputs.contacts[]", [
        "input", "limit_percent",
    ])

    /// The keys of `grid_operator.inputs`.
    static let keys = ConfigKeys("grid_operator.inputs", [
        "modbus", "function", "active", "debounce_ms", "poll_ms", "lost_after_s", "contacts",
    ])

    /// `grid_operator:` — the grid operator's relay contacts through a Modbus I/O module.
    static func decode(_ fields: ConfigReader.Fields?, _ r: ConfigReader, units: [UnitConfiguration],
                                   site: SiteConfiguration, scada: ScadaConfiguration?) -> GridLimitInputsConfiguration? {
        guard let fields else { return nil }
        defer { fields.finish(Self.operatorKeys) }
        guard let i = fields.fields("inputs") else {
            if !fields.has("inputs") { r.error(fields.node, fields.child("inputs"), "is required (the relay contacts and their module)") }
            return nil
        }
        var modbus: ModbusSettings?
        if let m = i.fields("modbus") {
            modbus = ModbusSettings.decode(m, r)
            // One context per serial line: the module may not share a tty with another Modbus user.
            if case .rtu(let line)? = modbus?.transport {
                let taken = units.contains { if case .rtu(let u)? = $0.modbus?.transport { u.device == line.device } else { false } }
                    || { if case .rtu(let u)? = site.meter?.modbus?.transport { u.device == line.device } else { false } }()
                    || scada?.serial?.device == line.device
                if taken {
                    r.error(m.mark("device"), m.child("device"),
                            "is already another Modbus line's (a unit's, the meter's or SCADA's); give the I/O module a line of its own",
                            got: line.device)
                }
            }
        } else if !i.has("modbus") {
            r.error(i.node, i.child("modbus"), "is required: the Modbus I/O module (host or device, unit_id)")
        }
        let function = i.choice("function", [("discrete_inputs", GridLimitInputsConfiguration.Function.discreteInputs),
                                             ("coils", .coils)], default: .discreteInputs)
        let active = i.choice("active", [("high", true), ("low", false)], default: true)
        let debounce = i.int("debounce_ms", default: 100, range: 0...10_000, unit: "milliseconds")!
        let poll = i.int("poll_ms", default: 200, range: 20...5_000, unit: "milliseconds")!
        let lost = i.double("lost_after_s", default: 3, range: 0.1...60, unit: "seconds")!
        var contacts: [RelayContacts.Contact] = []
        if let list = i.sequence("contacts") {
            if list.isEmpty || list.count > 4 {
                r.error(i.mark("contacts"), i.child("contacts"), "lists one to four relay contacts", got: "\(list.count)")
            }
            var seen: [Int: Int] = [:]
            for (index, node) in list.enumerated() {
                guard let c = r.fields(node, i.child("contacts[\(index)]")) else { continue }
                let input = c.int("input", range: 0...65535)
                if input == nil, !c.has("input") { r.error(node, c.child("input"), "is required (the input or coil address on the module)") }
                let limit = c.double("limit_percent", range: 0...100, unit: "%")
                if limit == nil, !c.has("limit_percent") { r.error(node, c.child("limit_percent"), "is required (0–100)") }
                c.finish(Self.contactKeys)
                if let input {
                    if let first = seen[input] {
                        r.error(c.mark("input"), c.child("input"), "is contacts[\(first)]'s input too", got: String(input))
                    }
                    seen[input] = index
                }
                if let input, let limit { contacts.append(.init(input: input, limitPercent: limit)) }
            }
            if let low = contacts.map(\.input).min(), let high = contacts.map(\.input).max(), high - low >= 2000 {
                r.error(i.mark("contacts"), i.child("contacts"), "must lie within 2000 inputs of each other (read in one request)")
            }
        } else if !i.has("contacts") {
            r.error(i.node, i.child("contacts"), "is required: one to four {input, limit_percent}")
        }
        i.finish(Self.keys)
        guard let modbus, !contacts.isEmpty else { return nil }
        return GridLimitInputsConfiguration(modbus: modbus, function: function, activeHigh: active, debounce: .milliseconds(debounce),
                                            poll: .milliseconds(poll), lostAfter: .seconds(fromDouble: lost), contacts: contacts)
    }
}
