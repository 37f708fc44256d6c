import BessSystem
import ControlCore
import Foundation
import Glibc
@testable import Config
@testable import Cycle
@testable import Scada
import Synchronization
import Testing

/// SCADA writes (issue 12, part 2): only the grid operator limit and the site setpoint of model
/// 704, inside the interlocks, expiring unless refreshed, every one logged.
@Suite("SCADA: writes to model 704", .serialized)
struct ScadaWriteTests {
    static let site = ScadaSiteDescription(siteID: "SITE_W", version: "0.0.0", mode: "simulation", unitID: 1,
                                           ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000], hasMeter: false)
    typealias M = SunSpecTables.M704

    /// The absolute register of a 704 point.
    static func address(_ point: SunSpecPoint) -> Int {
        ScadaImage.base + ScadaImage(site: site).start(of: 704)! + point.offset
    }

    @Test("decoding: a write is applied whole or refused whole — 02 for a register that is not writable or half a 32-bit point, 03 for a value out of range; a write starts its reversion time (RvrtTms, or max_hold_s for 0)")
    func decode() throws {
        let image = ScadaImage(site: Self.site)
        let now = MonotonicInstant(nanoseconds: 5_000_000_000)
        let commands = SiteCommands(maxHoldSeconds: 60)
        func write(_ point: SunSpecPoint, _ values: [UInt16]) -> Result<ScadaWrite, ScadaWriteRefusal> {
            image.decodeWrite(address: Self.address(point), values: values, commands: commands, now: now)
        }
        func exception(_ result: Result<ScadaWrite, ScadaWriteRefusal>) -> UInt8? {
            if case .failure(let refusal) = result { return refusal.exception }
            return nil
        }
        // WMaxLimPctEna and WMaxLimPct in one request.
        let limit = try write(M.WMaxLimPctEna, [1, 30]).get()
        #expect(limit.commands.limit.active(at: now) == 30 && limit.limitWritten && !limit.setpointWritten)
        #expect(abs(limit.commands.limit.remaining(at: now) - 60) < 1e-6, "RvrtTms 0: max_hold_s")
        #expect(limit.changes == [.init(point: "WMaxLimPctEna", old: 0, new: 1), .init(point: "WMaxLimPct", old: 100, new: 30)])
        let timed = try write(M.WMaxLimPctRvrtTms, [0, 10]).get()
        #expect(abs(timed.commands.limit.remaining(at: now) - 10) < 1e-6)
        // WSet at W_SF (200 kW of ratings → SF 1): 15,000 × 10 = 150 kW.
        let wsf = image.wSF
        let raw = UInt32(bitPattern: Int32(-150_000 / Int(pow(10, Double(wsf)))))
        let setpoint = try write(M.WSetEna, [1, 1, UInt16(raw >> 16), UInt16(raw & 0xFFFF)]).get()
        #expect(setpoint.commands.setpoint.active(at: now) == -150_000)
        // Refusals.
        #expect(exception(write(M.WMaxLimPctRvrtRem, [0, 5])) == 2, "read-only point")
        #expect(exception(write(M.VarSetEna, [1])) == 2, "a point bessd does not take")
        #expect(exception(write(M.WSetPct, [50])) == 2, "WSetPct is not served")
        #expect(exception(write(M.WSet, [0])) == 2, "half of WSet")
        #expect(exception(write(M.WMaxLimPctRvrtTms, [0, 10, 0])) == 2, "runs on into WMaxLimPctRvrtRem")
        #expect(exception(write(M.WMaxLimPct, [101])) == 3)
        #expect(exception(write(M.WMaxLimPctEna, [2])) == 3)
        #expect(exception(write(M.WMaxLimPctRvrtTms, [0, 61])) == 3, "beyond max_hold_s")
        #expect(exception(write(M.WSetMod, [0])) == 3, "percent mode is not served")
        let beyond = UInt32(bitPattern: Int32(250_000 / Int(pow(10, Double(wsf)))))
        #expect(exception(write(M.WSet, [UInt16(beyond >> 16), UInt16(beyond & 0xFFFF)])) == 3, "beyond Σ ratings")
        // A refused register in a request refuses it all, the good part too.
        #expect(exception(write(M.WMaxLimPctEna, [1, 30, 100, 0, 0, 10, 0])) == 2)
    }

    /// What the server logged: code and fields.
    final class Said: Sendable {
        let entries = Mutex<[(String, [String: String])]>([])
        func withLock<R>(_ body: ([(String, [String: String])]) -> R) -> R { entries.withLock { body($0) } }
    }

    /// A server with writes on, on a free loopback port, over a SharedState the test owns.
    func server(_ settings: ScadaConfiguration, said: Said) throws -> (ScadaServer, SharedState) {
        let shared = SharedState(units: 2)
        var generation: UInt64 = 0
        _ = shared.commands(generation: &generation)
        _ = shared.commit(SiteCommands(maxHoldSeconds: settings.maxHoldSeconds), ifGeneration: generation)
        let server = try ScadaServer(configuration: settings, site: Self.site, shared: shared) { code, _, fields in
            said.entries.withLock { $0.append(("\(code)", fields)) }
        }
        try server.start()
        return (server, shared)
    }

    func pysunspec2(_ port: Int, _ args: [String]) throws -> [String: Any] {
        let run = try Package.tool(["python3", "hil/peers/sunspec_write.py", "127.0.0.1", String(port), "1", "704"] + args)
        #expect(run.status == 0, "\(run.err)")
        return (try? JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any]) ?? [:]
    }

    @Test("pysunspec2 writes WMaxLimPct 30 % with RvrtTms 10 and a WSet: the commands the cycle takes, read back with RvrtRem; a read-only point answers 02, 150 % answers 03 — each logged with peer, point, old → new and expiry")
    func pysunspec2Writes() throws {
        let said = Said()
        let (server, shared) = try server(ScadaConfiguration(host: "127.0.0.1", port: 0, writes: true), said: said)
        defer { server.stop() }
        let answer = try pysunspec2(server.port, ["WMaxLimPctEna=1", "WMaxLimPct=30", "--", "WMaxLimPctRvrtTms=10", "--",
                                                   "WSetEna=1", "WSetMod=1", "WSet=-120000", "--", "WMaxLimPctRvrtRem=5", "--",
                                                   "WMaxLimPct=150", "--", "WMaxLimPct=30", "--", "WMaxLimPct=30"])
        let results = answer["results"] as? [[String: Any]] ?? []
        #expect(results.map { $0["ok"] as? Bool } == [true, true, true, false, false, true, true], "\(results)")
        let errors = results.compactMap { $0["error"] as? String }.joined(separator: " | ")
        #expect(errors.contains("exception: 2") && errors.contains("exception: 3"), "\(errors)")
        let commands = shared.commands
        let now = MonotonicClock.now()
        #expect(commands.limit.active(at: now) == 30)
        #expect(commands.limit.remaining(at: now) > 8 && commands.limit.remaining(at: now) <= 10)
        #expect(commands.setpoint.active(at: now) == -120_000)
        let points = answer["points"] as? [String: Any] ?? [:]
        #expect((points["WMaxLimPct"] as? NSNumber)?.doubleValue == 30)
        #expect((points["WMaxLimPctRvrtTms"] as? NSNumber)?.doubleValue == 10)
        #expect(((points["WMaxLimPctRvrtRem"] as? NSNumber)?.doubleValue).map { $0 > 0 && $0 <= 10 } == true, "\(points)")
        #expect((points["WSet"] as? NSNumber)?.doubleValue == -120_000)
        // Two refreshes of WMaxLimPct with the value it holds: counted, not logged (once a minute).
        #expect(server.writesAccepted.load(ordering: .relaxed) == 5)
        #expect(server.refusedIllegalAddress.load(ordering: .relaxed) == 1 && server.refusedIllegalValue.load(ordering: .relaxed) == 1)
        let log = said.withLock { $0 }
        let pct = log.first { $0.0 == "SCADA_WRITE" && $0.1["BESS_POINT"] == "WMaxLimPct" }
        #expect(pct?.1["BESS_OLD"] == "100" && pct?.1["BESS_NEW"] == "30" && pct?.1["BESS_PEER"]?.hasPrefix("127.0.0.1:") == true)
        #expect(pct?.1["BESS_EXPIRES_S"] == "60", "the first write, before RvrtTms, holds max_hold_s")
        #expect(log.filter { $0.0 == "SCADA_WRITE" && $0.1["BESS_POINT"] == "WMaxLimPct" }.count == 1)
        let tms = log.first { $0.1["BESS_POINT"] == "WMaxLimPctRvrtTms" }
        #expect(tms?.1["BESS_EXPIRES_S"] == "10")
        #expect(log.filter { $0.0 == "SCADA_WRITE_REFUSED" }.map { $0.1["BESS_EXCEPTION"] } == ["2", "3"])
    }

    @Test("writes: false answers every write 01 and changes nothing")
    func writesOff() throws {
        let said = Said()
        let (server, shared) = try server(ScadaConfiguration(host: "127.0.0.1", port: 0), said: said)
        defer { server.stop() }
        let answer = try pysunspec2(server.port, ["WMaxLimPctEna=1", "WMaxLimPct=30"])
        let results = answer["results"] as? [[String: Any]] ?? []
        #expect(results.map { $0["ok"] as? Bool } == [false])
        #expect(shared.commands.limit.active(at: MonotonicClock.now()) == nil)
        #expect(server.refusedIllegalFunction.load(ordering: .relaxed) == 1)
        #expect(said.withLock { $0.map(\.0) } == ["SCADA_WRITE_REFUSED"])
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

    @Test("a SCADA setpoint of 200 kW moves both units; WMaxLimPct 30 % with RvrtTms 10 caps them at 60 kW at once and lifts at the ramp after 10 s without a refresh; the setpoint ends at its RvrtTms; a peer outside allow_from is refused; bessctl status shows both")
    func writesDriveTheSite() throws {
        let port = LoopbackRigTests.freePort()
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
        #expect(try write(["WSetEna=1", "WSetMod=1", "WSet=200000", "--", "WSetRvrtTms=25"]) == [true, true])
        let setpointWritten = MonotonicClock.now()
        var last = Self.setpoints(daemon)
        #expect(waitFor(seconds: 15) { last = Self.setpoints(daemon); return last.sum > 195_000 }, "\(last.sum) W")
        // The grid operator: 30 %, reverting after 10 s.
        #expect(try write(["WMaxLimPctEna=1", "WMaxLimPct=30", "--", "WMaxLimPctRvrtTms=10"]) == [true, true])
        let limitWritten = MonotonicClock.now()
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
            if limit == nil { lifted = MonotonicClock.now().seconds(since: limitWritten); return true }
            highestWhileLimited = max(highestWhileLimited, last.sum)
            return false
        }
        #expect(liftedInTime)
        #expect(highestWhileLimited <= 60_001, "\(highestWhileLimited) W while limited")
        #expect(lifted >= 9.9 && lifted < 11.5, "lifted after \(lifted) s")
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
                r = c.write_register(\(ScadaWriteTests.address(ScadaWriteTests.M.WMaxLimPct)), 10, slave=1)
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
                ended = MonotonicClock.now().seconds(since: setpointWritten)
                return true
            }
            return false
        })
        #expect(ended >= 24.5 && ended < 27, "ended after \(ended) s")
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
    @Test("relay contacts on a pymodbus I/O module (discrete inputs on Modbus TCP, coils on Modbus RTU over a pty): the lowest asserted limit caps the units at once (override 2 × 100 kW → 30 % = 60 kW) and lifts at the ramp; a module that stops answering raises GRID_LIMIT_INPUT_LOST and the last limit holds")
    func relayContacts() throws {
        for (function, rtu) in [("discrete_inputs", false), ("coils", true)] {
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
}
