import Foundation
import Glibc
import Testing

/// `bess-hil plant` and `bessd run` on the same rig file form a complete rig on one machine.
@Suite("Loopback rig, end to end", .serialized)
struct LoopbackRigTests {
    static func freePort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { p -> Int32 in
                _ = bind(fd, p, length)
                return getsockname(fd, p, &length)
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    @Test("the unit follows droop on the wire, and bessd's stop leaves the inverter at zero")
    func rig() throws {
        let template = try String(contentsOf: Package.root.appendingPathComponent("hil/rigs/loopback.yaml"), encoding: .utf8)
        let port = Self.freePort()
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
        usleep(500_000)
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
