public import ControlCore

/// The site as every protocol reports it, from one publication of the cycle (`units`, `site`) and
/// what the site was started with (`SiteView.Settings`): the one place that says what the site's
/// net power, state of charge, availability and ratings are. Computed once per publication, inside
/// the lock (`CycleOutbox.publishStatus`), and read with it by SCADA (model 701, 713), IEC 104 (the
/// monitor points), IEEE 2030.5 (the reporter's sample) and the uplink (the availability record);
/// no allocation.
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
    /// What the site can still offer up (more discharge) and down (more charge) from its present
    /// setpoints, W, never negative: the units' allowed power (discharge only from units above the
    /// SOC reserve and neither way from a unit at its frequency-response reserve), inside the grid
    /// limits at the meter's present reading (`SiteStatus.gridPower`; not finite: nothing offered
    /// in the direction a limit bounds). What the uplink's availability record reports as the site's.
    public var availableUpW: Double = 0
    public var availableDownW: Double = 0
    /// Σ units' measured reactive power, var (+ = injecting, over-excited, as + = discharge); NaN
    /// when no unit reads one.
    public var unitsVar: Double = .nan
    /// Reactive power at the connection point from a fresh meter reading, var (+ = injecting into
    /// the grid, as `meteredW` + = export); NaN without one or when the meter measures none.
    public var meteredVar: Double = .nan
    /// The mean AC voltage of the units that read a positive one, V (line to neutral); NaN when none.
    public var unitsVoltageV: Double = .nan
    /// The connection point's voltage from a fresh meter reading, V (line to neutral); NaN without.
    public var meteredVoltageV: Double = .nan
    /// The site's voltage, per unit: the meter's (`SiteStatus.gridVoltagePU`) when it is fresh and
    /// plausible, else the mean of the units' plausible per-unit voltages; NaN when there is none.
    public var voltagePU: Double = .nan
    /// The site's reactive capability, var, each way: Σ `VarMaxInj` / Σ `VarMaxAbs` of the units
    /// whose inverters have var points (702, else the unit's `VAMax`); 0 when none has. What a var
    /// or power-factor command is judged against when it arrives (`acceptsVar`, `acceptsPowerFactor`).
    public var varMaxInjecting: Double = 0
    public var varMaxAbsorbing: Double = 0
    /// Σ `VAMax` of the same units (each as its law runs it), VA; 0 when none has var points. What a
    /// 2030.5 curve's y, % of `varMaxInjecting` / `varMaxAbsorbing`, is rescaled by to the % of each
    /// unit's `VAMax` the law takes (docs/design/0010-reactive-power.md, 2030.5 curves).
    public var apparentPowerVA: Double = 0
    /// Σ units' rated power, W, and Σ usable energy, Wh, as the site was started with.
    public var ratedPowerW: Double = 0
    public var usableEnergyWh: Double = 0
    /// The schedule's block in force, its report so far (`SiteStatus.scheduleBlock`); nil: none.
    public var scheduleBlock: ScheduleBlockReport?

    /// The view of one publication. `settings.capacitiesWh[i]` is unit `i`'s usable energy (units
    /// beyond it count for power only).
    public init(units: [UnitStatus], site: SiteStatus, settings: Settings) {
        if !site.meterStale && site.gridPower.isFinite { meteredW = -site.gridPower }
        if !site.meterStale && site.gridReactivePower.isFinite { meteredVar = -site.gridReactivePower }
        if !site.meterStale && site.gridVoltage > 0 { meteredVoltageV = site.gridVoltage }
        var reactive = 0.0, reactiveRead = false, volts = 0.0, voltsRead = 0, perUnit = 0.0, perUnitRead = 0
        let capacitiesWh = settings.capacitiesWh
        var power = 0.0, powered = false
        var weighted = 0.0, stored = 0.0, toFull = 0.0, capacity = 0.0
        var clampedStored = 0.0, clampedCapacity = 0.0
        var setpoints = 0.0, up = 0.0, down = 0.0
        var varInjecting = 0.0, varAbsorbing = 0.0, apparent = 0.0
        for (i, unit) in units.enumerated() {
            if unit.varMaxInjecting.isFinite { varInjecting += max(0, unit.varMaxInjecting) }
            if unit.varMaxAbsorbing.isFinite { varAbsorbing += max(0, unit.varMaxAbsorbing) }
            if unit.apparentPowerVA.isFinite { apparent += max(0, unit.apparentPowerVA) }
            if unit.power.isFinite {
                power += unit.power
                powered = true
            }
            if unit.reactivePower.isFinite {
                reactive += unit.reactivePower
                reactiveRead = true
            }
            if unit.acVoltage.isFinite && unit.acVoltage > 0 {
                volts += unit.acVoltage
                voltsRead += 1
            }
            if unit.voltagePU.isFinite {
                perUnit += unit.voltagePU
                perUnitRead += 1
            }
            setpoints += unit.setpoint
            // Each unit against its own reserve, as the cycle judges it.
            let reached = i < settings.reserve.count
                ? settings.reserve[i].reached(soc: unit.soc.isFinite ? unit.soc : nil, was: (false, false))
                : (discharge: false, charge: false)
            if !reached.discharge, unit.soc.isFinite, unit.soc > settings.socReservePercent { up += unit.allowedDischarge }
            if !reached.charge { down += unit.allowedCharge }
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
        if reactiveRead { unitsVar = reactive }
        if voltsRead > 0 { unitsVoltageV = volts / Double(voltsRead) }
        if !site.meterStale && site.gridVoltagePU.isFinite {
            voltagePU = site.gridVoltagePU
        } else if perUnitRead > 0 {
            voltagePU = perUnit / Double(perUnitRead)
        }
        if capacity > 0 {
            socPercent = weighted / capacity
            storedWh = stored
            toFullWh = toFull
        }
        if clampedCapacity > 0 {
            clampedStoredWh = clampedStored
            clampedSOCPercent = clampedStored / clampedCapacity * 100
        }
        availableUpW = max(0, up - setpoints)
        availableDownW = max(0, down + setpoints)
        limitAvailability(gridPower: site.gridPower, settings)
        varMaxInjecting = varInjecting
        varMaxAbsorbing = varAbsorbing
        apparentPowerVA = apparent
        ratedPowerW = settings.ratedPowerW
        usableEnergyWh = settings.usableEnergyWh
        scheduleBlock = site.scheduleBlock
    }

    /// The view of one publication of a site known only by its units' usable energy (no ratings,
    /// reserves or grid limits).
    public init(units: [UnitStatus], site: SiteStatus, capacitiesWh: [Double]) {
        self.init(units: units, site: site, settings: Settings(capacitiesWh: capacitiesWh))
    }

    public init() {}

    /// Net power at the connection point, W (+ = export): the meter's when the site has one (NaN
    /// while it is stale), else the units' sum.
    public func netW(hasMeter: Bool) -> Double { hasMeter ? meteredW : unitsW }

    /// Net reactive power at the connection point, var (+ = injecting): the meter's when the site
    /// has one (NaN while it is stale or measures none), else the units' sum.
    public func netVar(hasMeter: Bool) -> Double { hasMeter ? meteredVar : unitsVar }

    /// True when a site var setpoint `q` (+ = injecting) is inside the site's capability: refused
    /// otherwise when it arrives (Modbus exception 03, IEC 104 negative confirmation, a refused dispatch).
    public func acceptsVar(_ q: Double) -> Bool {
        q.isFinite && (q >= 0 ? q <= varMaxInjecting : -q <= varMaxAbsorbing)
    }

    /// True when a power factor signed by excitation (+ over-excited, − under-excited) is one the
    /// site can hold at its rated power: |pf| in (0, 1], unity always, else not below
    /// P_rated / √(P_rated² + Q_max²) with Q_max the capability of that excitation.
    public func acceptsPowerFactor(_ pf: Double) -> Bool {
        guard pf.isFinite, pf != 0, abs(pf) <= 1 else { return false }
        if abs(pf) == 1 { return true }
        let q = pf > 0 ? varMaxInjecting : varMaxAbsorbing
        guard ratedPowerW > 0, q > 0 else { return false }
        return abs(pf) >= ratedPowerW / (ratedPowerW * ratedPowerW + q * q).squareRoot()
    }

    /// The availability inside the grid limits, with a meter: grid power (+ = import) may fall to
    /// −export limit with more discharge and rise to the import limit with more charge.
    private mutating func limitAvailability(gridPower: Double, _ settings: Settings) {
        guard settings.hasMeter else { return }
        if let exportMaxW = settings.exportMaxW {
            availableUpW = gridPower.isFinite ? min(availableUpW, max(0, gridPower + exportMaxW)) : 0
        }
        if let importMaxW = settings.importMaxW {
            availableDownW = gridPower.isFinite ? min(availableDownW, max(0, importMaxW - gridPower)) : 0
        }
    }
}

extension SiteView {
    /// What the view needs of the site as it was started: each unit's usable energy and rated
    /// power, its frequency-response reserve, the SOC reserve, and the grid limits with a meter.
    /// Fixed at start; kept in the outbox beside the status (`CycleOutbox`).
    public struct Settings: Sendable, Equatable {
        /// Unit `i`'s usable energy, Wh, and rated power, W.
        public let capacitiesWh: [Double]
        public let ratingsW: [Double]
        /// Unit `i`'s frequency-response reserve (units beyond it keep none).
        public let reserve: [ResponseReserve.Unit]
        /// No unit at or below this SOC, percent, offers discharge.
        public let socReservePercent: Double
        /// Whether the site has a meter: only then do the grid limits bound the availability.
        public let hasMeter: Bool
        /// The grid limits, W: export (grid power may fall to −export) and import.
        public let exportMaxW: Double?
        public let importMaxW: Double?
        /// Σ `ratingsW`, Σ `capacitiesWh`.
        public let ratedPowerW: Double
        public let usableEnergyWh: Double

        public init(capacitiesWh: [Double], ratingsW: [Double] = [], reserve: [ResponseReserve.Unit] = [],
                    socReservePercent: Double = 0, hasMeter: Bool = false, exportMaxW: Double? = nil, importMaxW: Double? = nil) {
            self.capacitiesWh = capacitiesWh
            self.ratingsW = ratingsW
            self.reserve = reserve
            self.socReservePercent = socReservePercent
            self.hasMeter = hasMeter
            self.exportMaxW = exportMaxW
            self.importMaxW = importMaxW
            ratedPowerW = ratingsW.reduce(0, +)
            usableEnergyWh = capacitiesWh.reduce(0, +)
        }
    }
}
