import Config
import Cycle
import IEEE2030_5
import Sep2Link
@testable import Service
import Testing

/// `rtgMaxVA`, `rtgVNom` and `rtgNormalCategory` as the daemon's reporter takes them from the file (issue 59 slice 6).
@Suite("2030.5 reporter settings: the apparent rating, nominal voltage and category")
struct Sep2ReferenceRatingsConfigTests {
    static func reference(_ reactive: String) throws -> Sep2ReferenceRatings {
        let configuration = try ConfigLoader.parse("""
            mode: simulation
            bess_units:
              - {id: U1, capacity_kwh: 250, max_power_kw: 100, max_apparent_power_kva: 110}
              - {id: U2, capacity_kwh: 80, max_power_kw: 40}
            """ + "\n" + reactive, file: "sep2-reference.yaml")
        return Sep2ReporterSettings.reference(configuration)
    }

    @Test("Σ VAMax (else max_power_kw), the units' nominal voltage and the profile's category; none without a mode")
    func referenceFromTheFile() throws {
        let a = try Self.reference("grid_integration:\n  reactive_power:\n    mode: volt_var\n    profile: ieee1547_2018_cat_a\n    nominal_voltage_v: 230\n")
        #expect(a == Sep2ReferenceRatings(maxVA: 150_000, nominalVoltageV: 230, normalCategory: .a))
        let b = try Self.reference("grid_integration:\n  reactive_power:\n    mode: constant_pf\n    nominal_voltage_v: 240\n")
        #expect(b.normalCategory == .b && b.nominalVoltageV == 240)
        let none = try Self.reference("")
        #expect(none == Sep2ReferenceRatings(maxVA: 150_000, nominalVoltageV: nil, normalCategory: nil))
    }
}
