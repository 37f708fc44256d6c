import Foundation
import Glibc
import TestSupport
import Testing

/// bessd in `hil` mode with a reactive law, against independent pymodbus SunSpec inverters: the
/// cycle's reactive setpoint reaches 704's var points, and a unit without them says so once.
@Suite("Reactive setpoint from the cycle to pymodbus 704 var points", .serialized)
struct ReactiveWireDaemonTests {
    @Test("constant_var: VarSet armed with VarSetPri from reactive_priority; a novar unit: P written, its var points untouched")
    func constantVar() throws {
        let peer = try UnitsPeer(["1:lnv=2300,vsf=-1", "2:novar,lnv=2300,vsf=-1"], seconds: 90)
        defer { peer.stop() }
        #expect(peer.port > 0)
        var yaml = peer.hilUnitsYAML(prefix: "Q", count: 2)
        yaml += """
            grid_integration:
              frequency_source: inverter
              reactive_power: {mode: constant_var, var_percent: -10, nominal_voltage_v: 230, reactive_priority: true}
            simulation:
              frequency_profile: steady
              base_hz: 50

            """
        let daemon = try RunningDaemon(yaml: yaml)
        defer {
            daemon.signal(SIGKILL)
            _ = daemon.finish()
        }
        // Unit 1: absorbing, VARS at VarSet_SF 0, REACTIVE priority, the revert armed (10 s to 0 var).
        func varset() -> (ena: String, mod: String, pri: String, raw: Int?, rvrt: String)? {
            guard let line = peer.last("VARSET unit=1 ") else { return nil }
            var fields: [Substring: Substring] = [:]
            for part in line.split(separator: " ") where part.contains("=") {
                let pair = part.split(separator: "=", maxSplits: 1)
                if pair.count == 2 { fields[pair[0]] = pair[1] }
            }
            return (String(fields["ena"] ?? ""), String(fields["mod"] ?? ""), String(fields["pri"] ?? ""),
                    fields["var"].flatMap { Int($0) }, "\(fields["rvrt_tms"] ?? "") \(fields["ena_rvrt"] ?? "")")
        }
        #expect(waitFor(seconds: 30) {
            guard let v = varset() else { return false }
            return v.ena == "1" && v.mod == "4" && v.pri == "1" && (v.raw ?? 0) < 0 && v.rvrt == "10 1"
        }, "\(peer.all.filter { $0.hasPrefix("VARSET") })")
        // Unit 2 has no var points: nothing on them, its active power written as before.
        #expect(waitFor(seconds: 10) { (peer.last("WSET unit=2 ") ?? "").contains(" ena=1 mod=1 ") }, "\(peer.all.suffix(10))")
        #expect(!peer.all.contains { $0.hasPrefix("VARSET unit=2 ") })
    }
}
