/// A measured AC voltage in per unit of a nominal: the one conversion every reader of voltage uses
/// (the unit's and the connection point's status, the voltage interlocks, the grid-support law), so
/// that a nonsense reading is absent everywhere at once.
public enum VoltageScale {
    /// `volts` ÷ `nominal`, both line to neutral; NaN when either is missing or not positive, or when
    /// the ratio lies outside `plausible` (0.5–1.5 p.u. by default: a 0 V or ×10 scale-factor error,
    /// or a line-to-line value taken for line to neutral, is absent, never an excursion).
    public static func perUnit(
        _ volts: Double?, nominal: Double?,
        plausible: ClosedRange<Double> = GridSupportSettings.plausibleVoltage
    ) -> Double {
        guard let volts, let nominal, volts.isFinite, nominal.isFinite, nominal > 0 else { return .nan }
        let pu = volts / nominal
        return plausible.contains(pu) ? pu : .nan
    }
}
