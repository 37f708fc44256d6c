import GridSupport

// The connection point's voltage as `GRID_OVERVOLTAGE`/`GRID_UNDERVOLTAGE`, the site's status and
// the site's reactive law read it, in per unit through `VoltageScale.perUnit` (the conversion every
// reader of voltage shares, so a nonsense reading is absent everywhere at once). No allocation.

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

    /// The meter's reading for the site's reactive law while this connection point took it this step
    /// (fresh): its instant, var (nil when it measures none) and p.u. voltage: `gridVoltagePU` when the
    /// meter measures one (nil when that is implausible: 0 var), else the units' mean; nil otherwise.
    func reactiveReading(_ meter: Timestamped<MeterReading>?, units: [UnitController], gridVoltagePU: Double?)
        -> (takenAt: MonotonicInstant, reactive: Double?, voltagePU: Double?)?
    {
        guard settings.hasMeter, gridPower != nil, let meter else { return nil }
        let q = meter.value.reactivePower.flatMap { $0.isFinite ? $0 : nil }
        let voltage = meter.value.voltage == nil ? SiteReactiveLaw.meanVoltage(units) : gridVoltagePU
        return (meter.takenAt, q, voltage)
    }
}
