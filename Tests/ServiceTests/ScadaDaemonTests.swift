import BessSystem
import ControlCore
import Foundation
import Glibc
@testable import Config
@testable import Cycle
@testable import Scada
import Synchronization
import TestSupport
import Testing

/// SCADA in a running bessd: what a plant controller reads of the site, and what its writes do.
/// The server alone is tested in ScadaTests.
@Suite("SCADA: a running bessd serves its site", .serialized)
struct ScadaDaemonTests {
    /// The register layout bessd serves for the two 100 kW units of `daemonYAML`.
    static func layout(hasMeter: Bool) -> ScadaImage {
        ScadaImage(site: ScadaSiteDescription(siteID: "site", version: "", mode: "", unitID: 1,
                                              ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000],
                                              hasMeter: hasMeter))
    }

    /// pysunspec2 reads 701 W (−grid power), Hz, 713 SoC and each unit's 802 SoC as bessctl site --json; mbpoll reads the marker and 701 W.
    @Test("SunSpec clients read the site as bessctl shows it; writes refused and logged")
    func daemonServesTheSite() throws {
        let port = Loopback.freePort()
        let yaml = daemonYAML.replacingOccurrences(of: "simulation: {frequency_profile: steady, base_hz: 49.8}", with: """
            simulation:
              frequency_profile: steady
              base_hz: 50.0
              load: {base_kw: 260}
            site:
              meter: {protocol: sunspec}
              application: peak_shaving
              peak_shaving: {import_max_kw: 200}
            scada:
              listen: 127.0.0.1:\(port)
              allow_from: [127.0.0.1]
            """)
        let daemon = try RunningDaemon(yaml: yaml)
        // Once peak shaving has settled, the site holds still (steady load, steady frequency).
        var site: [String: Any] = [:]
        let settled = waitFor(seconds: 15) {
            site = (try? daemon.request(["verb": "site"])) ?? [:]
            return (site["grid_power_w"] as? Double).map { abs($0 - 200_000) < 1_000 } ?? false
        }
        #expect(settled, "site: \(site)")
        let scan = try Package.tool(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(port)])
        site = (try? daemon.request(["verb": "site"])) ?? [:]
        #expect(scan.status == 0, "\(scan.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(scan.out.utf8)) as? [String: Any])
        let points = json["points"] as? [String: [String: Any]] ?? [:]
        let batteries = (json["instances"] as? [String: [[String: Any]]])?["802"] ?? []
        func n(_ model: [String: Any]?, _ name: String) -> Double? {
            (model?[name] as? Double) ?? (model?[name] as? Int).map(Double.init)
        }
        let grid = try #require(site["grid_power_w"] as? Double)
        let w = try #require(n(points["701"], "W"))
        #expect(abs(w + grid) < 1_500, "701 W \(w), grid \(grid)")
        #expect(n(points["701"], "Hz").map { abs($0 - 50) < 0.001 } == true)
        #expect(n(points["702"], "WMaxRtg") == 200_000)
        let units = site["units"] as? [[String: Any]] ?? []
        #expect(units.count == 2 && batteries.count == 2)
        for (unit, battery) in zip(units, batteries) {
            let soc = try #require(unit["soc_percent"] as? Double)
            #expect(n(battery, "SoC").map { abs($0 - soc) <= 0.1 } == true, "802 \(String(describing: battery["SoC"])) vs \(soc)")
        }
        let mean = units.compactMap { $0["soc_percent"] as? Double }.reduce(0, +) / 2
        #expect(n(points["713"], "SoC").map { abs($0 - mean) <= 0.1 } == true)
        // mbpoll: the marker, and 701 W as a raw register with its scale factor.
        let layout = Self.layout(hasMeter: true)
        let wAddress = ScadaImage.base + layout.start(of: 701)! + SunSpecTables.M701.W.offset
        let raw = try Package.tool(["mbpoll", "-m", "tcp", "-p", String(port), "-a", "1", "-r", String(wAddress + 1), "-c", "1",
                                    "-t", "4", "-1", "-q", "127.0.0.1"])
        let value = raw.out.split(separator: "\n").first { $0.contains("[\(wAddress + 1)]:") }
            .flatMap { $0.split(separator: "\t").last?.split(separator: " ").first.flatMap { Double($0) } }
        // mbpoll prints the register unsigned first ("45506 (-20030)"): int16 by hand.
        let signed = value.map { $0 > 32_767 ? $0 - 65_536 : $0 }
        #expect(signed.map { abs($0 * pow(10, Double(layout.wSF)) + grid) < 1_500 } == true, "\(raw.out)")
        let write = try Package.tool(["mbpoll", "-m", "tcp", "-p", String(port), "-a", "1", "-r", String(wAddress + 1), "-1", "-q",
                                      "127.0.0.1", "5"])
        #expect(write.status != 0)
        daemon.signal(SIGTERM)
        let end = daemon.finish()
        #expect(end.status == 0)
        #expect(end.text.contains("SCADA_LISTENING"))
        #expect(end.text.contains("SCADA_WRITE_REFUSED"))
    }
}

/// The whole path in a running bessd: SCADA writes → the cycle → the units.
@Suite("SCADA: writes drive a running site", .serialized)
struct ScadaDaemonWriteTests {
    static func setpoints(_ daemon: RunningDaemon) -> (sum: Double, status: [String: Any]) {
        let status = (try? daemon.request(["verb": "status"])) ?? [:]
        let units = status["units"] as? [[String: Any]] ?? []
        return (units.reduce(0) { $0 + ((($1["setpoint_w"] as? NSNumber)?.doubleValue) ?? 0) }, status)
    }

    /// 200 kW setpoint moves both units; WMaxLimPct 30 % with RvrtTms 10 caps them at 60 kW at once and lifts at the ramp after 10 s unrefreshed; bessctl status shows both.
    @Test("a SCADA setpoint moves the units, WMaxLimPct caps them, both revert at RvrtTms; outsiders refused")
    func writesDriveTheSite() throws {
        let port = Loopback.freePort()
        let yaml = daemonYAML.replacingOccurrences(of: "simulation: {frequency_profile: steady, base_hz: 49.8}", with: """
            simulation: {frequency_profile: steady, base_hz: 50.0}
            limits: {ramp_percent_per_s: 20, schedule_ramp_percent_per_s: 100}
            scada:
              listen: 127.0.0.1:\(port)
              allow_from: [127.0.0.1]
              writes: true
              max_hold_s: 60
            """)
        let daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        func write(_ args: [String]) throws -> [Bool?] {
            let run = try Package.tool(["python3", "hil/peers/sunspec_write.py", "127.0.0.1", String(port), "1", "704"] + args)
            #expect(run.status == 0, "\(run.err)")
            let json = (try? JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any]) ?? [:]
            return (json["results"] as? [[String: Any]] ?? []).map { $0["ok"] as? Bool }
        }
        // The plant controller asks the site for 200 kW (its rating), reverting after 25 s.
        let setpointWritten = SystemClock.shared.now()  // before the write, as the limit's below
        #expect(try write(["WSetEna=1", "WSetMod=1", "WSet=200000", "--", "WSetRvrtTms=25"]) == [true, true])
        var last = Self.setpoints(daemon)
        #expect(waitFor(seconds: 15) { last = Self.setpoints(daemon); return last.sum > 195_000 }, "\(last.sum) W")
        // The grid operator: 30 %, reverting after 10 s.
        // Stamped before the write: the limit cannot revert earlier than 10 s after this instant,
        // however long the writing tool then takes to exit on a busy machine.
        let limitWritten = SystemClock.shared.now()
        #expect(try write(["WMaxLimPctEna=1", "WMaxLimPct=30", "--", "WMaxLimPctRvrtTms=10"]) == [true, true])
        #expect(waitFor(seconds: 2) { last = Self.setpoints(daemon); return last.sum <= 60_001 }, "\(last.sum) W")
        let operatorView = last.status["grid_operator"] as? [String: Any] ?? [:]
        #expect((operatorView["limit_percent"] as? NSNumber)?.doubleValue == 30, "\(operatorView)")
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("grid operator limit 30 % (SCADA 30 %, reverts in") && table.out.contains("cap 60.0 kW"), "\(table.out)")
        #expect(table.out.contains("SCADA setpoint 200.0 kW (reverts in"), "\(table.out)")
        // Held there until it reverts, 10 s after the write.
        var lifted = 0.0
        var highestWhileLimited = 0.0
        let liftedInTime = waitFor(seconds: 14) {
            last = Self.setpoints(daemon)
            let limit = (last.status["grid_operator"] as? [String: Any])?["limit_percent"] as? NSNumber
            if limit == nil { lifted = SystemClock.shared.now().seconds(since: limitWritten); return true }
            highestWhileLimited = max(highestWhileLimited, last.sum)
            return false
        }
        #expect(liftedInTime)
        #expect(highestWhileLimited <= 60_001, "\(highestWhileLimited) W while limited")
        // Not before its RvrtTms (how soon after it is the wait's 14 s, not a timed assertion).
        #expect(lifted >= 10, "lifted after \(lifted) s")
        // Then up at the limit ramp (20 %/s of 200 kW): not at once.
        last = Self.setpoints(daemon)
        #expect(last.sum < 150_000, "\(last.sum) W just after the limit ended")
        #expect(waitFor(seconds: 8) { last = Self.setpoints(daemon); return last.sum > 195_000 }, "\(last.sum) W")
        // A peer outside allow_from (127.0.0.2) cannot write: closed at accept.
        let outsider = try Package.tool(["python3", "-c", """
            from pymodbus.client import ModbusTcpClient
            c = ModbusTcpClient("127.0.0.1", port=\(port), source_address=("127.0.0.2", 0), timeout=2, retries=0)
            c.connect()
            try:
                r = c.write_register(\(ScadaImage.base + ScadaDaemonTests.layout(hasMeter: false).start(of: 704)! + SunSpecTables.M704.WMaxLimPct.offset), 10, slave=1)
                print("answered", r)
            except Exception as e:
                print("refused", e)
            """])
        #expect(!outsider.out.contains("answered WriteSingleRegisterResponse"), "\(outsider.out)\(outsider.err)")
        // The setpoint ends 25 s after its last write: dispatch (none) decides, the units go to 0.
        var ended = 0.0
        #expect(waitFor(seconds: 25) {
            last = Self.setpoints(daemon)
            if (last.status["grid_operator"] as? [String: Any])?["scada_setpoint"] is NSNull {
                ended = SystemClock.shared.now().seconds(since: setpointWritten)
                return true
            }
            return false
        })
        #expect(ended >= 25, "ended after \(ended) s")
        #expect(waitFor(seconds: 5) { Self.setpoints(daemon).sum.magnitude < 1 })
        daemon.signal(SIGTERM)
        let end = daemon.finish()
        #expect(end.status == 0)
        for text in ["WMaxLimPct 100 → 30 %", "WSet 0 → 200000 W", "SCADA_LIMIT_REVERTED", "SCADA_SETPOINT_REVERTED",
                     "SCADA connection from 127.0.0.2"] {
            #expect(end.text.contains(text), "\(text) not in the log")
        }
    }
}

/// `grid_operator.inputs` (issue 12, part 3): a ripple-control receiver's contacts through a Modbus
/// I/O module — pymodbus stands in for the module.
@Suite("Grid operator relay contacts", .serialized)
struct GridLimitInputTests {
    /// pymodbus I/O module: discrete inputs on Modbus TCP, coils on Modbus RTU over a pty. Override 2 × 100 kW → 30 % = 60 kW at once, lifted at the ramp; a module that stops answering raises GRID_LIMIT_INPUT_LOST.
    @Test("relay contacts on a Modbus I/O module: the lowest asserted limit caps the units; a silent one holds",
          arguments: [("discrete_inputs", false), ("coils", true)])
    func relayContacts(function: String, rtu: Bool) throws {
        let directory = NSTemporaryDirectory() + "bessd-relay-\(getpid())-\(function)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let state = directory + "/inputs"
        try "0000".write(toFile: state, atomically: true, encoding: .utf8)
        let socat = rtu ? try ptyPair(directory, "module", "bessd") : nil
        defer {
            if let socat {
                kill(socat.processIdentifier, SIGKILL)
                socat.waitUntilExit()
            }
        }
        if rtu { #expect(waitFor(seconds: 5) { FileManager.default.fileExists(atPath: directory + "/bessd") }) }
        let module = try UnitsPeer(arguments: ["python3", "hil/peers/pymodbus_io_module.py", state, "--seconds", "120"]
                                   + (rtu ? ["--rtu", directory + "/module"] : []))
        defer { module.stop() }
        #expect(module.ready && (rtu || module.port > 0))
        let line = rtu ? "{device: \(directory)/bessd, baud: 19200, parity: none, unit_id: 1, timeout_ms: 200}"
            : "{host: 127.0.0.1, port: \(module.port), unit_id: 1, timeout_ms: 200}"
        let yaml = daemonYAML.replacingOccurrences(of: "simulation: {frequency_profile: steady, base_hz: 49.8}", with: """
            simulation: {frequency_profile: steady, base_hz: 50.0}
            limits: {ramp_percent_per_s: 20, schedule_ramp_percent_per_s: 100}
            grid_operator:
              inputs:
                modbus: \(line)
                function: \(function)
                debounce_ms: 100
                poll_ms: 100
                lost_after_s: 1
                contacts:
                  - {input: 0, limit_percent: 0}
                  - {input: 1, limit_percent: 30}
                  - {input: 2, limit_percent: 60}
                  - {input: 3, limit_percent: 100}
            """)
        let daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        func view() -> (sum: Double, limit: Double?, lost: Bool) {
            let (sum, status) = ScadaDaemonWriteTests.setpoints(daemon)
            let g = status["grid_operator"] as? [String: Any] ?? [:]
            return (sum, (g["limit_percent"] as? NSNumber)?.doubleValue, (g["inputs"] as? [String: Any])?["lost"] as? Bool ?? false)
        }
        for unit in ["D1", "D2"] {
            let run = try Package.run("bessctl", ["override", "--socket", daemon.socket, "--unit", unit, "--power-kw", "100", "--for", "5m"])
            #expect(run.status == 0, "\(run.err)")
        }
        var last = view()
        #expect(waitFor(seconds: 15) { last = view(); return last.sum > 195_000 && last.limit == nil }, "\(last)")
        // Contacts 1 and 2 close: 30 % (the lower) applies.
        try "0110".write(toFile: state, atomically: true, encoding: .utf8)
        #expect(waitFor(seconds: 3) { last = view(); return last.limit == 30 }, "\(last)")
        #expect(waitFor(seconds: 1) { last = view(); return last.sum <= 60_001 }, "\(last)")
        // Contact 1 opens: 60 %, reached at the ramp (20 %/s of 200 kW: 40 kW/s), not at once.
        try "0010".write(toFile: state, atomically: true, encoding: .utf8)
        #expect(waitFor(seconds: 3) { last = view(); return last.limit == 60 }, "\(last)")
        let right = view().sum
        #expect(right < 115_000, "\(right) W just after the limit rose")
        #expect(waitFor(seconds: 3) { last = view(); return abs(last.sum - 120_000) < 1 }, "\(last)")
        // The module goes silent: GRID_LIMIT_INPUT_LOST, and 60 % holds.
        module.stop()
        #expect(waitFor(seconds: 5) { last = view(); return last.lost }, "\(last)")
        #expect(last.limit == 60 && abs(last.sum - 120_000) < 1)
        let faults = try Package.run("bessctl", ["faults", "--socket", daemon.socket])
        #expect(faults.out.contains("GRID_LIMIT_INPUT_LOST"), "\(faults.out)")
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("grid operator limit 60 % (relay inputs 60 %)"), "\(table.out)")
        daemon.signal(SIGTERM)
        let end = daemon.finish()
        #expect(end.status == 0)
        #expect(end.text.contains("limit 30 % (input 1, input 2 asserted)") && end.text.contains("GRID_LIMIT_INPUT_LOST: the I/O module"),
                "\(end.text.suffix(3000))")
    }
}
