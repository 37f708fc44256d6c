public import ControlCore
public import Fieldbus
public import Config

/// One simulated battery unit (BMS + inverter) as bessd sees it in `mode: simulation`: the latest
/// values, stamped with the instant they were measured.
public struct SimulatedUnit: Sendable {
    public var battery: BatteryModel
    public var inverter: SimulatedInverter
    /// When true the simulated BMS stops publishing (its data goes stale).
    public var bmsSilent = false
    /// Values the BMS reports instead of the model's (fault injection: `bms_values`).
    public var bmsOverride = BMSOverride()
    /// Optional BMS groups the simulated BMS does not send (fault injection: `bms_group_silence`).
    /// The simulated BMS is one that sends every group, 0x373 included, so a silenced group is one
    /// that stopped: expected, and `BMS_GROUP_MISSING` when absent (`BMSSnapshot.expectedGroups`).
    public var silentGroups = BMSGroups()

    public init(battery: BatteryModel, inverter: SimulatedInverter) {
        self.battery = battery
        self.inverter = inverter
    }

    /// A unit sized by its capacity and rating.
    /// - Parameter hottestCellAbovePackK: how much warmer the hottest cell (0x373) reads than the pack (0x356).
    public init(capacityKWh: Double, maxPowerKW: Double, initialSOCPercent: Double, ambientCelsius: Double = 25,
                cellsInSeries: Int = 16, hottestCellAbovePackK: Double = 2) {
        var parameters = BatteryParameters.lfp(capacityWh: capacityKWh * 1000, maxPowerW: maxPowerKW * 1000,
                                               cellsInSeries: cellsInSeries, ambientCelsius: ambientCelsius)
        parameters.hottestCellAbovePackK = hottestCellAbovePackK
        battery = BatteryModel(parameters: parameters, soc: initialSOCPercent / 100)
        inverter = SimulatedInverter(ratingW: maxPowerKW * 1000)
    }

    /// Advances the plant by `interval` (the battery model integrates it in seconds).
    public mutating func step(by interval: Duration) {
        let volts = battery.packVoltage
        let dcPower = inverter.step(
            by: interval, chargeLimitW: battery.chargeCurrentLimit * volts,
            dischargeLimitW: battery.dischargeCurrentLimit * volts)
        battery.step(dcPowerW: dcPower, seconds: interval.secondsDouble)
    }

    /// Advances only the battery, with the AC power a real inverter measured (+ = discharge): the
    /// simulated BMS of a mixed HIL rig follows the real inverter.
    public mutating func stepBattery(measuredACPowerW power: Double, by interval: Duration) {
        let dc = power >= 0 ? power / inverter.efficiency : power * inverter.efficiency
        battery.step(dcPowerW: dc, seconds: interval.secondsDouble)
    }

    /// What the BMS reports, stamped at `now`; a group in `silentGroups` is absent, yet expected.
    public func bmsSnapshot(at now: MonotonicInstant) -> BMSSnapshot {
        var snapshot = everyGroup(at: now)
        snapshot.expectedGroups = .all
        if silentGroups.contains(.cells) { snapshot.cells = nil }
        if silentGroups.contains(.protection) { snapshot.protection = nil }
        if silentGroups.contains(.requests) { snapshot.requests = nil }
        return snapshot
    }

    func everyGroup(at now: MonotonicInstant) -> BMSSnapshot {
        let v = reported
        return BMSSnapshot(
            limits: Timestamped(BMSLimits(chargeVoltageLimit: Volts(3.55 * Double(battery.parameters.cellsInSeries)),
                                          chargeCurrentLimit: Amps(v.chargeCurrentLimit),
                                          dischargeCurrentLimit: Amps(v.dischargeCurrentLimit)), at: now),
            status: Timestamped(BMSStatus(soc: Percent(v.soc), soh: Percent(100)), at: now),
            measurements: Timestamped(BMSMeasurements(packVoltage: Volts(v.packVoltage), packCurrent: Amps(v.current),
                                                      temperature: Celsius(v.packTemperature)), at: now),
            cells: Timestamped(CellStatistics(minCellVoltage: Volts(v.minCell), maxCellVoltage: Volts(v.maxCell),
                                              minTemperature: Celsius(v.temperatureMin),
                                              maxTemperature: Celsius(v.temperatureMax)), at: now),
            protection: Timestamped(BMSProtectionState(protections: v.protections, alarms: v.alarms), at: now),
            requests: Timestamped(BMSRequests(chargeEnabled: v.chargeEnabled, dischargeEnabled: v.dischargeEnabled), at: now))
    }

    /// What the BMS reports: the model's values, its own protection logic, then any injected override.
    struct Reported {
        var soc, packVoltage, current, minCell, maxCell, temperatureMin, temperatureMax, packTemperature: Double
        var chargeCurrentLimit, dischargeCurrentLimit: Double
        var protections, alarms: BMSConditions
        var chargeEnabled, dischargeEnabled: Bool
    }

    var reported: Reported {
        let b = battery
        let o = bmsOverride
        var v = Reported(
            soc: o.socPercent ?? b.soc * 100, packVoltage: o.packVoltage ?? b.packVoltage, current: o.packCurrent ?? b.current,
            minCell: o.cellVoltageMin ?? b.minCellVoltage, maxCell: o.cellVoltageMax ?? b.maxCellVoltage,
            temperatureMin: o.temperatureMin ?? b.coolestCellTemperature,
            temperatureMax: o.temperatureMax ?? b.hottestCellTemperature,
            // An injected hottest cell moves the pack reading with it, keeping the model's offset.
            packTemperature: o.temperatureMax.map { $0 - b.parameters.hottestCellAbovePackK } ?? b.temperature,
            chargeCurrentLimit: o.chargeCurrentLimit ?? b.chargeCurrentLimit,
            dischargeCurrentLimit: o.dischargeCurrentLimit ?? b.dischargeCurrentLimit,
            protections: [], alarms: [], chargeEnabled: o.chargeEnabled ?? (b.soc < 1),
            dischargeEnabled: o.dischargeEnabled ?? (b.soc > 0))
        v.protections = [
            v.maxCell > 3.65 ? .cellOvervoltage : [], v.minCell < 2.70 ? .cellUndervoltage : [],
            v.temperatureMax > 60 ? .overtemperature : [],
        ]
        v.alarms = [
            v.maxCell > 3.55 ? .cellOvervoltage : [], v.minCell < 2.90 ? .cellUndervoltage : [],
            v.temperatureMax > 50 ? .overtemperature : [],
        ]
        if let flags = o.protections { v.protections = flags }
        if let flags = o.alarms { v.alarms = flags }
        return v
    }

    /// What a Pylontech-profile BMS on this pack sends (the HIL BMS emulator's frames).
    public var pylontechState: PylontechBMSState {
        let v = reported
        let n = Double(battery.parameters.cellsInSeries)
        return PylontechBMSState(
            chargeVoltageLimit: 3.55 * n, chargeCurrentLimit: v.chargeCurrentLimit, dischargeCurrentLimit: v.dischargeCurrentLimit,
            dischargeVoltageLimit: 2.9 * n, soc: v.soc, soh: 100, voltage: v.packVoltage, current: v.current,
            temperature: v.packTemperature, minCellVoltage: v.minCell, maxCellVoltage: v.maxCell,
            minCellTemperature: v.temperatureMin, maxCellTemperature: v.temperatureMax,
            protections: v.protections, alarms: v.alarms, chargeEnabled: v.chargeEnabled, dischargeEnabled: v.dischargeEnabled)
    }

    /// What the inverter reports, stamped at `now`: the reactive power it carries (0 until commanded), and
    /// `gridVoltage` raised 0.5 % at the inverter's rated export (lowered as much at its rated import).
    public func inverterReading(at now: MonotonicInstant, frequency: Double?, gridVoltage: Double? = nil) -> InverterReading {
        InverterReading(activePower: Watts(inverter.powerW), ratedPower: Watts(inverter.ratingW),
                        faulted: inverter.faulted, faultBits: inverter.faulted ? 1 : 0, frequency: frequency.map(Hertz.init),
                        reactivePower: inverter.reactiveVar, voltage: gridVoltage.map { $0 * (1 + 0.005 * inverter.powerW / max(1, inverter.ratingW)) },
                        connected: inverter.connected)
    }
}


