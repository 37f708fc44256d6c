import ControlProtocol
import Foundation
import Testing

/// `reactive_kvar`, `reactive_setpoint_kvar`, `reactive` and `voltage_pu` in `status --json`, and
/// the site's `reactive_kvar` and `voltage_pu` in `site --json` (issue 59 slice 1).
@Suite("Reactive power and voltage in the status answers")
struct VoltageReplyTests {
    @Test("a unit's four fields: written with nulls for the unknown, read back equal, keys in order")
    func unitFields() throws {
        var unit = JSONTextTests.unit(2)
        unit.reactive = "off"
        unit.reactiveKvar = -1.5
        unit.reactiveSetpointKvar = nil
        unit.voltagePU = 1.0217
        let text = JSONTextTests.text(unit)
        #expect(text.contains(#""power_w":-12000.5,"reactive":"off","reactive_kvar":-1.5,"reactive_setpoint_kvar":null,"setpoint_w":"#), "\(text)")
        #expect(text.hasSuffix(#""trips":["OVER_TEMPERATURE","CELL_UNDERVOLTAGE"],"voltage_pu":1.0217}"#), "\(text)")
        #expect(JSONTextTests.keysInOrder(Array(text.utf8)))
        let read = try JSONDecoder().decode(UnitReply.self, from: Data(text.utf8))
        #expect(read == unit)
        // Unknown voltage: null, not left out.
        unit.voltagePU = .nan
        #expect(JSONTextTests.text(unit).hasSuffix(#""voltage_pu":null}"#))
        // A bessd that predates them wrote none, and bessctl still reads its answer.
        let old = JSONTextTests.text(JSONTextTests.unit(2))
        #expect(!old.contains("reactive") && !old.contains("voltage_pu"))
        #expect(try JSONDecoder().decode(UnitReply.self, from: Data(old.utf8)).reactive == nil)
    }

    @Test("the site's reactive_kvar and voltage_pu, null when unknown")
    func siteFields() throws {
        let site = UtilityReplyTests.site.with(utility: nil, reactiveKvar: 12.5, voltagePU: 0.987)
        let text = JSONTextTests.text(site)
        #expect(text.contains(#""ok":true,"reactive_kvar":12.5,"#) && text.hasSuffix(#""voltage_pu":0.987}"#), "\(text)")
        #expect(try JSONTextTests.roundTrip(site) == site)
        let unknown = JSONTextTests.text(UtilityReplyTests.site.with(utility: nil))
        #expect(unknown.contains(#""reactive_kvar":null"#) && unknown.contains(#""voltage_pu":null"#), "\(unknown)")
    }
}
