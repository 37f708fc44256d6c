public import ControlCore
public import Cycle
public import IEEE2030_5

/// The site as the utility sees it: one aggregated DER (several units behind one EndDevice), its
/// ratings the site's as the published `SiteView` states them (`ratedPowerW`, `usableEnergyWh`:
/// Σ `units[].max_power_kw`, `capacity_kwh`), never summed here.
public struct Sep2SiteRatings: Sendable, Equatable {
    /// The site's rated discharge, W (`rtgMaxW`, `setMaxW`, `rtgMaxDischargeRateW`).
    public var maxDischargeW: Double
    /// The site's rated charge, W, a magnitude (`rtgMaxChargeRateW`).
    public var maxChargeW: Double
    /// Each unit's usable energy, Wh, in unit order (stored energy and SOC are weighted by it).
    public var unitEnergyWh: [Double]
    /// The site's usable energy, Wh (`rtgMaxWh`, `setMaxWh`).
    public var energyWh: Double
    /// The site's ramp, percent of `maxDischargeW` per second (`limits.schedule_ramp_percent_per_s`):
    /// `setGradW` unless the utility's DefaultDERControl names one.
    public var rampPercentPerSecond: Double

    /// The ratings `view` carries (`SharedState.view`: in it from the start, before any
    /// publication), charge and discharge alike, for units of usable energy `unitEnergyWh`.
    public init(view: SiteView, unitEnergyWh: [Double], rampPercentPerSecond: Double) {
        maxDischargeW = view.ratedPowerW
        maxChargeW = maxDischargeW
        self.unitEnergyWh = unitEnergyWh
        energyWh = view.usableEnergyWh
        self.rampPercentPerSecond = rampPercentPerSecond
    }

    /// Ratings of units rated `unitPowerW` (charge and discharge alike) and `unitEnergyWh`: those of
    /// the view of such a site.
    public init(unitPowerW: [Double], unitEnergyWh: [Double], rampPercentPerSecond: Double) {
        let view = SiteView(units: [], site: SiteStatus(), settings: SiteView.Settings(capacitiesWh: unitEnergyWh, ratingsW: unitPowerW))
        self.init(view: view, unitEnergyWh: unitEnergyWh, rampPercentPerSecond: rampPercentPerSecond)
    }
}

/// One cycle's view of the site for the reports, in **bessd's convention** (power + = discharge /
/// export, docs/design/0003); the mirror writes 2030.5's signs. A quantity the site does not measure
/// is NaN and is left out of the average (and of the readings when no sample had it).
public struct Sep2SiteSample: Sendable, Equatable {
    /// Active power at the connection point, W (+ = export); NaN without a fresh meter reading.
    public var siteW: Double = .nan
    /// Reactive power at the connection point, var (+ as `siteW`); NaN: not measured.
    public var siteVar: Double = .nan
    /// Voltage at the connection point, V; NaN: not measured.
    public var siteV: Double = .nan
    /// Grid frequency, Hz; NaN: none.
    public var frequencyHz: Double = .nan
    /// Σ units' active power, W (+ = discharge); NaN when no unit reads one.
    public var derW: Double = .nan
    /// Σ units' reactive power, var (+ = supplied, as `derW`); NaN unless every unit whose inverter
    /// answers measures it (a partial Σ would understate the DER's var).
    public var derVar: Double = .nan
    /// The units' AC voltage, V (their mean); NaN when no unit measures it.
    public var derV: Double = .nan
    /// Energy stored, Wh (Σ SOC × usable energy); NaN when no unit reads its SOC.
    public var storedWh: Double = .nan
    /// State of charge of the site, percent (energy-weighted); NaN when none.
    public var socPercent: Double = .nan
    /// Σ units' allowed discharge and charge now, W (magnitudes).
    public var availableDischargeW: Double = 0
    public var availableChargeW: Double = 0
    /// Some unit's contactors are (or may be) closed: its inverter answers, and it is not starting
    /// and not faulted, nor opened or being opened (`ContactorState.closed`). A unit whose inverter is
    /// silent (switched off, or its supply lost) is off.
    public var connected = false
    /// Some unit runs with nothing stopping it (running or limited, not in standby, its inverter answering).
    public var available = false
    /// Every unit is in standby; some unit is faulted (latched).
    public var allStandby = false
    public var faulted = false
    /// The trip codes standing or latched on any unit (`alarmStatus`).
    public var trips = TripCodeSet()
    /// The utility's `opModConnect` and `opModEnergize` as the worker applies them.
    public var connectAllowed = true
    public var energizeAllowed = true
    /// The site's var capability, var (magnitudes): Σ `VarMaxInj` / Σ `VarMaxAbs` of the units with
    /// var points (`SiteView.varMaxInjecting` / `…Absorbing`); 0 when none has them.
    public var varMaxInjecting = 0.0
    public var varMaxAbsorbing = 0.0
    /// Σ `VAMax` of the same units, VA (`SiteView.apparentPowerVA`).
    public var apparentPowerVA = 0.0
    /// The `setGradW` of the DefaultDERControl in force (mirrored into DERSettings), nil for none.
    public var defaultSetGradW: UInt16?

    /// A sample with nothing measured.
    public init() {}

    /// The sample of one published cycle (`SharedState.read(units:site:view:frequency:)`), `view`
    /// the site's view that publication computed: no allocation.
    public init(site: SiteStatus, units: [UnitStatus], view: SiteView, frequency: Double) {
        // The connection point's var and voltage only beside its power: one reading of the meter.
        let metered = view.meteredW.isFinite
        siteW = view.meteredW
        siteVar = metered ? view.meteredVar : .nan
        siteV = metered ? view.meteredVoltageV : .nan
        frequencyHz = frequency
        var standby = true
        var unmeasured = false
        for unit in units {
            if !unit.reactivePower.isFinite && unit.inverterOnline { unmeasured = true }
            availableDischargeW += abs(unit.allowedDischarge.isFinite ? unit.allowedDischarge : 0)
            availableChargeW += abs(unit.allowedCharge.isFinite ? unit.allowedCharge : 0)
            trips.bits |= unit.active.bits | unit.latched.bits
            switch unit.state {
            case .starting: break
            case .faulted: faulted = true
            case .running, .limited:
                connected = connected || (unit.inverterOnline && unit.contactor.connected)
                available = available || (unit.inverterOnline && unit.contactor.closed && unit.mode == .auto)
            case .tripped, .standby: connected = connected || (unit.inverterOnline && unit.contactor.connected)
            }
            standby = standby && (unit.state == .standby || unit.mode == .standby)
        }
        allStandby = standby && !units.isEmpty
        derW = view.unitsW
        // A unit answering without var would make the Σ a partial one: none is posted.
        derVar = unmeasured ? .nan : view.unitsVar
        derV = view.unitsVoltageV
        varMaxInjecting = view.varMaxInjecting.isFinite ? max(0, view.varMaxInjecting) : 0
        varMaxAbsorbing = view.varMaxAbsorbing.isFinite ? max(0, view.varMaxAbsorbing) : 0
        apparentPowerVA = view.apparentPowerVA.isFinite ? max(0, view.apparentPowerVA) : 0
        // Each unit's SOC clamped to 0…100, as the reports have always posted it.
        storedWh = view.clampedStoredWh
        socPercent = view.clampedSOCPercent
    }
}

/// The mean of the finite values added (a sum and a count: nothing allocated per sample).
struct Sep2Mean: Sendable, Equatable {
    var sum = 0.0
    var count = 0

    mutating func add(_ x: Double) {
        guard x.isFinite else { return }
        sum += x
        count += 1
    }

    var value: Double? { count > 0 ? sum / Double(count) : nil }
}

/// The averages of one post interval, per mirrored quantity: one sample per cycle (or per second),
/// equally weighted.
struct Sep2MirrorAccumulator: Sendable, Equatable {
    var siteW = Sep2Mean(), siteVar = Sep2Mean(), siteV = Sep2Mean(), frequency = Sep2Mean()
    var derW = Sep2Mean(), derVar = Sep2Mean(), derV = Sep2Mean(), storedWh = Sep2Mean()
    /// The interval's start, server time (s since the Unix epoch); nil before the first sample.
    var start: Int64?

    mutating func add(_ s: Sep2SiteSample) {
        siteW.add(s.siteW)
        siteVar.add(s.siteVar)
        siteV.add(s.siteV)
        frequency.add(s.frequencyHz)
        derW.add(s.derW)
        derVar.add(s.derVar)
        derV.add(s.derV)
        storedWh.add(s.storedWh)
    }

    /// The accumulated mean of `quantity` at `location`, nil when no sample had it.
    func mean(_ quantity: MirrorQuantity, at location: MirrorLocation) -> Double? {
        switch (location, quantity) {
        case (.site, .activePowerW): siteW.value
        case (.site, .reactivePowerVar): siteVar.value
        case (.site, .voltageV): siteV.value
        case (.site, .frequencyHz): frequency.value
        case (.der, .activePowerW): derW.value
        case (.der, .reactivePowerVar): derVar.value
        case (.der, .voltageV): derV.value
        case (.der, .storedEnergyWh): storedWh.value
        case (.site, .storedEnergyWh), (.der, .frequencyHz): nil
        }
    }
}
