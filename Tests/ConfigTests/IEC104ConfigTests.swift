import ControlCore
@testable import Config
import Testing

/// `iec104.agc`: the regulation band and expiry a site declares to the grid operator's AGC.
@Suite("iec104.agc")
struct IEC104ConfigTests {
    static let units = "bess_units:\n  - {id: U1, capacity_kwh: 250, max_power_kw: 100}\n  - {id: U2, capacity_kwh: 250, max_power_kw: 50}\n"

    @Test("absent: no AGC; written empty: 12 s and the band ± the units' summed rating; written: as written, in W")
    func defaultsAndValues() throws {
        #expect(try ConfigLoader.parse(Self.units, file: "a.yaml").iec104 == nil)
        let empty = try ConfigLoader.parse(Self.units + "iec104:\n  agc: {}\n", file: "b.yaml")
        #expect(empty.iec104?.agc?.limits == AGCLimits(upper: 150_000, lower: -150_000, expiry: .seconds(12)))
        let set = try ConfigLoader.parse(Self.units + "iec104:\n  agc: {expiry_s: 8, upper_limit_kw: 120, lower_limit_kw: -40}\n",
                                         file: "c.yaml")
        #expect(set.iec104?.agc?.limits == AGCLimits(upper: 120_000, lower: -40_000, expiry: .seconds(8)))
    }

    @Test("a band beyond the site's rating, an empty band, an expiry out of range or an unknown key is refused with its line",
          arguments: [
              ("upper_limit_kw: 151", "upper_limit_kw"), ("lower_limit_kw: 10, upper_limit_kw: 10", "lower_limit_kw"),
              ("expiry_s: 0", "expiry_s"), ("period_s: 4", "period_s"),
          ])
    func refused(line: String, key: String) {
        do {
            _ = try ConfigLoader.parse(Self.units + "iec104:\n  agc: {\(line)}\n", file: "d.yaml")
            Issue.record("accepted \(line)")
        } catch {
            #expect(error.diagnostics.count == 1 && error.diagnostics.first?.line == 5, "\(error)")
            #expect(error.diagnostics.first?.keyPath == "iec104.agc.\(key)", "\(error)")
        }
    }
}
