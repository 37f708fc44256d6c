public import Config
public import Cycle
public import ControlCore

/// Renders control events as one line a person reads at 3 a.m.
public enum EventText {
    /// `BESS_DC01_01 CELL_OVERVOLTAGE tripped: highest cell voltage … (3.700 V, limit 3.650 V)`
    public static func line(_ event: ControlEvent, unitID: String) -> String {
        switch event.kind {
        case .stateChanged:
            return "\(unitID) state \(event.state.map(\.description) ?? "?")"
        case .commandRejected:
            return "\(unitID) COMMAND_REJECTED: a dispatch or override was not a finite number and is ignored"
        case .siteShortfall:
            return "site SITE_SHORTFALL: the units cannot deliver \(number(event.value)) kW of the \(number(event.threshold)) kW asked"
        case .siteShortfallCleared:
            return "site SITE_SHORTFALL cleared: the units deliver what the site is asked"
        case .meterStale:
            return "site METER_STALE: no fresh reading from the connection-point meter for \(number(event.value)) s; "
                + "the site application rests and the grid limits hold their last values"
        case .meterFresh:
            return "site METER_STALE cleared: the connection-point meter answers again"
        case .gridLimitBinding:
            return "site GRID_LIMIT_BINDING: the \(event.limit) limit of \(number(event.threshold)) kW decides the batteries' power "
                + "(grid \(number(event.value)) kW, + = import)"
        case .gridLimitReleased:
            return "site GRID_LIMIT_BINDING cleared: the \(event.limit) limit has not bound for 5 s"
        case .operatorLimitReverted:
            return "site SCADA_LIMIT_REVERTED: the grid operator's limit was not refreshed; "
                + (event.value.isFinite ? "its reversion value \(number(event.value)) % is in force" : "no limit stands, power rises at the limit ramp")
        case .siteSetpointReverted:
            return "site SCADA_SETPOINT_REVERTED: the site setpoint was not refreshed; "
                + (event.value.isFinite ? "its reversion value \(number(event.value)) kW is in force" : "it has ended, dispatch decides again")
        case .siteReactiveReverted:
            return "site SCADA_SETPOINT_REVERTED: the site var setpoint (VarSet, IEC 104 3003) was not refreshed; "
                + (event.value.isFinite ? "its reversion value \(number(event.value)) kvar is in force" : "it has ended, Q follows the next party or the configured mode")
        case .sitePowerFactorInjectingReverted, .sitePowerFactorAbsorbingReverted:
            let which = event.kind == .sitePowerFactorInjectingReverted ? "discharging (PFWInj" : "charging (PFWAbs"
            return "site SCADA_SETPOINT_REVERTED: the site power factor while \(which), IEC 104 3004) was not refreshed; "
                + (event.value.isFinite ? "its reversion value \(number(event.value)) is in force" : "it has ended, Q follows the next party or the configured mode")
        case .agcSignalLost:
            return "site AGC_SIGNAL_LOST: AGC is in service but no target came for \(number(event.threshold)) s; "
                + "the site ramps back to its schedule" + (event.value.isFinite ? " (last target \(number(event.value)) kW)" : "")
        case .agcSignalRestored:
            return "site AGC_SIGNAL_LOST cleared: a fresh AGC target of \(number(event.value)) kW, the site follows AGC again"
        case .frequencySourceFallback:
            return "site FREQUENCY_SOURCE_FALLBACK: no usable PMU sample younger than \(number(event.threshold)) ms ("
                + (event.value.isFinite ? "the newest is \(number(event.value)) ms old" : "none yet")
                + "); the droop follows the inverters' median frequency"
        case .frequencySourceRestored:
            return "site FREQUENCY_SOURCE_FALLBACK cleared: the PMU's samples are usable again "
                + "(\(number(event.value)) ms old); the droop follows the PMU"
        case .responseReserveReached, .responseReserveCleared:
            let discharge = event.reserve != .charge
            let way = discharge ? "discharge" : "charge"
            if event.kind == .responseReserveReached {
                return "\(unitID) RESPONSE_RESERVE_REACHED: SOC \(number(event.value)) % is at its \(way) reserve "
                    + "(\(discharge ? "down to" : "up to") \(number(event.threshold)) %); dispatch, AGC and setpoints stop \(discharge ? "discharging" : "charging") it, "
                    + "frequency response keeps the reserve"
            }
            return "\(unitID) RESPONSE_RESERVE_REACHED cleared: SOC \(number(event.value)) % is back inside its \(way) reserve band "
                + "(\(number(event.threshold)) % \(discharge ? "+" : "−") \(number(ResponseReserve.resumeMarginPercent)) %); dispatch may \(way) it again"
        case .scheduleFallback:
            return "site SCHEDULE_FALLBACK: no block of the schedule is in force; "
                + (event.value == 1 ? "the schedule asks 0 of the units" : "the site application decides")
        case .scheduleResumed:
            return "site SCHEDULE_FALLBACK cleared: a block of the schedule is in force again (target \(number(event.value)) kWh)"
        case .raised, .cleared, .latched, .resetAccepted, .resetRefused:
            guard let code = event.code else { return "\(unitID) \(event.kind)" }
            let verb: String
            switch event.kind {
            case .raised:
                switch event.severity {
                case .warn?: verb = "warning"
                case .derate?: verb = "derating"
                default: verb = "tripped"
                }
            case .cleared: verb = "cleared"
            case .latched: verb = "LATCHED"
            case .resetAccepted: verb = "reset accepted"
            default: verb = "reset refused (condition still present or unknown)"
            }
            let unit = event.metric.map { "\($0.unitSymbol)" } ?? ""
            var text = "\(unitID) \(code.name) \(verb)"
            if event.kind != .cleared { text += ": \(code.explanation)" }
            if event.metric == .bmsGroupsMissing {
                if event.value.isFinite { text += " (\(groupList(event.value)))" }
            } else if event.value.isFinite {
                text += " (\(number(event.value)) \(unit), limit \(number(event.threshold)) \(unit))"
            }
            return text
        }
    }

    /// `missing: 0x373 cells, 0x359 protection` for a `bmsGroupsMissing` value, `none missing` for 0.
    static func groupList(_ value: Double) -> String {
        guard value.isFinite, value >= 0, value < 256 else { return "missing: ?" }
        let missing = BMSGroups(rawValue: UInt8(value))
        var names: [String] = []
        for bit in 0..<8 {
            let group = BMSGroups(rawValue: 1 << UInt8(bit))
            guard missing.contains(group) else { continue }
            names.append(group.name.map { "\($0)" } ?? "group bit \(bit)")
        }
        return names.isEmpty ? "none missing" : "missing: " + names.joined(separator: ", ")
    }

    static func number(_ value: Double) -> String {
        guard value.isFinite else { return "?" }
        let rounded = (value * 1000).rounded() / 1000
        return "\(rounded)"
    }

    /// Severity of an event for logs: 2 critical, 3 error, 4 warning, 5 notice, 6 info (the journal's
    /// table, `EventJournal.entry(for:)`).
    public static func priority(_ event: ControlEvent) -> Int {
        EventJournal.entry(for: event).priority
    }
}
