import BessBase
import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import Fieldbus

extension StatusReport {
    /// `units[i].bms` of `status`: what the cycle last published for the unit's BMS (judged fresh by
    /// its `stale_after_s`), and for a real BMS what its worker last decoded with the unit's protocol
    /// or profile (limits, cells, protections, requests) and the link's fault.
    func bmsReply(_ index: Int, _ unit: UnitConfiguration, _ u: UnitStatus) -> BMSReply {
        let settings = unit.bms
        let profile = settings.simulated ? "simulated" : settings.profile?.name ?? BMSReply.builtInProfile
        var reply = BMSReply(profile: profile, transport: settings.simulated ? nil : settings.transport.rawValue, online: u.bmsOnline)
        reply.socPercent = finite(u.soc)
        reply.sohPercent = finite(u.soh)
        reply.voltageV = finite(u.voltage)
        reply.currentA = finite(u.current)
        reply.temperatureMinC = finite(u.temperatureMin)
        reply.temperatureMaxC = finite(u.temperatureMax)
        reply.chargeCurrentLimitA = finite(u.chargeCurrentLimit)
        reply.dischargeCurrentLimitA = finite(u.dischargeCurrentLimit)
        // Current limit × pack voltage unless the BMS states the power itself (below).
        reply.chargeLimitW = finite(u.chargeCurrentLimit * u.voltage)
        reply.dischargeLimitW = finite(u.dischargeCurrentLimit * u.voltage)
        let slots = view.runner.bmsSlots
        guard index < slots.count, let slot = slots[index] else { return reply }
        reply.fault = slot.fault
        let snapshot = slot.snapshot
        let now = SystemClock.shared.now()
        let maxAge = settings.staleAfter
        if let limits = snapshot.limits.fresh(at: now, maxAge: maxAge) {
            reply.chargeVoltageLimitV = limits.chargeVoltageLimit.map(\.value)
            reply.dischargeVoltageLimitV = limits.dischargeVoltageLimit.map(\.value)
        }
        // The power the BMS states itself (a profile's power-limit signals), while fresh.
        if let stated = slot.statedPowerLimits, now - stated.at <= maxAge {
            reply.chargeLimitW = stated.charge ?? reply.chargeLimitW
            reply.dischargeLimitW = stated.discharge ?? reply.dischargeLimitW
        }
        if let cells = snapshot.cells.fresh(at: now, maxAge: maxAge) {
            reply.cellVoltageMinV = finite(cells.minCellVoltage.value)
            reply.cellVoltageMaxV = finite(cells.maxCellVoltage.value)
        }
        if let protection = snapshot.protection.fresh(at: now, maxAge: maxAge) {
            reply.protections = Self.conditionNames(protection.protections)
            reply.alarms = Self.conditionNames(protection.alarms)
        }
        if let requests = snapshot.requests.fresh(at: now, maxAge: maxAge) {
            reply.chargeEnabled = requests.chargeEnabled
            reply.dischargeEnabled = requests.dischargeEnabled
        }
        return reply
    }

    /// The profile names of `conditions` (`cell_overvoltage`, …), in the profile's order.
    static func conditionNames(_ conditions: BMSConditions) -> [String] {
        ProfileAlarm.Condition.allCases.filter { conditions.contains($0.condition) }.map(\.rawValue)
    }

    private func finite(_ x: Double) -> Double? { x.isFinite ? x : nil }
}

extension BMSReply {
    /// The profile a BMS configured with `protocol: pylontech` is read with (bessd's built-in one).
    static let builtInProfile = "pylontech-lv"
}
