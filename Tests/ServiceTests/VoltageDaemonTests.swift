import Foundation
import Glibc
import TestSupport
import Testing

/// bessd in `hil` mode against the independent pymodbus SunSpec inverters
/// (hil/peers/pymodbus_sunspec_units.py), each serving its own 701 `LNV`, `V_SF` and `Var`:
/// the per-unit voltage, the nonsense voltages that are absent, and AC_OVERVOLTAGE on the wire.
@Suite("Voltage per unit against pymodbus SunSpec inverters", .serialized)
struct VoltageDaemonTests {
    static func yaml(_ peer: UnitsPeer) -> String {
        peer.hilUnitsYAML(prefix: "V", count: 4) + """
            grid_integration:
              frequency_source: inverter
              reactive_power: {nominal_voltage_v: 230}
            interlocks:
              ac_overvoltage: {delay_s: 2}
            simulation:
              frequency_profile: steady
              base_hz: 50

            """
    }

    static func number(_ unit: [String: Any], _ key: String) -> Double? { (unit[key] as? NSNumber)?.doubleValue }

    @Test("LNV/230 V per unit; 0 V and a ×10 V_SF null with no trip; 1.12 p.u. trips AC_OVERVOLTAGE to 0 W")
    func perUnitAndTrip() throws {
        // V1 235.0 V (LNV 2350, V_SF −1) and −1500 var; V2 LNV 0; V3 LNV 230 at V_SF +1 (2300 V, a
        // scale-factor error); V4 257.6 V = 1.12 p.u.
        let peer = try UnitsPeer(["1:lnv=2350,vsf=-1,var=-1500", "2:lnv=0", "3:lnv=230,vsf=1", "4:lnv=2576,vsf=-1"], seconds: 90)
        defer { peer.stop() }
        #expect(peer.port > 0)
        let daemon = try RunningDaemon(yaml: Self.yaml(peer))
        let units = try daemon.waitForUnits(seconds: 30) { units in
            units.count == 4 && (units[3]["trips"] as? [String] ?? []).contains("AC_OVERVOLTAGE")
                && Self.number(units[0], "voltage_pu") != nil && Self.number(units[0], "setpoint_w").map { $0 > 0 } == true
        }
        #expect(units.count == 4, "\(units)")
        guard units.count == 4 else { return }
        // The unit's own measurement over the configured nominal.
        #expect(abs((Self.number(units[0], "voltage_pu") ?? 0) - 235.0 / 230) < 1e-6, "\(units[0])")
        #expect(Self.number(units[0], "reactive_kvar") == -1.5, "\(units[0])")
        #expect(units[0]["reactive_setpoint_kvar"] is NSNull && units[0]["reactive"] as? String == "off", "\(units[0])")
        // 0 V and 10 p.u. are absent, not excursions: null, and no voltage rule acts.
        for i in [1, 2] {
            #expect(units[i]["voltage_pu"] is NSNull, "\(units[i])")
            let trips = units[i]["trips"] as? [String] ?? ["?"]
            #expect(!trips.contains { $0.hasPrefix("AC_") }, "\(units[i])")
        }
        // 1.12 p.u. for the configured 2 s: tripped both ways, 0 W while the others follow droop.
        #expect(abs((Self.number(units[3], "voltage_pu") ?? 0) - 1.12) < 1e-6, "\(units[3])")
        #expect(units[3]["state"] as? String == "tripped", "\(units[3])")
        #expect(Self.number(units[3], "setpoint_w") == 0 && Self.number(units[3], "allowed_discharge_w") == 0
                && Self.number(units[3], "allowed_charge_w") == 0, "\(units[3])")
        // On the wire: unit 4's WSet, ramping up with droop while the rule waited out its delay,
        // is written 0 after the trip; unit 1's is not.
        #expect(waitFor(seconds: 10) { peer.last("WSET unit=4 ")?.contains(" w=0 ") == true },
                "\(peer.all.filter { $0.hasPrefix("WSET unit=4") })")
        #expect(peer.last("WSET unit=1 ").map { !$0.contains(" w=0 ") } == true, "\(peer.all.suffix(10))")
        // The site: Σ units' var (no meter) and the units' mean plausible voltage.
        let site = try daemon.request(["verb": "site"])
        #expect(Self.number(site, "reactive_kvar") == -1.5, "\(site)")
        #expect(abs((Self.number(site, "voltage_pu") ?? 0) - (235.0 / 230 + 1.12) / 2) < 1e-6, "\(site)")
        // bessctl prints the same answer.
        let printed = try Package.run("bessctl", ["status", "--json", "--socket", daemon.socket])
        #expect(printed.status == 0 && printed.out.contains("\"voltage_pu\" : null") && printed.out.contains("\"reactive_kvar\" : -1.5"),
                "\(printed)")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("AC_OVERVOLTAGE tripped"), "the journal line")
    }
}
