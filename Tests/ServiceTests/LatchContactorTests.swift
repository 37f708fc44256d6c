import Foundation
import Glibc
import TestSupport
import Testing

/// A latch that requests a disconnect opens its unit's contactor (issue 57 §6): bessd in `hil` mode
/// against pymodbus SunSpec inverters (hil/peers/pymodbus_sunspec_units.py), unit 1 with model 123
/// `Conn` (it reverts an open not re-written within `Conn_RvrtTms`), unit 2 without it; the BMS
/// simulated, heated by a `thermal_runaway` fault.
@Suite("A latch opens its unit's contactor", .serialized)
struct LatchContactorTests {
    static func yaml(port: Int, faults: Bool) -> String {
        var text = """
            mode: hil
            period_ms: 100
            control_socket: @SOCKET@
            bess_units:
              - id: C1
                capacity_kwh: 250
                max_power_kw: 50
                modbus: {host: 127.0.0.1, port: \(port), unit_id: 1, timeout_ms: 500}
                bms: {simulated: true}
              - id: C2
                capacity_kwh: 250
                max_power_kw: 50
                modbus: {host: 127.0.0.1, port: \(port), unit_id: 2, timeout_ms: 500}
                bms: {simulated: true}
            grid_integration:
              frequency_source: inverter
            simulation:
              frequency_profile: steady
              base_hz: 50

            """
        if faults {
            text += """
                  faults:
                    - {kind: thermal_runaway, at_s: 1, duration_s: 5}

                """
        }
        return text
    }

    /// The `writes=` count of a peer's CONN line.
    static func writes(_ line: String) -> Int {
        line.split(separator: " ").first { $0.hasPrefix("writes=") }.flatMap { Int($0.dropFirst(7)) } ?? -1
    }

    /// Opens after the zero, re-arms, re-opens after SIGKILL and restart, closes at the reset; CONTACTOR_UNAVAILABLE once.
    @Test("THERMAL_RUNAWAY opens and holds 123 Conn across restart until reset; no 123: CONTACTOR_UNAVAILABLE")
    func latchOpensContactor() throws {
        let peer = try UnitsPeer(["1:conn", "2"], seconds: 150)
        defer { peer.stop() }
        #expect(peer.port > 0)
        let directory = NSTemporaryDirectory() + "bessd-latch-conn-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func conn() -> [String] { peer.all.filter { $0.hasPrefix("CONN unit=1 ") } }

        var first: RunningDaemon? = try RunningDaemon(yaml: Self.yaml(port: peer.port, faults: true), directory: directory)
        let latchedNow = try first!.waitForUnits(seconds: 20) { latched($0[0]).contains("THERMAL_RUNAWAY") }
        #expect(latched(latchedNow[0]).contains("THERMAL_RUNAWAY"), "\(latchedNow)")
        // Opened once 0 W is on the wire (the peer reads 1234 W whatever its setpoint: the bounded wait).
        #expect(waitFor(seconds: 20) { conn().contains { $0.contains("conn=0") } }, "\(conn())")
        #expect(conn().first { $0.contains("conn=0") } == "CONN unit=1 conn=0 rvrt_tms=10 writes=1")
        // The status follows once the open is acknowledged and read back.
        var site: [[String: Any]] = []
        #expect(waitFor(seconds: 5) {
            site = (try? first!.request(["verb": "site"]))?["units"] as? [[String: Any]] ?? []
            return site.first?["contactor"] as? String == "open"
        }, "\(site)")
        #expect(site.last?["contactor"] as? String == "cannot_open", "\(site)")
        #expect(((try first!.units())[0]["setpoint_w"] as? NSNumber)?.doubleValue == 0)
        // Kept open past half its revert: re-armed, not left to the timer.
        #expect(waitFor(seconds: 15) { conn().contains("CONN unit=1 conn=0 rvrt_tms=10 writes=2") }, "\(conn())")
        first!.signal(SIGKILL)
        let (_, firstText) = first!.finish()
        first = nil
        let unavailable = firstText.components(separatedBy: "BESS_CODE=CONTACTOR_UNAVAILABLE").count - 1
        #expect(unavailable == 1, "CONTACTOR_UNAVAILABLE said \(unavailable) times")
        #expect(firstText.contains("unit id 2 on") && firstText.contains("cannot open"))
        let armedBeforeKill = conn().map(Self.writes).max() ?? 0

        // Nobody re-arms it: the peer's own timer reconnects the unit.
        #expect(waitFor(seconds: 15) { conn().last?.contains("conn=1") == true }, "\(conn())")
        #expect(conn().last == "CONN unit=1 conn=1 rvrt_tms=10 writes=\(armedBeforeKill)", "reverted by the device, not closed by bessd")

        // Restart without the fault: the latch restored from latches.json opens the unit again.
        let second = try RunningDaemon(yaml: Self.yaml(port: peer.port, faults: false), directory: directory)
        _ = second.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(latched(try second.units()[0]).contains("THERMAL_RUNAWAY"))
        #expect(waitFor(seconds: 20) { conn().last.map { $0.contains("conn=0") && Self.writes($0) > armedBeforeKill } ?? false }, "\(conn())")
        let reopened = conn().count
        let reopenedWrites = conn().last.map(Self.writes) ?? 0
        // Still open past half the revert: re-armed, until the operator's reset.
        #expect(waitFor(seconds: 15) { conn().contains("CONN unit=1 conn=0 rvrt_tms=10 writes=\(reopenedWrites + 1)") }, "\(conn())")
        #expect(!conn()[(reopened - 1)...].contains { $0.contains("conn=1") })
        var reset = (status: Int32(-1), out: "", err: "")
        #expect(waitFor(seconds: 15) {
            reset = (try? Package.run("bessctl", ["reset", "C1", "--socket", second.socket])) ?? reset
            return reset.status == 0
        }, "\(reset)")
        #expect(reset.out.contains("C1:THERMAL_RUNAWAY"), "\(reset.out)")
        // Closed by bessd (Conn 1, no revert), and the status says so.
        #expect(waitFor(seconds: 10) { conn().last?.hasPrefix("CONN unit=1 conn=1 rvrt_tms=0 ") == true }, "\(conn())")
        #expect(waitFor(seconds: 5) {
            let units = (try? second.request(["verb": "site"]))?["units"] as? [[String: Any]] ?? []
            return units.first.map { $0["contactor"] == nil } ?? false
        })
        second.signal(SIGTERM)
        let (_, secondText) = second.finish()
        #expect(secondText.contains("C1 THERMAL_RUNAWAY still latched from an earlier run"))
    }
}
