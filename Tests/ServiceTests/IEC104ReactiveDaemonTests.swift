import BessSystem
import ControlCore
import Foundation
import IEC104
import TestSupport
import Testing

/// 3003 and 3004 against a running bessd (simulation, two 100 kW units whose inverters report var
/// capability): c104 (hil/peers/iec104_command_client.py) commands, and `status` shows SCADA's
/// reactive command in force on the units (issue 59 slice 4, docs/iec104.md).
@Suite("IEC 104: a running bessd takes 3003 and 3004", .serialized)
struct IEC104ReactiveDaemonTests {
    /// c104's run: per command, the answers of its IOA as "COT+" / "COT-".
    static func c104(_ port: Int, _ commands: [String]) throws -> [[String]] {
        let run = try Package.tool(["python3", "hil/peers/iec104_command_client.py", String(port), "7"] + commands)
        #expect(run.status == 0, "iec104_command_client.py: \(run.err.suffix(600))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any], "\(run.out.prefix(400))")
        return (json["commands"] as? [[String: Any]] ?? []).map { result in
            (result["frames"] as? [[String: Any]] ?? []).map { "\($0["cot"] as? Int ?? -1)\($0["negative"] as? Bool == true ? "-" : "+")" }
        }
    }

    /// The units' reactive source and Σ reactive set-point, kvar, from `status`.
    static func reactive(_ daemon: RunningDaemon) -> (sources: [String], setpointKvar: Double) {
        let units = ((try? daemon.request(["verb": "status"]))?["units"] as? [[String: Any]]) ?? []
        return (units.map { $0["reactive"] as? String ?? "-" }, units.compactMap { $0["reactive_setpoint_kvar"] as? Double }.reduce(0, +))
    }

    @Test("c104's 3003 of 20 kvar: confirmed, terminated, and the units' set-points sum to it from scada; 100 Mvar refused")
    func reactiveSetpointInForce() throws {
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: IEC104DaemonTests.yaml(port: port))
        #expect(!daemon.notify.collect(seconds: 30) { $0.contains("READY=1") }.isEmpty, "bessd ready")
        let answers = try Self.c104(port, ["3003:direct:0.02", "3003:direct:100", "3004:direct:0"])
        #expect(answers == [["7+", "10+"], ["7-"], ["7-"]], "\(answers)")
        var last: (sources: [String], setpointKvar: Double) = ([], 0)
        let inForce = waitFor(seconds: 30) {
            last = Self.reactive(daemon)
            return last.sources == ["scada", "scada"] && abs(last.setpointKvar - 20) < 0.01
        }
        #expect(inForce, "status: \(last)")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("BESS_IOA=3003") && text.contains("BESS_REASON=SETPOINT_OUT_OF_RANGE"), "journal")
    }

    @Test("c104's 3004 of −0.95 by select-before-operate: the units absorb from scada, Q = −P·tan(acos 0.95)")
    func powerFactorInForce() throws {
        let port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: IEC104DaemonTests.yaml(port: port))
        #expect(!daemon.notify.collect(seconds: 30) { $0.contains("READY=1") }.isEmpty, "bessd ready")
        let answers = try Self.c104(port, ["3004:sbo:-0.95"])
        #expect(answers == [["7+", "7+", "10+"]], "\(answers)")
        var last: (sources: [String], setpointKvar: Double) = ([], 0)
        var powerKW = 0.0
        let ratio = (1 / (0.95 * 0.95) - 1).squareRoot()
        let inForce = waitFor(seconds: 30) {
            last = Self.reactive(daemon)
            let units = ((try? daemon.request(["verb": "status"]))?["units"] as? [[String: Any]]) ?? []
            powerKW = units.compactMap { $0["power_w"] as? Double }.reduce(0, +) / 1000
            return last.sources == ["scada", "scada"] && last.setpointKvar < 0 && abs(abs(last.setpointKvar) - ratio * abs(powerKW)) < 0.1 * ratio * abs(powerKW)
        }
        #expect(inForce, "status: \(last), units at \(powerKW) kW")
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        if !inForce { print("JOURNAL:\n" + text.split(separator: "\n").filter { $0.contains("IEC") || $0.contains("3004") || $0.contains("104") }.joined(separator: "\n")) }
    }
}
