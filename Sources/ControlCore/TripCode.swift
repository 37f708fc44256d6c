/// Stable codes for every interlock. They appear in journald (`BESS_CODE=`), `bessctl faults`, the
/// uplink and the docs; never rename one, only add.
public enum TripCode: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    case cellOvervoltage
    case cellOvervoltageCritical
    case cellUndervoltage
    case cellUndervoltageCritical
    case cellVoltageHighDerate
    case cellVoltageLowDerate
    case cellImbalance
    case packOvervoltage
    case packUndervoltage
    case chargeOvercurrent
    case dischargeOvercurrent
    case temperatureHighDerate
    case overtemperature
    case overtemperatureCritical
    case undertemperatureCharge
    case undertemperatureDischarge
    case thermalRunaway
    case socHigh
    case socLow
    case bmsProtection
    case bmsAlarm
    case bmsCritical
    case bmsChargeDisabled
    case bmsDischargeDisabled
    case inverterFault
    case gridOverfrequency
    case gridUnderfrequency
    case gridRocof
    case bmsCommLost
    case inverterCommLost
    case frequencyLost
    case bmsGroupMissing
    /// Not a rule of the interlock table: the persisted latch state could not be read at start.
    case latchStateCorrupt
    /// The unit's AC voltage (`acVoltage`) and the connection point's (`gridVoltage`) out of range.
    case acOvervoltage
    case acUndervoltage
    case gridOvervoltage
    case gridUndervoltage

    /// The code as it appears in logs and APIs, e.g. `CELL_OVERVOLTAGE`.
    public var name: StaticString {
        switch self {
        case .cellOvervoltage: "CELL_OVERVOLTAGE"
        case .cellOvervoltageCritical: "CELL_OVERVOLTAGE_CRITICAL"
        case .cellUndervoltage: "CELL_UNDERVOLTAGE"
        case .cellUndervoltageCritical: "CELL_UNDERVOLTAGE_CRITICAL"
        case .cellVoltageHighDerate: "CELL_VOLTAGE_HIGH_DERATE"
        case .cellVoltageLowDerate: "CELL_VOLTAGE_LOW_DERATE"
        case .cellImbalance: "CELL_IMBALANCE"
        case .packOvervoltage: "PACK_OVERVOLTAGE"
        case .packUndervoltage: "PACK_UNDERVOLTAGE"
        case .chargeOvercurrent: "CHARGE_OVERCURRENT"
        case .dischargeOvercurrent: "DISCHARGE_OVERCURRENT"
        case .temperatureHighDerate: "TEMPERATURE_HIGH_DERATE"
        case .overtemperature: "OVERTEMPERATURE"
        case .overtemperatureCritical: "OVERTEMPERATURE_CRITICAL"
        case .undertemperatureCharge: "UNDERTEMPERATURE_CHARGE"
        case .undertemperatureDischarge: "UNDERTEMPERATURE_DISCHARGE"
        case .thermalRunaway: "THERMAL_RUNAWAY"
        case .socHigh: "SOC_HIGH"
        case .socLow: "SOC_LOW"
        case .bmsProtection: "BMS_PROTECTION"
        case .bmsAlarm: "BMS_ALARM"
        case .bmsCritical: "BMS_CRITICAL"
        case .bmsChargeDisabled: "BMS_CHARGE_DISABLED"
        case .bmsDischargeDisabled: "BMS_DISCHARGE_DISABLED"
        case .inverterFault: "INVERTER_FAULT"
        case .gridOverfrequency: "GRID_OVERFREQUENCY"
        case .gridUnderfrequency: "GRID_UNDERFREQUENCY"
        case .gridRocof: "GRID_ROCOF"
        case .bmsCommLost: "BMS_COMM_LOST"
        case .inverterCommLost: "INVERTER_COMM_LOST"
        case .frequencyLost: "FREQUENCY_LOST"
        case .bmsGroupMissing: "BMS_GROUP_MISSING"
        case .latchStateCorrupt: "LATCH_STATE_CORRUPT"
        case .acOvervoltage: "AC_OVERVOLTAGE"
        case .acUndervoltage: "AC_UNDERVOLTAGE"
        case .gridOvervoltage: "GRID_OVERVOLTAGE"
        case .gridUndervoltage: "GRID_UNDERVOLTAGE"
        }
    }

    public var description: String { "\(name)" }

    /// The code for a name as written in logs and configuration (`CELL_OVERVOLTAGE` or
    /// `cell_overvoltage`).
    public init?(name: String) {
        let wanted = name.uppercased()
        guard let match = TripCode.allCases.first(where: { "\($0.name)" == wanted }) else { return nil }
        self = match
    }

    /// What a field engineer needs to know, in one sentence.
    public var explanation: StaticString {
        switch self {
        case .cellOvervoltage: "highest cell voltage above the charge limit; charging stopped"
        case .cellOvervoltageCritical:
            "highest cell voltage far above the safe range; unit shut down, disconnect requested, operator reset required"
        case .cellUndervoltage: "lowest cell voltage below the discharge limit; discharging stopped"
        case .cellUndervoltageCritical:
            "lowest cell voltage far below the safe range; unit shut down, operator reset required"
        case .cellVoltageHighDerate: "cells near full; charge power reduced"
        case .cellVoltageLowDerate: "cells near empty; discharge power reduced"
        case .cellImbalance: "spread between highest and lowest cell voltage too large; check balancing"
        case .packOvervoltage: "pack voltage above its maximum; charging stopped"
        case .packUndervoltage: "pack voltage below its minimum; discharging stopped"
        case .chargeOvercurrent: "charge current above the BMS limit; charging stopped"
        case .dischargeOvercurrent: "discharge current above the BMS limit; discharging stopped"
        case .temperatureHighDerate: "battery warm; power reduced"
        case .overtemperature: "battery temperature above its limit; power stopped"
        case .overtemperatureCritical:
            "battery temperature far above its limit; unit shut down, operator reset required"
        case .undertemperatureCharge: "battery too cold to charge; charging stopped"
        case .undertemperatureDischarge: "battery too cold to discharge; discharging stopped"
        case .thermalRunaway:
            "battery temperature rising fast (possible thermal runaway); unit shut down, disconnect requested, operator reset required"
        case .socHigh: "state of charge at its upper bound; charging stopped"
        case .socLow: "state of charge at its lower bound; discharging stopped"
        case .bmsProtection: "BMS reports an active protection; power stopped"
        case .bmsAlarm: "BMS reports an alarm (warning)"
        case .bmsCritical: "BMS reports a system error; unit shut down, operator reset required"
        case .bmsChargeDisabled: "BMS forbids charging"
        case .bmsDischargeDisabled: "BMS forbids discharging"
        case .inverterFault: "inverter reports a fault; power stopped"
        case .gridOverfrequency: "grid frequency above the operating range; power stopped"
        case .gridUnderfrequency: "grid frequency below the operating range; power stopped"
        case .gridRocof: "grid frequency changing too fast (possible islanding); power stopped"
        case .bmsCommLost: "no fresh data from the BMS; power stopped until communication returns"
        case .inverterCommLost: "no fresh data from the inverter; power stopped until communication returns"
        case .frequencyLost: "no fresh grid frequency; frequency response suspended"
        case .bmsGroupMissing:
            "the BMS communicates but one of its optional frame groups never arrives or went stale; the rules that watch it cannot act (warning)"
        case .latchStateCorrupt:
            "the saved latch state was unreadable at start, so earlier latches are unknown; unit held at zero power until an operator checks it and runs bessctl reset"
        case .acOvervoltage: "AC voltage at the unit's inverter above the operating range; power stopped"
        case .acUndervoltage: "AC voltage at the unit's inverter below the operating range; power stopped"
        case .gridOvervoltage: "grid voltage at the connection point (site meter) above the operating range; power stopped"
        case .gridUndervoltage: "grid voltage at the connection point (site meter) below the operating range; power stopped"
        }
    }
}

/// A fixed-size set of trip codes, usable in the cycle without allocation.
public struct TripCodeSet: Sendable, Hashable, Sequence {
    public var bits: UInt64 = 0
    public init() {}
    @inlinable public var isEmpty: Bool { bits == 0 }
    @inlinable public var count: Int { bits.nonzeroBitCount }
    @inlinable public func contains(_ code: TripCode) -> Bool { bits & (1 << UInt64(code.rawValue)) != 0 }
    @inlinable public mutating func insert(_ code: TripCode) { bits |= 1 << UInt64(code.rawValue) }
    @inlinable public mutating func remove(_ code: TripCode) { bits &= ~(1 << UInt64(code.rawValue)) }

    public struct Iterator: IteratorProtocol {
        var remaining: UInt64
        public mutating func next() -> TripCode? {
            while remaining != 0 {
                let index = remaining.trailingZeroBitCount
                remaining &= remaining - 1
                if let code = TripCode(rawValue: UInt8(index)) { return code }
            }
            return nil
        }
    }
    public func makeIterator() -> Iterator { Iterator(remaining: bits) }
}
