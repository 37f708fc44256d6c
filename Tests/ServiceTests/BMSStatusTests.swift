import ControlCore
import ControlProtocol
import Foundation
@testable import Service
import TestSupport
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

    @Test("bessd in hil with a BYD rack on Modbus: status carries its values as the profile maps them, the limits in W")
    func daemonWithModbusBMS() throws {
        // devices.md §6: 691.2 V, SOC 63 %, SOH 98 %, limits 50/80 A, level-3 cell over-voltage.
        let peer = try UnitsPeer(arguments: ["python3", "hil/peers/pymodbus_profile_peer.py", "--seconds", "60",
                                             "--holding", "0x2100=0x1B00,0,0,0x003F,0x0062,0x0011,0x0D16,0x008C,0x0CE4,0x0005,0x0109,0x0058,0x00F0",
                                             "--holding", "0x216C=0x01F4,0x0320", "--holding", "0x2140=0,0,0,0x0001,0,0,0,0",
                                             "--holding", "0x2C00=250"])
        defer { peer.stop() }
        #expect(peer.port > 0)
        let devices = Package.root.appendingPathComponent("devices").path
        let daemon = try RunningDaemon(yaml: """
            mode: hil
            period_ms: 100
            control_socket: @SOCKET@
            profile_directories: [\(devices)]
            bess_units:
              - id: R1
                capacity_kwh: 250
                max_power_kw: 100
                inverter: {simulated: true}
                bms:
                  transport: modbus
                  profile: byd-c130
                  cells_in_series: 216
                  modbus: {host: 127.0.0.1, port: \(peer.port), unit_id: 1, timeout_ms: 300}
            """)
        var bms: [String: Any] = [:]
        _ = try daemon.waitForUnits(seconds: 20) { units in
            bms = units.first?["bms"] as? [String: Any] ?? [:]
            return bms["online"] as? Bool == true && bms["charge_limit_w"] as? Double != nil
        }
        #expect(bms["profile"] as? String == "byd-c130", "\(bms)")
        #expect(bms["transport"] as? String == "modbus")
        #expect(bms["soc_percent"] as? Double == 63)
        #expect((bms["voltage_v"] as? Double).map { abs($0 - 691.2) < 1e-6 } == true, "\(bms)")
        #expect((bms["charge_limit_w"] as? Double).map { abs($0 - 34_560) < 1e-6 } == true, "\(bms)")
        #expect((bms["discharge_limit_w"] as? Double).map { abs($0 - 55_296) < 1e-6 } == true, "\(bms)")
        #expect(bms["protections"] as? [String] == ["cell_overvoltage"], "\(bms)")
        #expect(bms["fault"] is NSNull, "\(bms)")
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
    }
}
