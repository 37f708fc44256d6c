import Foundation
import ControlProtocol
import Glibc
import TestSupport
import Testing

/// `bess-hil plant` and `bessd run` on the same rig file form a complete rig on one machine.
@Suite("Loopback rig, end to end", .serialized)
struct LoopbackRigTests {
    @Test("the unit follows droop on the wire, and bessd's stop leaves the inverter at zero")
    func rig() throws {
        let template = try String(contentsOf: Package.root.appendingPathComponent("hil/rigs/loopback.yaml"), encoding: .utf8)
        let port = Loopback.freePort()
        // Same rig, a free port, and the first frequency step (to 49.8 Hz) after 5 s instead of 20 s.
        let rig = template.replacingOccurrences(of: "port: 15502", with: "port: \(port)")
            .replacingOccurrences(of: "step_period_s: 20", with: "step_period_s: 5")
        let path = NSTemporaryDirectory() + "bessd-rig-\(getpid()).yaml"
        try rig.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }

        let plant = Process()
        plant.executableURL = Package.executable("bess-hil")
        plant.arguments = ["plant", "--config", path, "--duration", "15"]
        let plantOut = Pipe()
        plant.standardOutput = plantOut
        plant.standardError = FileHandle.nullDevice
        try plant.run()
        #expect(waitFor { Loopback.listening(port) }, "the plant never listened")
        let bessd = try Package.run("bessd", ["run", "--config", path, "--duration", "12", "--status-every", "0.5", "--log", "stdout"])
        let plantText = String(decoding: plantOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        plant.waitUntilExit()

        #expect(bessd.status == 0, "\(bessd.err)")
        #expect(bessd.out.contains("SunSpec models [1, 103, 120, 121, 123, 704], command via acControls704"))
        // 49.8 Hz with the seed's deadband and 5 % droop: +4.0 kW on 100 kW, read from the inverter's Hz.
        let lines = bessd.out.split(separator: "\n")
        #expect(lines.contains { $0.contains("f=49.800Hz") && $0.contains("SP +4.0kW") })
        #expect(lines.contains { $0.contains("f=50.000Hz") && $0.contains("SP 0.0kW") })
        // The plant saw the setpoint on its registers and delivered it, then zero after bessd stopped.
        let plantLines = plantText.split(separator: "\n").filter { $0.hasPrefix("plant ") }
        #expect(plantLines.contains { $0.contains("SP +4.0kW P +4.0kW") })
        #expect(plantLines.last?.contains("SP 0.0kW") == true, "\(plantLines.suffix(3))")
    }
}

@Suite("SIGKILL leaves a safe inverter", .serialized)
struct KillRevertTests {
    @Test("after SIGKILL the simulated inverter holds the last setpoint only until its revert timer runs out")
    func killRevert() throws {
        let port = Loopback.freePort()
        let rig = """
            mode: hil
            period_ms: 100
            control_socket: \(NSTemporaryDirectory())bessd-kill-\(getpid()).sock
            bess_units:
              - id: KILL_01
                capacity_kwh: 250
                max_power_kw: 100
                modbus: {host: 127.0.0.1, port: \(port), timeout_ms: 200}
                bms: {simulated: true}
            grid_integration:
              frequency_source: inverter
              droop_settings: {deadband_hz: [49.9, 50.05], droop_percent: 5.0, response_time_s: 0}
            simulation: {frequency_profile: steady, base_hz: 49.8}
            """
        let path = NSTemporaryDirectory() + "bessd-kill-\(getpid()).yaml"
        try rig.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let plant = Process()
        plant.executableURL = Package.executable("bess-hil")
        plant.arguments = ["plant", "--config", path, "--duration", "22"]
        let plantOut = Pipe()
        plant.standardOutput = plantOut
        plant.standardError = FileHandle.nullDevice
        try plant.run()
        #expect(waitFor { Loopback.listening(port) }, "the plant never listened")
        let bessd = Process()
        bessd.executableURL = Package.executable("bessd")
        bessd.arguments = ["run", "--config", path, "--status-every", "0", "--log", "stdout"]
        bessd.standardOutput = FileHandle.nullDevice
        bessd.standardError = FileHandle.nullDevice
        try bessd.run()
        // Until the inverter reports the droop power back (setpoint written, revert armed with it).
        let socket = NSTemporaryDirectory() + "bessd-kill-\(getpid()).sock"
        #expect(waitFor(seconds: 20) {
            let units = (try? ControlClient.request(["verb": "status"], socket: socket))?["units"] as? [[String: Any]]
            return ((units?.first?["power_w"] as? NSNumber)?.doubleValue ?? 0) > 3_900
        }, "the inverter never delivered the droop power")
        kill(bessd.processIdentifier, SIGKILL)  // no chance to write a safe setpoint
        bessd.waitUntilExit()
        let lines = String(decoding: plantOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            .split(separator: "\n").filter { $0.hasPrefix("plant ") }
        plant.waitUntilExit()
        // Before the kill the inverter delivered droop; the last write armed a 10 s revert timer.
        let delivering = lines.firstIndex { $0.contains("SP +4.0kW P +4.0kW") }
        #expect(delivering != nil, "\(lines)")
        // It reverted on its own afterwards, to zero power, and not at once: the setpoint was held
        // for a while after the kill.
        let after = lines[(delivering ?? 0)...]
        let reverted = after.firstIndex { $0.contains("reverted") }
        #expect(reverted != nil, "\(lines.suffix(5))")
        if let delivering, let reverted { #expect(reverted - delivering >= 5) }
        #expect(lines.last?.contains("SP 0.0kW P 0.0kW") == true, "\(lines.suffix(3))")
    }
}
