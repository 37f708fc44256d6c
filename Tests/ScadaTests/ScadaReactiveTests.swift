import BessSystem
import Config
import ControlCore
import Foundation
@testable import Cycle
@testable import Scada
import TestSupport
import Testing

/// Model 701's reactive power, power factor and voltages and 702's nominal voltage (issue 59,
/// slice 1): from the site's view, + = injecting, the meter's at the connection point, "not
/// implemented" when not measured. pysunspec2 reads them as the standard defines them.
@Suite("SCADA: 701 Var, PF and voltages", .serialized)
struct ScadaReactiveTests {
    typealias T = SunSpecTables

    /// Two 100 kW units (W_SF 1) behind a meter, 230 V nominal (V_SF −2).
    static func site(hasMeter: Bool, nominalVoltageV: Double?) -> ScadaSiteDescription {
        ScadaSiteDescription(siteID: "SITE_Q", version: "0.0.0", mode: "simulation", unitID: 1, ratingsW: [100_000, 100_000],
                             capacitiesWh: [250_000, 250_000], hasMeter: hasMeter, nominalVoltageV: nominalVoltageV)
    }

    /// Two running units, each measuring `unitVar` at `unitVolts`.
    static func units(unitVar: Double, unitVolts: Double) -> [UnitStatus] {
        (0..<2).map { _ in
            var unit = UnitStatus()
            unit.state = .running
            unit.power = 10_000
            unit.reactivePower = unitVar
            unit.acVoltage = unitVolts
            unit.inverterOnline = true
            return unit
        }
    }

    /// The connection point as a fresh meter reads it (+ = taken from the grid), or stale.
    static func meter(gridW: Double, gridVar: Double, volts: Double, stale: Bool = false) -> SiteStatus {
        var site = SiteStatus()
        site.gridPower = stale ? .nan : gridW
        site.gridReactivePower = stale ? .nan : gridVar
        site.gridVoltage = stale ? .nan : volts
        site.meterStale = stale
        return site
    }

    static func filled(_ description: ScadaSiteDescription, units: [UnitStatus], site: SiteStatus) -> ScadaImage {
        var image = ScadaImage(site: description)
        let view = SiteView(units: units, site: site, settings: SiteView.Settings(capacitiesWh: description.capacitiesWh,
                                                                                   ratingsW: description.ratingsW,
                                                                                   hasMeter: description.hasMeter))
        image.fill(units: units, site: site, view: view, frequency: 50)
        return image
    }

    static func register(_ image: ScadaImage, _ model: UInt16, _ point: SunSpecPoint) -> UInt16 {
        image.words[(image.start(of: model) ?? 0) + point.offset]
    }

    static func signed(_ image: ScadaImage, _ model: UInt16, _ point: SunSpecPoint) -> Int16 {
        Int16(bitPattern: register(image, model, point))
    }

    @Test("with a meter: W, Var (+ = injecting), PF = P/S and the four voltages are the meter's; stale: not implemented")
    func meteredImage() {
        let description = Self.site(hasMeter: true, nominalVoltageV: 230)
        // 30 kW exported while 40 kvar is taken from the grid, at 231 V: PF 30/50 = 0.6, + as P is.
        var image = Self.filled(description, units: Self.units(unitVar: 5_000, unitVolts: 240),
                                site: Self.meter(gridW: -30_000, gridVar: 40_000, volts: 231))
        #expect(image.wSF == 1 && image.varSF == 1 && image.vSF == -2 && ScadaImage.pfSF == -3)
        #expect(Self.signed(image, 701, T.M701.Var_SF) == 1 && Self.signed(image, 701, T.M701.PF_SF) == -3)
        #expect(Self.signed(image, 701, T.M701.V_SF) == -2)
        #expect(Self.signed(image, 701, T.M701.W) == 3_000)
        #expect(Self.signed(image, 701, T.M701.Var) == -4_000, "absorbing 40 kvar: −4000 at Var_SF 1")
        #expect(Self.signed(image, 701, T.M701.PF) == 600)
        for point in [T.M701.LNV, T.M701.VL1, T.M701.VL2, T.M701.VL3] {
            #expect(Self.register(image, 701, point) == 23_100, "\(point.name): the meter's 231 V, not the units' 240 V")
        }
        #expect(Self.register(image, 701, T.M701.LLV) == 0xFFFF && Self.register(image, 701, T.M701.VarL1) == 0x8000,
                "line-to-line and per-phase var are not measured")
        #expect(Self.register(image, 702, T.M702.VNomRtg) == 23_000 && Self.signed(image, 702, T.M702.V_SF) == -2)
        // Importing 50 kW at no var: PF −1 (its sign is active power's, not the excitation's).
        image = Self.filled(description, units: Self.units(unitVar: 5_000, unitVolts: 240),
                            site: Self.meter(gridW: 50_000, gridVar: 0, volts: 229))
        #expect(Self.signed(image, 701, T.M701.PF) == -1_000 && Self.signed(image, 701, T.M701.Var) == 0)
        // No flow at all: the power factor is undefined.
        image = Self.filled(description, units: Self.units(unitVar: 5_000, unitVolts: 240), site: Self.meter(gridW: 0, gridVar: 0, volts: 229))
        #expect(Self.register(image, 701, T.M701.PF) == 0x8000)
        // A stale meter: no power, var or power factor at the connection point (the units' are not
        // the site's); the voltage falls back to the units' mean.
        image = Self.filled(description, units: Self.units(unitVar: 5_000, unitVolts: 240),
                            site: Self.meter(gridW: 0, gridVar: 0, volts: 0, stale: true))
        for point in [T.M701.W, T.M701.Var, T.M701.PF] { #expect(Self.register(image, 701, point) == 0x8000, "\(point.name)") }
        #expect(Self.register(image, 701, T.M701.LNV) == 24_000 && Self.register(image, 701, T.M701.VL3) == 24_000)
        // Nor any unit's voltage: not implemented (uint16 0xFFFF).
        image = Self.filled(description, units: Self.units(unitVar: .nan, unitVolts: .nan),
                            site: Self.meter(gridW: 0, gridVar: 0, volts: 0, stale: true))
        for point in [T.M701.LNV, T.M701.VL1, T.M701.VL2, T.M701.VL3] { #expect(Self.register(image, 701, point) == 0xFFFF, "\(point.name)") }
    }

    @Test("without a meter: Var is the units' sum, the voltages their mean; no nominal voltage: VNomRtg not implemented")
    func unitsImage() {
        let description = Self.site(hasMeter: false, nominalVoltageV: nil)
        var image = Self.filled(description, units: Self.units(unitVar: -12_000, unitVolts: 230.5), site: SiteStatus())
        #expect(image.vSF == -1 && Self.signed(image, 701, T.M701.V_SF) == -1)
        #expect(Self.signed(image, 701, T.M701.W) == 2_000 && Self.signed(image, 701, T.M701.Var) == -2_400)
        // 20 kW discharging, 24 kvar absorbed: PF 20/√(20² + 24²) = 0.640.
        #expect(Self.signed(image, 701, T.M701.PF) == 640)
        #expect(Self.register(image, 701, T.M701.LNV) == 2_305)
        #expect(Self.register(image, 702, T.M702.VNomRtg) == 0xFFFF && Self.register(image, 702, T.M702.V_SF) == 0x8000)
        image = Self.filled(description, units: Self.units(unitVar: .nan, unitVolts: .nan), site: SiteStatus())
        #expect(Self.register(image, 701, T.M701.Var) == 0x8000 && Self.register(image, 701, T.M701.PF) == 0x8000)
        #expect(Self.register(image, 701, T.M701.LNV) == 0xFFFF)
    }

    @Test("V_SF holds twice the nominal voltage at the finest resolution; −1 without one")
    func voltageScale() {
        #expect(ScadaImage.voltageScaleFactor(nominalV: 230) == -2)
        #expect(ScadaImage.voltageScaleFactor(nominalV: 277) == -2)
        #expect(ScadaImage.voltageScaleFactor(nominalV: 400) == -1)
        #expect(ScadaImage.voltageScaleFactor(nominalV: 6_350) == 0)
        #expect(ScadaImage.voltageScaleFactor(nominalV: 40_000) == 1)
        #expect(ScadaImage.voltageScaleFactor(nominalV: nil) == -1 && ScadaImage.voltageScaleFactor(nominalV: .nan) == -1)
        #expect(Self.site(hasMeter: true, nominalVoltageV: 0).nominalVoltageV == nil, "a zero nominal is none")
    }

    /// pysunspec2 applies the scale factors itself.
    @Test("pysunspec2 reads 701 Var, PF, LNV, VL1–VL3 and 702 VNomRtg from a server over a metered site")
    func pysunspec2Reads() throws {
        let shared = SharedState(units: 2, view: SiteView.Settings(capacitiesWh: [250_000, 250_000], ratingsW: [100_000, 100_000],
                                                                   hasMeter: true))
        let server = try ScadaServer(configuration: ScadaConfiguration(host: "127.0.0.1", port: 0),
                                     site: Self.site(hasMeter: true, nominalVoltageV: 230), shared: shared) { _ in }
        try server.start()
        defer { server.stop() }
        shared.contents.withLock { c in
            c.outbox.publishStatus { units, site in
                units = Self.units(unitVar: 5_000, unitVolts: 240)
                site = Self.meter(gridW: -30_000, gridVar: 40_000, volts: 231.25)
            }
            c.stats.cycles = 3
            c.stats.frequency = 50
        }
        let result = try Package.tool(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(server.port)])
        #expect(result.status == 0, "\(result.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let points = try #require(json["points"] as? [String: [String: Any]])
        func n(_ model: String, _ name: String) -> Double? {
            (points[model]?[name] as? Double) ?? (points[model]?[name] as? Int).map(Double.init)
        }
        #expect(n("701", "W") == 30_000)
        #expect(n("701", "Var") == -40_000, "\(points["701"]?["Var"] ?? "-")")
        #expect(n("701", "PF").map { abs($0 - 0.6) < 1e-9 } == true, "\(points["701"]?["PF"] ?? "-")")
        for name in ["LNV", "VL1", "VL2", "VL3"] {
            #expect(n("701", name).map { abs($0 - 231.25) < 1e-9 } == true, "\(name) \(points["701"]?[name] ?? "-")")
        }
        #expect(points["701"]?["LLV"] is NSNull || points["701"]?["LLV"] == nil, "LLV not implemented: \(points["701"]?["LLV"] ?? "-")")
        #expect(n("702", "VNomRtg").map { abs($0 - 230) < 1e-9 } == true, "\(points["702"]?["VNomRtg"] ?? "-")")
    }
}
