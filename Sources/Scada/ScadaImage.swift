public import ControlCore
public import Cycle
import Fieldbus

/// One point of a SunSpec model as the standard's JSON defines it (see SunSpecTables).
public struct SunSpecPoint: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case int16, uint16, int32, uint32, int64, uint64, enum16, enum32, bitfield16, bitfield32, bitfield64
        case sunssf, string, pad, acc16, acc32, acc64, count, float32, ipaddr, ipv6addr, eui48
    }

    public let name: String
    /// Registers from the model's `ID`.
    public let offset: Int
    public let size: Int
    public let kind: Kind
    public let writable: Bool
    /// The name of the point holding this point's scale factor.
    public let scaleFactor: String?

    public init(_ name: String, offset: Int, size: Int, kind: Kind, writable: Bool, scaleFactor: String? = nil) {
        self.name = name
        self.offset = offset
        self.size = size
        self.kind = kind
        self.writable = writable
        self.scaleFactor = scaleFactor
    }

    /// The "not implemented" value SunSpec defines for the type, register by register.
    func sentinel(_ register: Int) -> UInt16 {
        switch kind {
        case .int16, .sunssf, .pad: 0x8000
        case .int32, .int64: register == 0 ? 0x8000 : 0
        case .uint16, .enum16, .bitfield16, .uint32, .enum32, .bitfield32, .uint64, .bitfield64: 0xFFFF
        case .float32: register == 0 ? 0x7FC0 : 0
        case .string, .acc16, .acc32, .acc64, .count, .ipaddr, .ipv6addr, .eui48: 0
        }
    }
}

/// What the site looks like to SCADA, fixed for the run.
public struct ScadaSiteDescription: Sendable {
    public var siteID: String
    public var version: String
    /// `simulation`, `hil` or `hardware`: common model `Opt`, so nobody mistakes a rig for a site.
    public var mode: String
    public var unitID: Int
    /// Each unit's rating (W) and capacity (Wh), in configuration order (model 802, one per unit).
    public var ratingsW: [Double]
    public var capacitiesWh: [Double]
    /// The site's rating, W, and usable energy, Wh (702, 713, the scale factors, `WSet`'s bound):
    /// the published `SiteView`'s `ratedPowerW` and `usableEnergyWh`, never summed here.
    public var ratedPowerW: Double
    public var usableEnergyWh: Double
    /// True when a site meter measures the connection point (701 W and Var are then the meter's).
    public var hasMeter: Bool
    /// The site's nominal voltage, V, line to neutral (`site.reactive_power.nominal_voltage_v`, else
    /// `grid_integration.reactive_power`'s): 702 `VNomRtg` and the voltage scale factor; nil, none.
    public var nominalVoltageV: Double?
    /// `reactive_priority` (`site.reactive_power`'s, else `grid_integration.reactive_power`'s):
    /// 704 `VarSetPri`, served read-only, REACTIVE (1) when true, ACTIVE (0) when false.
    public var reactivePriority: Bool

    /// `view`: the site's view as published (`SharedState.view`: the ratings are in it from the
    /// start); nil, the view of a site of these units' ratings and capacities.
    public init(siteID: String, version: String, mode: String, unitID: Int, ratingsW: [Double], capacitiesWh: [Double],
                hasMeter: Bool, nominalVoltageV: Double? = nil, reactivePriority: Bool = true, view: SiteView? = nil) {
        self.siteID = siteID
        self.version = version
        self.mode = mode
        self.unitID = unitID
        self.ratingsW = ratingsW
        self.capacitiesWh = capacitiesWh
        let view = view ?? SiteView(units: [], site: SiteStatus(), settings: SiteView.Settings(capacitiesWh: capacitiesWh, ratingsW: ratingsW))
        ratedPowerW = view.ratedPowerW
        usableEnergyWh = view.usableEnergyWh
        self.hasMeter = hasMeter
        self.nominalVoltageV = nominalVoltageV.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
        self.reactivePriority = reactivePriority
    }
}

/// The site's SunSpec register image from 40000: "SunS", 1 common, 701 DER AC measurement, 702 DER
/// capacity, 713 DER storage capacity, 704 DER AC controls, 802 battery base once per unit, end.
/// Laid out from the generated tables; every point bessd does not fill reads as the standard's
/// "not implemented" value.
public struct ScadaImage: Sendable {
    public static let base = 40000
    public private(set) var words: [UInt16]
    /// Where each model instance starts (index into `words` of its `ID`), in chain order.
    public private(set) var models: [(id: UInt16, index: Int)] = []
    public let site: ScadaSiteDescription
    /// Scale factors chosen once, so every value of the run fits its register: power's (W and, as
    /// W's, Var) from the site's rating, energy's from its usable energy, voltage's from its nominal
    /// voltage (`voltageScaleFactor`), and the power factor's in thousandths.
    public let wSF: Int
    public let whSF: Int
    public let vSF: Int
    public var varSF: Int { wSF }
    public static let pfSF = -3
    typealias T = SunSpecTables

    public init(site: ScadaSiteDescription) {
        self.site = site
        let totalW = max(1, site.ratedPowerW)
        var sf = 0
        while totalW / SunSpec.powerOfTen(sf) > 30_000 && sf < 9 { sf += 1 }
        wSF = sf
        var whsf = 0
        while max(1, site.usableEnergyWh) / SunSpec.powerOfTen(whsf) > 60_000 && whsf < 9 { whsf += 1 }
        whSF = whsf
        vSF = Self.voltageScaleFactor(nominalV: site.nominalVoltageV)
        words = [0x5375, 0x6E53]
        let chain: [(UInt16, UInt16, [SunSpecPoint])] =
            [(T.M1.id, T.M1.length, T.M1.points), (T.M701.id, T.M701.length, T.M701.points),
             (T.M702.id, T.M702.length, T.M702.points), (T.M713.id, T.M713.length, T.M713.points),
             (T.M704.id, T.M704.length, T.M704.points)]
            + site.ratingsW.map { _ in (T.M802.id, T.M802.length, T.M802.points) }
        for (id, length, points) in chain {
            let start = words.count
            models.append((id, start))
            words += [UInt16](repeating: 0, count: Int(length) + 2)
            for point in points {
                for r in 0..<point.size { words[start + point.offset + r] = point.sentinel(r) }
            }
            words[start] = id
            words[start + 1] = length
        }
        words += [0xFFFF, 0]
        fillStatics()
    }

    /// Index of the `instance`-th model `id` (0 for the first).
    public func start(of id: UInt16, instance: Int = 0) -> Int? {
        var seen = 0
        for model in models where model.id == id {
            if seen == instance { return model.index }
            seen += 1
        }
        return nil
    }

    mutating func set(_ start: Int, _ point: SunSpecPoint, _ value: UInt16) { words[start + point.offset] = value }
    mutating func set(_ start: Int, _ point: SunSpecPoint, int value: Int) {
        switch point.size {
        case 1: words[start + point.offset] = UInt16(truncatingIfNeeded: value)
        case 2:
            words[start + point.offset] = UInt16(truncatingIfNeeded: value >> 16)
            words[start + point.offset + 1] = UInt16(truncatingIfNeeded: value)
        default:
            for r in 0..<point.size {
                words[start + point.offset + r] = UInt16(truncatingIfNeeded: value >> (16 * (point.size - 1 - r)))
            }
        }
    }
    /// A measured value at scale factor `sf`, or "not implemented" when it is not a number.
    mutating func set(_ start: Int, _ point: SunSpecPoint, _ value: Double, sf: Int) {
        guard value.isFinite else {
            for r in 0..<point.size { words[start + point.offset + r] = point.sentinel(r) }
            return
        }
        let raw = (value / SunSpec.powerOfTen(sf)).rounded()
        let bounded: Double = switch point.kind {
        case .int16: max(-32_767, min(32_767, raw))
        case .uint16: max(0, min(65_534, raw))
        case .int32: max(-2_147_483_647, min(2_147_483_647, raw))
        default: max(0, min(4_294_967_294, raw))
        }
        set(start, point, int: Int(bounded))
    }
    mutating func setString(_ start: Int, _ point: SunSpecPoint, _ text: String) {
        let bytes = Array(text.utf8.prefix(point.size * 2))
        for r in 0..<point.size {
            let hi = 2 * r < bytes.count ? UInt16(bytes[2 * r]) : 0
            let lo = 2 * r + 1 < bytes.count ? UInt16(bytes[2 * r + 1]) : 0
            words[start + point.offset + r] = hi << 8 | lo
        }
    }
    mutating func setSF(_ start: Int, _ point: SunSpecPoint, _ sf: Int) {
        words[start + point.offset] = UInt16(bitPattern: Int16(sf))
    }

    mutating func fillStatics() {
        if let m = start(of: T.M1.id) {
            setString(m, T.M1.Mn, "bessd")
            setString(m, T.M1.Md, "bessd site controller")
            setString(m, T.M1.Opt, site.mode)
            setString(m, T.M1.Vr, site.version)
            setString(m, T.M1.SN, site.siteID)
            set(m, T.M1.DA, UInt16(clamping: site.unitID))
            words[m + T.M1.Pad.offset] = 0x8000
        }
        if let m = start(of: T.M701.id) {
            set(m, T.M701.ACType, 2)  // three-phase
            setSF(m, T.M701.W_SF, wSF)
            setSF(m, T.M701.Var_SF, varSF)
            setSF(m, T.M701.PF_SF, Self.pfSF)
            setSF(m, T.M701.V_SF, vSF)
            setSF(m, T.M701.Hz_SF, -3)
        }
        if let m = start(of: T.M702.id) {
            setSF(m, T.M702.W_SF, wSF)
            for point in [T.M702.WMaxRtg, T.M702.WChaRteMaxRtg, T.M702.WDisChaRteMaxRtg, T.M702.WMax, T.M702.WChaRteMax,
                          T.M702.WDisChaRteMax] {
                set(m, point, site.ratedPowerW, sf: wSF)
            }
            setSF(m, T.M702.Var_SF, varSF)
            if let nominal = site.nominalVoltageV {
                setSF(m, T.M702.V_SF, vSF)
                set(m, T.M702.VNomRtg, nominal, sf: vSF)
            }
        }
        if let m = start(of: T.M713.id) {
            setSF(m, T.M713.WH_SF, whSF)
            setSF(m, T.M713.Pct_SF, -1)
            set(m, T.M713.WHRtg, site.usableEnergyWh, sf: whSF)
        }
        if let m = start(of: T.M704.id) {
            setSF(m, T.M704.WMaxLimPct_SF, 0)
            setSF(m, T.M704.WSet_SF, wSF)
            setSF(m, T.M704.VarSet_SF, varSF)
            setSF(m, T.M704.PF_SF, Self.pfSF)
            // Served, not taken: whether reactive power has priority over active (REACTIVE 1, ACTIVE 0).
            set(m, T.M704.VarSetPri, site.reactivePriority ? 1 : 0)
            // Until written: no operator limit (its revert value 100 %), no setpoint, no var
            // setpoint, unity power factors, all disabled.
            fill(commands: SiteCommands(), now: MonotonicInstant(nanoseconds: 0))
        }
        for (i, rating) in site.ratingsW.enumerated() {
            guard let m = start(of: T.M802.id, instance: i) else { continue }
            setSF(m, T.M802.WHRtg_SF, whSF)
            setSF(m, T.M802.WChaDisChaMax_SF, wSF)
            setSF(m, T.M802.SoC_SF, -1)
            setSF(m, T.M802.SoH_SF, -1)
            setSF(m, T.M802.V_SF, -1)
            setSF(m, T.M802.A_SF, -1)
            setSF(m, T.M802.AMax_SF, -1)
            setSF(m, T.M802.W_SF, wSF)
            set(m, T.M802.WHRtg, site.capacitiesWh[i], sf: whSF)
            set(m, T.M802.WChaRteMax, rating, sf: wSF)
            set(m, T.M802.WDisChaRteMax, rating, sf: wSF)
            set(m, T.M802.Typ, 4)  // lithium-ion
            set(m, T.M802.LocRemCtl, 0)
        }
    }

    /// Fills every measured point from one published state of the cycle (units, site, the site's
    /// view the publication computed, frequency: copied under one lock, so the image never mixes
    /// two cycles).
    public mutating func fill(units: [UnitStatus], site status: SiteStatus, view: SiteView, frequency: Double) {
        var running = false, sohWeighted = 0.0, sohCapacity = 0.0, anyTrip = false
        for (i, unit) in units.enumerated() where i < site.capacitiesWh.count {
            let capacity = site.capacitiesWh[i]
            if unit.state == .running || unit.state == .limited { running = true }
            if unit.state == .tripped || unit.state == .faulted || !unit.latched.isEmpty { anyTrip = true }
            if unit.soh.isFinite {
                sohWeighted += unit.soh * capacity
                sohCapacity += capacity
            }
            guard let m = start(of: T.M802.id, instance: i) else { continue }
            set(m, T.M802.SoC, unit.soc, sf: -1)
            set(m, T.M802.SoH, unit.soh, sf: -1)
            set(m, T.M802.V, unit.voltage, sf: -1)
            set(m, T.M802.A, unit.current, sf: -1)
            set(m, T.M802.W, unit.power, sf: wSF)
            set(m, T.M802.AChaMax, unit.chargeCurrentLimit, sf: -1)
            set(m, T.M802.ADisChaMax, unit.dischargeCurrentLimit, sf: -1)
            set(m, T.M802.State, Self.batteryState(unit))
            set(m, T.M802.ChaSt, Self.chargeState(unit))
            var codes = unit.active
            codes.bits |= unit.latched.bits
            set(m, T.M802.Evt1, int: Int(Self.events(codes)))
        }
        if let m = start(of: T.M701.id) {
            // The site as a DER: + = power into the grid, var + = injecting (over-excited; 701's
            // TotVarhInj is quadrants 1 and 2). At the connection point when the site has a meter
            // (not a number while it is stale); else the units' sums.
            let w = view.netW(hasMeter: site.hasMeter)
            let q = view.netVar(hasMeter: site.hasMeter)
            set(m, T.M701.W, w, sf: wSF)
            set(m, T.M701.Var, q, sf: varSF)
            set(m, T.M701.PF, Self.powerFactor(w: w, reactive: q), sf: Self.pfSF)
            // One line-to-neutral voltage: the meter's when fresh, else the units' mean; the three
            // phases are served as that mean (no phase is measured on its own).
            let volts = view.meteredVoltageV.isFinite ? view.meteredVoltageV : view.unitsVoltageV
            set(m, T.M701.LNV, volts, sf: vSF)
            set(m, T.M701.VL1, volts, sf: vSF)
            set(m, T.M701.VL2, volts, sf: vSF)
            set(m, T.M701.VL3, volts, sf: vSF)
            set(m, T.M701.Hz, frequency, sf: -3)
            set(m, T.M701.St, running ? 1 : 0)
            set(m, T.M701.ConnSt, running ? 1 : 0)
            set(m, T.M701.InvSt, running ? 3 : (anyTrip ? 6 : 7))
        }
        if let m = start(of: T.M702.id) {
            // The reactive capability 704 `VarSet` and the power factors are judged against: the
            // units' with var points, as the cycle publishes it.
            for point in [T.M702.VarMaxInjRtg, T.M702.VarMaxInj] { set(m, point, view.varMaxInjecting, sf: varSF) }
            for point in [T.M702.VarMaxAbsRtg, T.M702.VarMaxAbs] { set(m, point, view.varMaxAbsorbing, sf: varSF) }
        }
        if let m = start(of: T.M713.id) {
            set(m, T.M713.WHAvail, view.storedWh, sf: whSF)
            set(m, T.M713.SoC, view.socPercent, sf: -1)
            set(m, T.M713.SoH, sohCapacity > 0 ? sohWeighted / sohCapacity : .nan, sf: -1)
            set(m, T.M713.Sta, anyTrip ? 2 : 0)
        }
    }

    /// 701 `PF`: P / S, so that its sign is active power's, as the model defines it (+ generating,
    /// − absorbing), whatever the excitation; not a number when P or Q is not, or both are zero.
    static func powerFactor(w: Double, reactive q: Double) -> Double {
        let apparent = (w * w + q * q).squareRoot()
        guard apparent > 0 else { return .nan }
        return w / apparent
    }

    /// `V_SF`: the finest of 0.01 V, 0.1 V, 1 V… that holds twice `nominalV` in a uint16; −1 (to
    /// 6553.4 V) when no nominal voltage is configured.
    static func voltageScaleFactor(nominalV: Double?) -> Int {
        guard let nominalV, nominalV.isFinite, nominalV > 0 else { return -1 }
        var sf = -2
        while 2 * nominalV / SunSpec.powerOfTen(sf) > 65_534 && sf < 9 { sf += 1 }
        return sf
    }

    /// 802 `State`: 3 connected, 4 standby, 2 initializing, 99 fault.
    static func batteryState(_ unit: UnitStatus) -> UInt16 {
        switch unit.state {
        case .starting: 2
        case .running, .limited: 3
        case .standby: 4
        case .tripped, .faulted: 99
        }
    }

    /// 802 `ChaSt` from the measured power: 3 discharging, 4 charging, 6 holding; 1 off when tripped.
    static func chargeState(_ unit: UnitStatus) -> UInt16 {
        if unit.state == .tripped || unit.state == .faulted { return 1 }
        guard unit.power.isFinite else { return 0xFFFF }
        if unit.power > 1 { return 3 }
        if unit.power < -1 { return 4 }
        return 6
    }

    /// 802 `Evt1` bits from bessd's trip codes (docs/scada.md has the table).
    public static func events(_ codes: TripCodeSet) -> UInt32 {
        var bits: UInt32 = 0
        func on(_ bit: UInt32, _ list: [TripCode]) { if list.contains(where: { codes.contains($0) }) { bits |= 1 << bit } }
        on(0, [.bmsCommLost, .inverterCommLost])
        on(1, [.overtemperature, .overtemperatureCritical, .thermalRunaway])
        on(2, [.temperatureHighDerate])
        on(3, [.undertemperatureCharge, .undertemperatureDischarge])
        on(5, [.chargeOvercurrent])
        on(7, [.dischargeOvercurrent])
        on(9, [.cellOvervoltage, .cellOvervoltageCritical, .packOvervoltage])
        on(10, [.cellVoltageHighDerate])
        on(11, [.cellUndervoltage, .cellUndervoltageCritical, .packUndervoltage])
        on(12, [.cellVoltageLowDerate])
        on(13, [.socLow])
        on(15, [.socHigh])
        on(17, [.cellImbalance])
        on(25, [.bmsProtection, .bmsCritical, .inverterFault, .latchStateCorrupt])
        on(26, [.bmsAlarm])
        return bits
    }
}
