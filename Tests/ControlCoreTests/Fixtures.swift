import ControlCore

/// Shared builders for control-core tests: a healthy 100 kW unit on a 52 V pack whose BMS limits
/// (2500 A) exceed the rating, so the rating (or droop) decides unless a test says otherwise.
enum Fixture {
    static let rating = Watts.kilowatts(100)

    static func instant(_ seconds: Double) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: Int64((seconds * 1e9).rounded()))
    }

    /// - Parameters:
    ///   - temperature: the pack temperature (0x356).
    ///   - hottestCell: the hottest cell's temperature (0x373); the pack's when nil.
    static func healthyBMS(
        at t: MonotonicInstant, soc: Double = 60, chargeA: Double = 2500, dischargeA: Double = 2500,
        volts: Double = 52, currentA: Double = 0, temperature: Double = 25, hottestCell: Double? = nil,
        cellMax: Double = 3.30, cellMin: Double = 3.28, protections: BMSConditions = [], alarms: BMSConditions = [],
        chargeEnabled: Bool = true, dischargeEnabled: Bool = true
    ) -> BMSSnapshot {
        BMSSnapshot(
            limits: Timestamped(
                BMSLimits(chargeCurrentLimit: Amps(chargeA), dischargeCurrentLimit: Amps(dischargeA)), at: t),
            status: Timestamped(BMSStatus(soc: Percent(soc), soh: Percent(99)), at: t),
            measurements: Timestamped(
                BMSMeasurements(packVoltage: Volts(volts), packCurrent: Amps(currentA),
                                temperature: Celsius(temperature)), at: t),
            cells: Timestamped(
                CellStatistics(minCellVoltage: Volts(cellMin), maxCellVoltage: Volts(cellMax),
                               minTemperature: Celsius(temperature - 1), maxTemperature: Celsius(hottestCell ?? temperature)),
                at: t),
            protection: Timestamped(BMSProtectionState(protections: protections, alarms: alarms), at: t),
            requests: Timestamped(BMSRequests(chargeEnabled: chargeEnabled, dischargeEnabled: dischargeEnabled),
                                  at: t))
    }

    static func healthyInputs(at t: MonotonicInstant, power: Double = 0) -> UnitInputs {
        UnitInputs(
            bms: healthyBMS(at: t),
            inverter: Timestamped(InverterReading(activePower: Watts(power), ratedPower: rating), at: t))
    }

    /// A site of one unit with droop settings `droop` (immediate response unless given).
    static func site(
        droop: DroopSettings = immediateDroop, limitRamp: Double = 1000, scheduleRamp: Double = 1000,
        rules: [InterlockRule]? = nil
    ) -> SiteController {
        SiteController(
            control: ControlSettings(droop: droop, limitRampPercentPerSecond: limitRamp,
                                     scheduleRampPercentPerSecond: scheduleRamp),
            units: [UnitSettings(rating: rating, capacity: WattHours(250_000), rules: rules)],
            startedAt: .zero)
    }

    static var immediateDroop: DroopSettings {
        var settings = DroopSettings.seedDefault
        settings.responseTime = .zero
        return settings
    }

    /// Runs `site` for `seconds` at `period` with healthy inputs and a fixed frequency; returns the
    /// last decision.
    @discardableResult
    static func run(
        _ site: SiteController, from start: Double = 0, seconds: Double, period: Double = 0.1,
        frequency: Double = 50.0, inputs: ((MonotonicInstant) -> UnitInputs)? = nil, wallClock: Double? = nil
    ) -> UnitDecision {
        var t = start
        let steps = Int((seconds / period).rounded())
        for _ in 0..<steps {
            t += period
            let now = instant(t)
            let unitInputs = inputs?(now) ?? healthyInputs(at: now)
            site.step(frequency: Timestamped(Hertz(frequency), at: now), inputs: [unitInputs], now: now,
                      wallClock: wallClock ?? 1_800_000_000 + t)
        }
        return site.decision(unit: 0)
    }
}
