import ControlCore
import ControlProtocol
import Foundation
@testable import Service
import Testing

/// `units[].bms` of `bessctl status --json`: the BMS's values as its profile maps them, the limits in W.
@Suite("BMS in status")
struct BMSStatusTests {
    static func reply() -> BMSReply {
        var bms = BMSReply(profile: "byd-c130", transport: "modbus", online: true)
        bms.socPercent = 63
        bms.voltageV = 691.2
        bms.chargeCurrentLimitA = 50
        bms.dischargeCurrentLimitA = 80
        bms.chargeLimitW = 50 * 691.2
        bms.dischargeLimitW = 80 * 691.2
        bms.protections = ["cell_overvoltage"]
        return bms
    }

    @Test("a unit's bms object: its keys in order, charge_limit_w and discharge_limit_w, and it reads back")
    func keysAndRoundTrip() throws {
        var unit = UnitReply(id: "U1", state: "running", mode: "auto", setpointW: 0, droopW: 0, allowedChargeW: 1, allowedDischargeW: 1,
                             trips: [], latched: [], socPercent: 63, powerW: 0)
        unit.bms = Self.reply()
        let text = String(decoding: JSONText.encode(unit), as: UTF8.self)
        #expect(text.contains(#""bms":{"alarms":[],"#), "\(text)")
        #expect(text.contains(#""charge_limit_w":34560,"#) && text.contains(#""discharge_limit_w":55296,"#), "\(text)")
        #expect(text.contains(#""profile":"byd-c130","protections":["cell_overvoltage"]"#), "\(text)")
        #expect(text.contains(#""transport":"modbus""#))
        // The other keys of the unit are where they were: bms sits between allowed_discharge_w and droop_w.
        #expect(text.hasPrefix(#"{"allowed_charge_w":1,"allowed_discharge_w":1,"bms":{"#), "\(text)")
        let decoded = try JSONDecoder().decode(UnitReply.self, from: Data(text.utf8))
        #expect(decoded.bms == unit.bms)
        // A simulated BMS: no transport key, nulls where nothing is known.
        let simulated = String(decoding: JSONText.encode(BMSReply(profile: "simulated", transport: nil, online: false)), as: UTF8.self)
        #expect(!simulated.contains("transport") && simulated.contains(#""charge_limit_w":null"#), "\(simulated)")
    }

    @Test("the BMS's conditions by the profile's names")
    func conditionNames() {
        #expect(StatusReport.conditionNames([.cellOvervoltage, .internalCommunication]) == ["cell_overvoltage", "internal_communication"])
        #expect(StatusReport.conditionNames([]).isEmpty)
    }
}
