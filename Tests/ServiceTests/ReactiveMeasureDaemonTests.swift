import Foundation
import Glibc
import Simulation
import TestSupport
import Testing

/// The site's reactive power and voltage as plant SCADA and the control centre read them from a
/// running bessd (issue 59, slice 1), over the simulated meter: pysunspec2 reads 701 and c104 reads
/// 1002/1003 after an interrogation and spontaneously. The simulated meter sees the load at PF 0.95
/// lagging (`SimulatedMeter.loadVarPerW`) and the batteries idle, at the voltage
/// `SimulatedMeter.voltage` gives the connection point.
@Suite("Reactive power and voltage: a running bessd's SCADA and IEC 104", .serialized)
struct ReactiveMeasureDaemonTests {
    /// Two 100 kW units, a simulated meter, no application: the batteries idle and the connection
    /// point carries the load, stepping between 100 and 160 kW every 4 s; the outstation of
    /// `IEC104DaemonTests` (common address 7).
    static func yaml(scada: Int, iec104: Int) -> String {
        IEC104DaemonTests.yaml(port: iec104).replacingOccurrences(of: "simulation: {frequency_profile: steady, base_hz: 49.8}", with: """
            simulation:
              frequency_profile: steady
              base_hz: 50.0
              load: {profile: steps, base_kw: 100, levels_kw: [160], step_period_s: 4}
            site:
              meter: {protocol: sunspec}
            scada:
              listen: 127.0.0.1:\(scada)
              allow_from: [127.0.0.1]
            """)
    }

    static let loadsW = [100_000.0, 160_000.0]
    static let ratingW = 200_000.0

    static func number(_ value: Any?) -> Double? { (value as? Double) ?? (value as? Int).map(Double.init) }

    /// bessd on `yaml`, once its meter reads the load; its SCADA and IEC 104 ports.
    static func meteredDaemon() throws -> (daemon: RunningDaemon, scada: Int, iec104: Int) {
        let scadaPort = Loopback.freePort(), iec104Port = Loopback.freePort()
        let daemon = try RunningDaemon(yaml: yaml(scada: scadaPort, iec104: iec104Port))
        var site: [String: Any] = [:]
        let metered = waitFor(seconds: 15) {
            site = (try? daemon.request(["verb": "site"])) ?? [:]
            return (site["grid_power_w"] as? Double).map { $0 > 50_000 } ?? false
        }
        #expect(metered, "site: \(site)")
        return (daemon, scadaPort, iec104Port)
    }

    @Test("pysunspec2: 701 Var = −load var (+ = injecting), PF −0.95 (P's sign), LNV and VL1–VL3 the meter's voltage")
    func scadaReadsTheMeter() throws {
        let (daemon, scadaPort, _) = try Self.meteredDaemon()
        let scan = try Package.tool(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(scadaPort)])
        #expect(scan.status == 0, "\(scan.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(scan.out.utf8)) as? [String: Any])
        let m701 = (json["points"] as? [String: [String: Any]])?["701"] ?? [:]
        // One read of the model: W, Var, PF and the voltages of one publication.
        let w = try #require(Self.number(m701["W"]), "701: \(m701)")
        #expect(Self.loadsW.contains { abs(w + $0) < 1_000 }, "W \(w): the load imported")
        let q = try #require(Self.number(m701["Var"]), "701: \(m701)")
        #expect(Self.loadsW.contains { abs(w + $0) < 1_000 && abs(q + SimulatedMeter.loadVarPerW * $0) < 30 },
                "Var \(q) for W \(w): the load's var, absorbed")
        let pf = try #require(Self.number(m701["PF"]), "701: \(m701)")
        #expect(abs(pf + 0.95) < 0.002, "PF \(pf): 0.95, negative as P is")
        let volts = SimulatedMeter.voltage(gridW: -w, ratingW: Self.ratingW)
        for name in ["LNV", "VL1", "VL2", "VL3"] {
            #expect(Self.number(m701[name]).map { abs($0 - volts) < 0.2 } == true, "\(name) \(m701[name] ?? "-") vs \(volts)")
        }
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }

    @Test("c104: 1002 −load Mvar and 1003 √3·V kV after interrogation; 1002 spontaneous when the load steps")
    func iec104ReadsTheMeter() throws {
        let (daemon, _, iec104Port) = try Self.meteredDaemon()
        let run = try Package.tool(["python3", "hil/peers/iec104_measure_client.py", String(iec104Port), "7", "1002", "12", "0.001"])
        #expect(run.status == 0, "iec104_measure_client.py: \(run.err.suffix(600))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any], "\(run.out.prefix(400))")
        let ok = json["ok"] as? [String: Bool] ?? [:]
        #expect(ok["connected"] == true && ok["startdt"] == true, "c104: \(ok)")
        let levels = Self.loadsW.map { -$0 * SimulatedMeter.loadVarPerW / 1e6 }
        let interrogated = json["interrogated"] as? [String: [String: Any]] ?? [:]
        let mvar = try #require(Self.number(interrogated["1002"]?["value"]), "interrogated: \(interrogated)")
        #expect(interrogated["1002"]?["invalid"] as? Bool == false, "1002 valid: \(interrogated["1002"] ?? [:])")
        #expect(levels.contains { abs(mvar - $0) < 0.0005 }, "1002 \(mvar) Mvar: the load's var absorbed, one of \(levels)")
        let kv = try #require(Self.number(interrogated["1003"]?["value"]), "interrogated: \(interrogated)")
        #expect(interrogated["1003"]?["invalid"] as? Bool == false, "1003 valid: \(interrogated["1003"] ?? [:])")
        let kvLevels = Self.loadsW.map { 3.0.squareRoot() * SimulatedMeter.voltage(gridW: $0, ratingW: Self.ratingW) / 1000 }
        #expect(kvLevels.contains { abs(kv - $0) < 0.0005 }, "1003 \(kv) kV: line to line, one of \(kvLevels)")
        // c104's own points agree (1003 moves less than its 0.1 kV deadband: nothing overwrote it).
        let points = json["points"] as? [String: [String: Any]] ?? [:]
        #expect(Self.number(points["1003"]?["value"]).map { abs($0 - kv) < 1e-6 } == true && points["1003"]?["invalid"] as? Bool == false,
                "c104's point 1003: \(points["1003"] ?? [:])")
        // The load steps: 1002 moves 0.0197 Mvar, past its 0.001 deadband, and is sent spontaneously.
        let spontaneous = json["spontaneous"] as? [[String: Any]] ?? []
        #expect(spontaneous.allSatisfy { $0["invalid"] as? Bool == false }, "spontaneous 1002 valid: \(spontaneous)")
        let values = spontaneous.compactMap { Self.number($0["value"]) }
        #expect(values.allSatisfy { v in levels.contains { abs(v - $0) < 0.0005 } }, "spontaneous 1002 \(values): the load's var")
        #expect(values.contains { abs($0 - mvar) > 0.001 }, "a spontaneous 1002 past the deadband from \(mvar): \(values)")
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }
}
