public import ControlCore
public import Fieldbus

/// One simulated battery unit (BMS + inverter) as bessd sees it in `mode: simulation`: the latest
/// values, stamped with the instant they were measured.
public struct SimulatedUnit: Sendable {
    public var battery: BatteryModel
    public var inverter: SimulatedInverter
    /// When true the simulated BMS stops publishing (its data goes stale).
    public var bmsSilent = false

    public init(battery: BatteryModel, inverter: SimulatedInverter) {
        self.battery = battery
        self.inverter = inverter
    }

    /// A unit sized by its capacity and rating.
    public init(capacityKWh: Double, maxPowerKW: Double, initialSOCPercent: Double, ambientCelsius: Double = 25,
                cellsInSeries: Int = 16) {
        let parameters = BatteryParameters.lfp(capacityWh: capacityKWh * 1000, maxPowerW: maxPowerKW * 1000,
                                               cellsInSeries: cellsInSeries, ambientCelsius: ambientCelsius)
        battery = BatteryModel(parameters: parameters, soc: initialSOCPercent / 100)
        inverter = SimulatedInverter(ratingW: maxPowerKW * 1000)
    }

    /// Advances the plant by `seconds`.
    public mutating func step(seconds: Double) {
        let volts = battery.packVoltage
        let dcPower = inverter.step(
            seconds: seconds, chargeLimitW: battery.chargeCurrentLimit * volts,
            dischargeLimitW: battery.dischargeCurrentLimit * volts)
        battery.step(dcPowerW: dcPower, seconds: seconds)
    }

    /// Advances only the battery, with the AC power a real inverter measured (+ = discharge): the
    /// simulated BMS of a mixed HIL rig follows the real inverter.
    public mutating func stepBattery(measuredACPowerW power: Double, seconds: Double) {
        let dc = power >= 0 ? power / inverter.efficiency : power * inverter.efficiency
        battery.step(dcPowerW: dc, seconds: seconds)
    }

    /// What the BMS reports, stamped at `now` (the last published values when silent).
    public func bmsSnapshot(at now: MonotonicInstant) -> BMSSnapshot {
        let b = battery
        let protections: BMSConditions = [
            b.maxCellVoltage > 3.65 ? .cellOvervoltage : [], b.minCellVoltage < 2.70 ? .cellUndervoltage : [],
            b.temperature > 60 ? .overtemperature : [],
        ]
        let alarms: BMSConditions = [
            b.maxCellVoltage > 3.55 ? .cellOvervoltage : [], b.minCellVoltage < 2.90 ? .cellUndervoltage : [],
            b.temperature > 50 ? .overtemperature : [],
        ]
        return BMSSnapshot(
            limits: Timestamped(BMSLimits(chargeVoltageLimit: Volts(3.55 * Double(b.parameters.cellsInSeries)),
                                          chargeCurrentLimit: Amps(b.chargeCurrentLimit),
                                          dischargeCurrentLimit: Amps(b.dischargeCurrentLimit)), at: now),
            status: Timestamped(BMSStatus(soc: Percent(b.soc * 100), soh: Percent(100)), at: now),
            measurements: Timestamped(BMSMeasurements(packVoltage: Volts(b.packVoltage), packCurrent: Amps(b.current),
                                                      temperature: Celsius(b.temperature)), at: now),
            cells: Timestamped(CellStatistics(minCellVoltage: Volts(b.minCellVoltage), maxCellVoltage: Volts(b.maxCellVoltage),
                                              minTemperature: Celsius(b.temperature - 1),
                                              maxTemperature: Celsius(b.temperature)), at: now),
            protection: Timestamped(BMSProtectionState(protections: protections, alarms: alarms), at: now),
            requests: Timestamped(BMSRequests(chargeEnabled: b.soc < 1, dischargeEnabled: b.soc > 0), at: now))
    }

    /// What a Pylontech-profile BMS on this pack sends (the HIL BMS emulator's frames).
    public var pylontechState: PylontechBMSState {
        let b = battery
        let snapshot = bmsSnapshot(at: .zero)
        let n = Double(b.parameters.cellsInSeries)
        return PylontechBMSState(
            chargeVoltageLimit: 3.55 * n, chargeCurrentLimit: b.chargeCurrentLimit, dischargeCurrentLimit: b.dischargeCurrentLimit,
            dischargeVoltageLimit: 2.9 * n, soc: b.soc * 100, soh: 100, voltage: b.packVoltage, current: b.current,
            temperature: b.temperature, minCellVoltage: b.minCellVoltage, maxCellVoltage: b.maxCellVoltage,
            minCellTemperature: b.temperature - 1, maxCellTemperature: b.temperature,
            protections: snapshot.protection?.value.protections ?? [], alarms: snapshot.protection?.value.alarms ?? [],
            chargeEnabled: b.soc < 1, dischargeEnabled: b.soc > 0)
    }

    /// What the inverter reports, stamped at `now`.
    public func inverterReading(at now: MonotonicInstant, frequency: Double?) -> InverterReading {
        InverterReading(activePower: Watts(inverter.powerW), ratedPower: Watts(inverter.ratingW),
                        faulted: inverter.faulted, faultBits: inverter.faulted ? 1 : 0, frequency: frequency.map(Hertz.init))
    }
}
