/// Whether a BMS frame just decoded calls for less power than the cycle commands now: the cases
/// the cycle acts on at once (an extra cycle, woken by the CAN worker) instead of at its next
/// period. Only edges count — a protection flag newly raised, charge or discharge newly disabled,
/// the limit in the commanded direction falling below the commanded power, a cell value newly
/// past its critical (latching) threshold — and only while the unit commands power in a direction
/// the change cuts: a value that stays bad, or a unit already at zero, wakes nothing. Pure, no
/// allocation: the worker calls it for every frame.
public struct BMSAlarmWatch: Sendable, Equatable {
    public var cellHighCritical: Double
    public var cellLowCritical: Double
    public var temperatureHighCritical: Double

    public init(cellHighCritical: Double = 3.80, cellLowCritical: Double = 2.50, temperatureHighCritical: Double = 65) {
        self.cellHighCritical = cellHighCritical
        self.cellLowCritical = cellLowCritical
        self.temperatureHighCritical = temperatureHighCritical
    }

    /// The critical thresholds of a unit's interlock table (a rule disabled in the configuration
    /// keeps the default: waking the cycle early never raises a trip by itself).
    public init(rules: [InterlockRule]) {
        self.init()
        for rule in rules {
            switch rule.code {
            case .cellOvervoltageCritical: cellHighCritical = rule.threshold
            case .cellUndervoltageCritical: cellLowCritical = rule.threshold
            case .overtemperatureCritical: temperatureHighCritical = rule.threshold
            default: continue
            }
        }
    }

    /// - Parameter commandedW: the setpoint the cycle commands now, W, + = discharge.
    public func callsForLess(before: BMSSnapshot, after: BMSSnapshot, commandedW: Double) -> Bool {
        guard abs(commandedW) >= 1 else { return false }  // nothing to cut
        let discharging = commandedW > 0
        if let now = after.protection?.value.protections {
            let was = before.protection?.value.protections ?? []
            if !now.subtracting(was).isEmpty { return true }
        }
        if let now = after.requests?.value {
            let was = before.requests?.value
            if discharging, !now.dischargeEnabled, was?.dischargeEnabled ?? true { return true }
            if !discharging, !now.chargeEnabled, was?.chargeEnabled ?? true { return true }
        }
        if let now = after.limits?.value, let was = before.limits?.value, let volts = after.measurements?.value.packVoltage.value,
           volts > 0 {
            let limit = discharging ? now.dischargeCurrentLimit.value : now.chargeCurrentLimit.value
            let previous = discharging ? was.dischargeCurrentLimit.value : was.chargeCurrentLimit.value
            if limit < previous, limit * volts < abs(commandedW) { return true }
        }
        if let now = after.cells?.value {
            let was = before.cells?.value
            if now.maxCellVoltage.value >= cellHighCritical, !((was?.maxCellVoltage.value ?? 0) >= cellHighCritical) { return true }
            if now.minCellVoltage.value <= cellLowCritical, !((was?.minCellVoltage.value ?? .infinity) <= cellLowCritical) { return true }
            if now.maxTemperature.value >= temperatureHighCritical,
               !((was?.maxTemperature.value ?? -.infinity) >= temperatureHighCritical) { return true }
        }
        return false
    }
}
