public import Foundation
import Glibc
import Synchronization

/// `hil/peers/pymodbus_sunspec_units.py`: several SunSpec inverters behind one pymodbus endpoint
/// (TCP, or RTU on a pty), each unit id with its own image. Its output is collected line by line.
public final class UnitsPeer: Sendable {
    /// The peer's process.
    public let process: Process
    final class Lines: Sendable { let list = Mutex<[String]>([]) }
    private let lines = Lines()
    /// The TCP port it serves (0 on a serial line).
    public let port: Int

    /// SunSpec inverters, one per entry of `units`, on TCP or on the serial `device`.
    public convenience init(_ units: [String], rtu device: String? = nil, seconds: Int = 60) throws {
        var arguments = ["python3", "hil/peers/pymodbus_sunspec_units.py", "--seconds", String(seconds)]
        if let device { arguments += ["--rtu", device, "--baud", "19200", "--parity", "N"] }
        try self.init(arguments: arguments + units)
    }

    /// Any peer of hil/peers that prints "PORT <n>" (or "READY") once it serves; `input` is its
    /// standard input (none when nil).
    public init(arguments: [String], input: Pipe? = nil) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.currentDirectoryURL = Package.root
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        process.standardInput = input ?? FileHandle.nullDevice
        try process.run()
        self.process = process
        let lines = self.lines
        Thread {
            var buffer = ""
            while true {
                let data = out.fileHandleForReading.availableData
                if data.isEmpty { return }
                buffer += String(decoding: data, as: UTF8.self)
                while let newline = buffer.firstIndex(of: "\n") {
                    let line = String(buffer[..<newline])
                    buffer.removeSubrange(...newline)
                    lines.list.withLock { $0.append(line) }
                }
            }
        }.start()
        var first: String?
        _ = waitFor(seconds: 20) {
            first = lines.list.withLock { $0.first { $0.hasPrefix("PORT ") || $0 == "READY" } }
            return first != nil
        }
        port = first.flatMap { Int($0.dropFirst(5)) } ?? 0
    }

    /// The start of a bessd configuration in `hil` mode at 100 ms whose units are this peer's unit ids
    /// 1…`count`, named `prefix`1…, 50 kW and 250 kWh each with a simulated BMS; the caller appends the
    /// rest (`grid_integration`, `simulation`, …). `@SOCKET@` is `RunningDaemon`'s.
    public func hilUnitsYAML(prefix: String, count: Int) -> String {
        var text = """
            mode: hil
            period_ms: 100
            control_socket: @SOCKET@
            bess_units:

            """
        for id in 1...count {
            text += """
                  - id: \(prefix)\(id)
                    capacity_kwh: 250
                    max_power_kw: 50
                    modbus: {host: 127.0.0.1, port: \(port), unit_id: \(id), timeout_ms: 500}
                    bms: {simulated: true}

                """
        }
        return text
    }

    /// Kills the peer and waits for it.
    public func stop() {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// Every line it printed so far.
    public var all: [String] { lines.list.withLock { $0 } }
    /// Whether it said it serves.
    public var ready: Bool { all.contains { $0.hasPrefix("PORT ") || $0 == "READY" } }
    /// The last line starting with `prefix`.
    public func last(_ prefix: String) -> String? { all.last { $0.hasPrefix(prefix) } }
    /// TCP sessions ever accepted (the last CONNECTIONS line).
    public var totalConnections: Int? {
        last("CONNECTIONS").flatMap { $0.split(separator: "=").last.flatMap { Int($0) } }
    }
}
