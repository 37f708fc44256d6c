/// The site as every protocol reports it, from one publication of the cycle (`units`, `site`) and
/// the units' usable energy: the one place that says what the site's net power and state of charge
/// are. Computed once per publication, inside the lock (`CycleOutbox.publishStatus`), and read with
/// it by SCADA (model 701, 713), IEC 104 (the monitor points) and IEEE 2030.5 (the reporter's
/// sample); no allocation.
///
/// Power in bessd's convention, + = discharge / export (docs/design/0003). A quantity no unit reads
/// is NaN.
public struct SiteView: Sendable, Equatable {
    /// Σ units' measured active power, W (+ = discharge); NaN when no unit reads one.
    public var unitsW: Double = .nan
    /// Active power at the connection point from a fresh meter reading, W (+ = export); NaN
    /// without one.
    public var meteredW: Double = .nan
    /// The site's state of charge, percent, weighted by usable energy over the units that read
    /// theirs (as the BMSs state it: not clamped); NaN when none does.
    public var socPercent: Double = .nan
    /// Energy stored, Wh (Σ SOC × usable energy), and room to full, Wh (Σ (100 − SOC) × usable
    /// energy), over the same units; NaN when none reads its SOC.
    public var storedWh: Double = .nan
    public var toFullWh: Double = .nan
    /// As `storedWh` and `socPercent`, each unit's SOC clamped to 0…100 and only units with usable
    /// energy counted: what the IEEE 2030.5 reports post (SCADA and IEC 104 show the SOC as stated).
    public var clampedStoredWh: Double = .nan
    public var clampedSOCPercent: Double = .nan

    /// The view of one publication; `capacitiesWh[i]` is unit `i`'s usable energy (units beyond
    /// it count for power only).
    public init(units: [UnitStatus], site: SiteStatus, capacitiesWh: [Double]) {
        if !site.meterStale && site.gridPower.isFinite { meteredW = -site.gridPower }
        var power = 0.0, powered = false
        var weighted = 0.0, stored = 0.0, toFull = 0.0, capacity = 0.0
        var clampedStored = 0.0, clampedCapacity = 0.0
        for (i, unit) in units.enumerated() {
            if unit.power.isFinite {
                power += unit.power
                powered = true
            }
            guard i < capacitiesWh.count, unit.soc.isFinite else { continue }
            let energy = capacitiesWh[i]
            weighted += unit.soc * energy
            stored += unit.soc / 100 * energy
            toFull += (100 - unit.soc) / 100 * energy
            capacity += energy
            if energy > 0 {
                clampedStored += min(max(unit.soc, 0), 100) / 100 * energy
                clampedCapacity += energy
            }
        }
        if powered { unitsW = power }
        if capacity > 0 {
            socPercent = weighted / capacity
            storedWh = stored
            toFullWh = toFull
        }
        if clampedCapacity > 0 {
            clampedStoredWh = clampedStored
            clampedSOCPercent = clampedStored / clampedCapacity * 100
        }
    }

    public init() {}

    /// Net power at the connection point, W (+ = export): the meter's when the site has one (NaN
    /// while it is stale), else the units' sum.
    public func netW(hasMeter: Bool) -> Double { hasMeter ? meteredW : unitsW }
}
