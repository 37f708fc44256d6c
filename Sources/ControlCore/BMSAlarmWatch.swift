/// Whether a BMS frame just decoded calls for less power: the cases the cycle acts on at once (an
/// extra cycle, woken by the CAN worker) instead of at its next period. The CAN worker only decides
/// whether to wake the cycle; what to do is the cycle's, with its own interlocks. Only edges count —
/// a protection flag newly raised, charge or discharge newly disabled, a current limit falling by a
/// tenth or more (or to zero), a cell value newly past its critical (latching) threshold — so a value
/// that stays bad wakes nothing. The thresholds are the unit's interlock table's, nothing of the
/// watch's own: a rule the table does not have is not watched (the cycle's period still applies it).
/// Pure, no allocation: the worker calls it for every frame.
public struct BMSAlarmWatch: Sendable, Equatable {
    public var cellHighCritical: Double?
    public var cellLowCritical: Double?
    public var temperatureHighCritical: Double?

    /// The critical thresholds of a unit's interlock table.
    public init(rules: [InterlockRule]) {
        for rule in rules {
            switch rule.code {
            case .cellOvervoltageCritical: cellHighCritical = rule.threshold
            case .cellUndervoltageCritical: cellLowCritical = rule.threshold
            case .overtemperatureCritical: temperatureHighCritical = rule.threshold
            default: continue
            }
        }
    }

    /// How far a current limit must fall in one frame to wake the cycle: a tenth of what it was.
    /// Smaller steps (a taper, a BMS's jitter) are the next period's.
    public static let limitFall = 0.1

    public func callsForLess(before: BMSSnapshot, after: BMSSnapshot) -> Bool {
        if let now = after.protection?.value.protections {
            let was = before.protection?.value.protections ?? []
            if !now.subtracting(was).isEmpty { return true }
        }
        if let now = after.requests?.value {
            let was = before.requests?.value
            if !now.dischargeEnabled, was?.dischargeEnabled ?? true { return true }
            if !now.chargeEnabled, was?.chargeEnabled ?? true { return true }
        }
        if let now = after.limits?.value, let was = before.limits?.value {
            if Self.fell(now.dischargeCurrentLimit.value, from: was.dischargeCurrentLimit.value)
                || Self.fell(now.chargeCurrentLimit.value, from: was.chargeCurrentLimit.value) { return true }
        }
        if let now = after.cells?.value {
            let was = before.cells?.value
            if let high = cellHighCritical, now.maxCellVoltage.value >= high, !((was?.maxCellVoltage.value ?? 0) >= high) { return true }
            if let low = cellLowCritical, now.minCellVoltage.value <= low, !((was?.minCellVoltage.value ?? .infinity) <= low) { return true }
            if let hot = temperatureHighCritical, now.maxTemperature.value >= hot,
               !((was?.maxTemperature.value ?? -.infinity) >= hot) { return true }
        }
        return false
    }

    /// A limit that fell by `limitFall` of its value or more, or to zero from above it.
    static func fell(_ now: Double, from was: Double) -> Bool {
        guard now.isFinite, was.isFinite, now < was else { return false }
        return now <= 0 || was - now >= was * limitFall
    }
}
