import GridSupport

// The connection point's voltage as `GRID_OVERVOLTAGE`/`GRID_UNDERVOLTAGE` and the site's status
// read it, in per unit through `VoltageScale.perUnit` (the conversion every reader of voltage
// shares, so a nonsense reading is absent everywhere at once). No allocation.

extension ConnectionPoint {
    /// The connection point's voltage, per unit of `settings.nominalVoltageV`, from `meter` while it
    /// is fresh (`meterStaleAfter`, a finite grid power, as `update` takes it); nil without a fresh
    /// reading, a measured voltage, a nominal, or a plausible ratio.
    public func voltagePU(_ meter: Timestamped<MeterReading>?, at now: MonotonicInstant) -> Double? {
        guard let reading = meter.fresh(at: now, maxAge: settings.meterStaleAfter), reading.gridPower.value.isFinite
        else { return nil }
        let pu = VoltageScale.perUnit(reading.voltage, nominal: settings.nominalVoltageV)
        return pu.isFinite ? pu : nil
    }
}
