import BessSystem
import ControlCore
import Foundation
import Glibc
@testable import Scada
@testable import Service
import TestSupport
import Testing

/// Issue 57 part 1: every hold only its owner may lift survives a SIGKILL (the watchdog's way) and
/// a restart, twice over, and stands from the first status of the new daemon.
@Suite("Holds survive a restart", .serialized)
struct HoldRestartTests {
    static func directory(_ name: String) -> String {
        NSTemporaryDirectory() + "bessd-holds-\(name)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// A daemon of `yaml` on `directory`, once it has said READY.
    static func started(_ yaml: String, _ directory: String) throws -> RunningDaemon {
        let daemon = try RunningDaemon(yaml: yaml, directory: directory)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        return daemon
    }

    /// SIGKILL: no stop path, nothing written after the last answer.
    static func kill(_ daemon: RunningDaemon) -> String {
        daemon.signal(SIGKILL)
        return daemon.finish().text
    }

    static func holder(_ unit: [String: Any]) -> String? { unit["held_by"] as? String }
    static func mode(_ unit: [String: Any]) -> String? { unit["mode"] as? String }

    /// After two restarts each unit is still in standby with the same holder, from the first status.
    @Test("operator standby for site and unit survives SIGKILL and restart; each lifted by its own mode auto")
    func operatorStandby() throws {
        let directory = Self.directory("operator")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var daemon = try Self.started(daemonYAML, directory)
        let site = try Package.run("bessctl", ["mode", "standby", "--socket", daemon.socket])
        #expect(site.status == 0, "\(site.err)")
        let unit = try Package.run("bessctl", ["mode", "standby", "--unit", "D1", "--socket", daemon.socket])
        #expect(unit.status == 0, "\(unit.err)")
        let before = try daemon.units()
        #expect(before.map(Self.holder) == ["operator", "operator_site"])
        _ = Self.kill(daemon)

        // First restart: the very first status holds both, at zero, named as before.
        daemon = try Self.started(daemonYAML, directory)
        let restored = try daemon.units()
        #expect(restored.map(Self.mode) == ["standby", "standby"])
        #expect(restored.map(Self.holder) == ["operator", "operator_site"])
        #expect(restored.allSatisfy { ($0["setpoint_w"] as? NSNumber)?.doubleValue == 0 })
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("standby (operator)") && table.out.contains("standby (operator, whole site)"), "\(table.out)")
        // The site's owner lifts the site's hold: D1's own standby stays.
        let lift = try Package.run("bessctl", ["mode", "auto", "--socket", daemon.socket])
        #expect(lift.out.contains("D1: its own operator standby"), "\(lift.out)")
        let lifted = try daemon.waitForUnits { Self.mode($0[1]) == "auto" }
        #expect(lifted.map(Self.mode) == ["standby", "auto"])
        let first = Self.kill(daemon)
        #expect(first.contains("the site is in the operator's standby (whole site) from an earlier run"), "\(first.suffix(2000))")
        #expect(first.contains("D1 is in the operator's standby from an earlier run"))

        // Second restart: D1's hold still stands, the lifted one stays lifted.
        daemon = try Self.started(daemonYAML, directory)
        let again = try daemon.units()
        #expect(again.map(Self.mode) == ["standby", "auto"])
        #expect(Self.holder(again[0]) == "operator")
        _ = try daemon.request(["verb": "mode", "mode": "auto", "unit": "D1"])
        #expect(try daemon.waitForUnits { $0.allSatisfy { Self.mode($0) == "auto" } }.allSatisfy { Self.mode($0) == "auto" })
        _ = Self.kill(daemon)

        // A third start: nothing held any more.
        daemon = try Self.started(daemonYAML, directory)
        #expect(try daemon.units().allSatisfy { Self.mode($0) == "auto" && Self.holder($0) == nil })
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }

    /// WMaxLimPct 50 % reverted to an enabled 0 %: after two restarts the site is at 0 % from the first cycle, model 704 reads WMaxLimPctEna 1 and WMaxLimPct 0, bessctl site names it.
    @Test("a reverted WMaxLimPct of 0 % survives SIGKILL and restart until a SCADA write lifts it")
    func scadaLimit() throws {
        let directory = Self.directory("scada")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let port = Loopback.freePort()
        let yaml = daemonYAML.replacingOccurrences(of: "simulation: {frequency_profile: steady, base_hz: 49.8}", with: """
            simulation: {frequency_profile: steady, base_hz: 49.8}
            scada:
              listen: 127.0.0.1:\(port)
              allow_from: [127.0.0.1]
              writes: true
              max_hold_s: 60
            """)
        func write(_ args: [String]) throws -> [Bool?] {
            let run = try Package.tool(["python3", "hil/peers/sunspec_write.py", "127.0.0.1", String(port), "1", "704"] + args)
            #expect(run.status == 0, "\(run.err)")
            let json = (try? JSONSerialization.jsonObject(with: Data(run.out.utf8)) as? [String: Any]) ?? [:]
            return (json["results"] as? [[String: Any]] ?? []).map { $0["ok"] as? Bool }
        }
        func model704() throws -> [String: Any] {
            let scan = try Package.tool(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(port)])
            #expect(scan.status == 0, "\(scan.err)")
            let json = (try? JSONSerialization.jsonObject(with: Data(scan.out.utf8)) as? [String: Any]) ?? [:]
            return (json["points"] as? [String: [String: Any]])?["704"] ?? [:]
        }
        func scadaLimit(_ daemon: RunningDaemon) -> [String: Any] {
            let site = (try? daemon.request(["verb": "site"])) ?? [:]
            return ((site["grid_operator"] as? [String: Any])?["scada_limit"] as? [String: Any]) ?? [:]
        }
        func number(_ value: Any?) -> Double? { (value as? NSNumber)?.doubleValue }

        var daemon = try Self.started(yaml, directory)
        // The grid operator's fail-safe: 50 % now, an enabled 0 % once SCADA stops refreshing (2 s).
        #expect(try write(["WMaxLimPctRvrt=0", "WMaxLimPctEnaRvrt=1", "--", "WMaxLimPctRvrtTms=2", "--",
                           "WMaxLimPctEna=1", "WMaxLimPct=50"]) == [true, true, true])
        #expect(waitFor(seconds: 10) { scadaLimit(daemon)["reverted"] as? Bool == true }, "\(scadaLimit(daemon))")
        #expect(number(scadaLimit(daemon)["percent"]) == 0)
        _ = Self.kill(daemon)

        for round in 1...2 {
            daemon = try Self.started(yaml, directory)
            // From the first status on: the limit at 0 %, the cap at zero, both units at zero.
            let status = try daemon.request(["verb": "status"])
            let grid = status["grid_operator"] as? [String: Any] ?? [:]
            #expect(number(grid["limit_percent"]) == 0, "round \(round): \(grid)")
            #expect(number(grid["cap_w"]) == 0, "round \(round): \(grid)")
            let units = status["units"] as? [[String: Any]] ?? []
            #expect(units.count == 2 && units.allSatisfy { number($0["setpoint_w"]) == 0 }, "round \(round): \(units)")
            #expect(scadaLimit(daemon)["reverted"] as? Bool == true)
            // What SCADA reads back is the limit as it stands.
            let m704 = try model704()
            #expect(number(m704["WMaxLimPctEna"]) == 1, "round \(round): \(m704)")
            #expect(number(m704["WMaxLimPct"]) == 0, "round \(round): \(m704)")
            #expect(number(m704["WMaxLimPctEnaRvrt"]) == 1 && number(m704["WMaxLimPctRvrt"]) == 0, "round \(round): \(m704)")
            let table = try Package.run("bessctl", ["site", "--socket", daemon.socket])
            #expect(table.out.contains("grid operator limit 0 % (SCADA reversion value 0 %, holds until written)"), "\(table.out)")
            let text = Self.kill(daemon)
            #expect(text.contains("SCADA_LIMIT_RESTORED"), "\(text.suffix(2000))")
        }

        // Its owner lifts it: SCADA writes WMaxLimPctEna 0, and that survives the next restart too.
        daemon = try Self.started(yaml, directory)
        #expect(try write(["WMaxLimPctEnaRvrt=0", "--", "WMaxLimPctEna=0"]) == [true, true])
        #expect(waitFor(seconds: 5) { scadaLimit(daemon).isEmpty })
        _ = Self.kill(daemon)
        daemon = try Self.started(yaml, directory)
        let grid = try daemon.request(["verb": "status"])["grid_operator"] as? [String: Any] ?? [:]
        #expect(grid["limit_percent"] is NSNull, "\(grid)")
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }

    @Test("aggregator emergency_stop holds every unit across SIGKILL and restart until the command's end")
    func emergencyStop() throws {
        let directory = Self.directory("estop")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let stub = try AggregatorStub(seconds: 180)
        #expect(stub.port > 0)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try "estop-token\n".write(toFile: directory + "/token", atomically: true, encoding: .utf8)
        chmod(directory + "/token", 0o600)  // a token anyone may read is refused (KEY_PERMISSIONS)
        let yaml = daemonYAML.replacingOccurrences(of: "base_hz: 49.8", with: "base_hz: 50.0") + """

            aggregator: {url: "http://127.0.0.1:\(stub.port)", token_file: \(directory)/token, interval_s: 0.2, site_id: HOLD_SITE}
            """
        var daemon = try Self.started(yaml, directory)
        let end = (Date().timeIntervalSince1970 + 30).rounded()
        try stub.admin("/admin/command", ["id": "estop-1", "kind": "emergency_stop", "expires_unix": end])
        let stopped = try daemon.waitForUnits(seconds: 15) { $0.allSatisfy { Self.holder($0) == "aggregator_emergency_stop" } }
        #expect(stopped.map(Self.holder) == ["aggregator_emergency_stop", "aggregator_emergency_stop"])
        // Killed once the ack has gone out: what the ack said must be on disk.
        #expect(waitFor(seconds: 10) {
            ((try? stub.state())?["acks"] as? [[String: Any]] ?? []).contains { $0["id"] as? String == "estop-1" }
        })
        _ = Self.kill(daemon)

        for round in 1...2 {
            daemon = try Self.started(yaml, directory)
            let units = try daemon.units()
            #expect(units.map(Self.mode) == ["standby", "standby"], "round \(round)")
            #expect(units.map(Self.holder) == ["aggregator_emergency_stop", "aggregator_emergency_stop"], "round \(round)")
            for unit in units {
                let until = (unit["held_until_unix"] as? NSNumber)?.doubleValue ?? 0
                #expect(abs(until - end) <= 2, "round \(round): held until \(until), the command ends at \(end)")
            }
            #expect(units.allSatisfy { ($0["setpoint_w"] as? NSNumber)?.doubleValue == 0 })
            let text = Self.kill(daemon)
            #expect(text.contains("the aggregator's emergency stop from an earlier run holds until"), "\(text.suffix(2000))")
        }

        // Not before its end, and lifted at it, by itself.
        daemon = try Self.started(yaml, directory)
        var releasedAt = 0.0
        #expect(waitFor(seconds: 45) {
            guard let units = try? daemon.units(), units.allSatisfy({ Self.mode($0) == "auto" }) else { return false }
            releasedAt = Date().timeIntervalSince1970
            return true
        })
        #expect(releasedAt >= end - 1, "released at \(releasedAt), the command ends at \(end)")
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }

    /// HOLD_STATE_UNREADABLE names the file in the journal, status and faults.
    @Test("a damaged holds file starts every unit in operator standby, reported and kept, lifted by mode auto")
    func damagedFile() throws {
        let directory = Self.directory("damaged")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        let file = directory + "/state/holds.json"
        try #"{"aggregator":{},"format":"bessd-holds","operator":{"site":fal"#.write(toFile: file, atomically: true, encoding: .utf8)
        var daemon = try Self.started(daemonYAML, directory)
        let status = try daemon.request(["verb": "status"])
        let units = status["units"] as? [[String: Any]] ?? []
        #expect(units.count == 2 && units.allSatisfy { Self.mode($0) == "standby" && Self.holder($0) == "operator_site" }, "\(units)")
        let state = status["hold_state"] as? String ?? ""
        #expect(state.hasPrefix("HOLD_STATE_UNREADABLE: ") && state.contains(file), "\(state)")
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("HOLD_STATE_UNREADABLE") && table.out.contains("standby (operator, whole site)"), "\(table.out)")
        let faults = try daemon.request(["verb": "faults"])["faults"] as? [[String: Any]] ?? []
        #expect(faults.contains { $0["code"] as? String == "HOLD_STATE_UNREADABLE" && $0["unit"] as? String == "site" }, "\(faults)")
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory + "/state").filter { $0.hasPrefix("holds.json.damaged-") }
        #expect(kept.count == 1)
        // Restarted before anyone looked: still the most restrictive state.
        var text = Self.kill(daemon)
        #expect(text.contains("HOLD_STATE_UNREADABLE") && text.contains(file), "\(text.suffix(2000))")
        daemon = try Self.started(daemonYAML, directory)
        #expect(try daemon.units().allSatisfy { Self.holder($0) == "operator_site" })
        // The operator checks the site and lifts it: a fresh file, nothing held, no notice.
        _ = try daemon.request(["verb": "mode", "mode": "auto"])
        let after = try daemon.waitForUnits { $0.allSatisfy { Self.mode($0) == "auto" } }
        #expect(after.allSatisfy { Self.mode($0) == "auto" })
        #expect(try daemon.request(["verb": "status"])["hold_state"] == nil)
        text = Self.kill(daemon)
        daemon = try Self.started(daemonYAML, directory)
        #expect(try daemon.units().allSatisfy { Self.mode($0) == "auto" })
        daemon.signal(SIGTERM)
        text = daemon.finish().text
        #expect(!text.contains("HOLD_STATE_UNREADABLE"))
    }
}
