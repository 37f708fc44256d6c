import Foundation
import Glibc
@testable import Runtime
import Testing
import Uplink

/// A datagram socket standing in for systemd's notify socket.
final class NotifyListener {
    let path: String
    let fd: Int32

    init(path: String) {
        self.path = path
        unlink(path)
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { b in for (i, c) in path.utf8.enumerated() { b[i] = c } }
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
    }

    deinit {
        close(fd)
        unlink(path)
    }

    /// Messages received within `seconds`, stopping early once `until` accepts one.
    func collect(seconds: Double, until: ((String) -> Bool)? = nil) -> [String] {
        var messages: [String] = []
        let end = Date().addingTimeInterval(seconds)
        while Date() < end {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 100) > 0 else { continue }
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { continue }
            let message = String(decoding: buffer.prefix(n), as: UTF8.self)
            messages.append(message)
            if let until, until(message) { break }
        }
        return messages
    }
}

/// bessd run as a child process with its own configuration, control socket and notify socket.
final class RunningDaemon {
    let directory: String
    let process = Process()
    let output = Pipe()
    let notify: NotifyListener
    var socket: String { directory + "/control.sock" }
    var configPath: String { directory + "/bessd.yaml" }

    init(yaml: String, watchdogUsec: Int? = nil, extra: [String] = [], prefix: [String] = []) throws {
        directory = NSTemporaryDirectory() + "bessd-daemon-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try yaml.replacingOccurrences(of: "@SOCKET@", with: directory + "/control.sock")
            .write(toFile: directory + "/bessd.yaml", atomically: true, encoding: .utf8)
        notify = NotifyListener(path: directory + "/notify.sock")
        let command = [Package.executable("bessd")!.path, "run", "--config", configPath, "--status-every", "0", "--log", "stdout"] + extra
        if prefix.isEmpty {
            process.executableURL = Package.executable("bessd")
            process.arguments = Array(command.dropFirst())
        } else {
            process.executableURL = URL(fileURLWithPath: prefix[0])
            process.arguments = Array(prefix.dropFirst()) + command
        }
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = notify.path
        environment["WATCHDOG_USEC"] = watchdogUsec.map(String.init)
        environment.removeValue(forKey: "WATCHDOG_PID")
        process.environment = environment
        process.standardOutput = output
        process.standardError = output
        try process.run()
    }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for exit and returns the status and everything it printed.
    func finish() -> (status: Int32, text: String) {
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? FileManager.default.removeItem(atPath: directory)
    }

    func request(_ object: [String: Any]) throws -> [String: Any] { try ControlClient.request(object, socket: socket) }
}

let daemonYAML = """
    mode: simulation
    period_ms: 50
    control_socket: @SOCKET@
    bess_units:
      - {id: D1, capacity_kwh: 250, max_power_kw: 100}
      - {id: D2, capacity_kwh: 250, max_power_kw: 100}
    simulation: {frequency_profile: steady, base_hz: 49.8}
    """

@Suite("bessd under a stand-in systemd", .serialized)
struct DaemonTests {
    @Test("READY after start, STATUS lines, WATCHDOG only while cycling, STOPPING and exit 0 on SIGTERM")
    func notifyLifecycle() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML, watchdogUsec: 1_000_000)
        let first = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(first.contains { $0.hasPrefix("READY=1\nSTATUS=simulation: ") })
        let running = daemon.notify.collect(seconds: 2.2)
        #expect(running.filter { $0 == "WATCHDOG=1" }.count >= 3)  // every 0.5 s
        #expect(running.contains { $0.hasPrefix("STATUS=simulation: 2/2 units running") })
        daemon.signal(SIGTERM)
        let last = daemon.notify.collect(seconds: 5) { $0 == "STOPPING=1" }
        #expect(last.contains("STOPPING=1"))
        let (status, text) = daemon.finish()
        #expect(status == 0)
        #expect(text.contains("zero setpoints written with revert armed"))
    }

    @Test("bessctl against a running daemon: status, override inside the interlocks, mode, faults, bad requests")
    func bessctl() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let status = try daemon.request(["verb": "status"])
        #expect(status["ok"] as? Bool == true)
        let units = try #require(status["units"] as? [[String: Any]])
        #expect(units.compactMap { $0["id"] as? String } == ["D1", "D2"])
        for key in ["id", "state", "soc_percent", "power_w", "setpoint_w", "trips"] { #expect(units[0][key] != nil, "\(key)") }
        let cycle = try #require(status["cycle"] as? [String: Any])
        #expect(cycle["period_ms"] as? Int == 50)
        for key in ["overruns", "jitter_p99_us", "jitter_max_us"] { #expect(cycle[key] != nil) }

        // The CLI: a table, JSON, and refusals with a clear error and a non-zero exit.
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.status == 0)
        #expect(table.out.contains("UNIT") && table.out.contains("D1") && table.out.contains("running"))
        let noExpiry = try Package.run("bessctl", ["override", "--socket", daemon.socket, "--unit", "D1", "--power-kw", "20"])
        #expect(noExpiry.status != 0)
        #expect(noExpiry.err.contains("expiry"))
        let tooBig = try Package.run("bessctl", ["override", "--socket", daemon.socket, "--unit", "D1", "--power-kw", "500",
                                                 "--for", "1m"])
        #expect(tooBig.status == 2)
        #expect(tooBig.err.contains("BAD_REQUEST"))
        let unknown = try daemon.request(["verb": "explode"])
        #expect(unknown["code"] as? String == "BAD_REQUEST")

        let override = try Package.run("bessctl", ["override", "--socket", daemon.socket, "--unit", "D1", "--power-kw=-30",
                                                   "--for", "2m"])
        #expect(override.status == 0)
        usleep(1_500_000)
        let after = try #require(try daemon.request(["verb": "status"])["units"] as? [[String: Any]])
        // −30 kW requested; droop at 49.8 Hz stays on top of the latched base; limits ramp: the setpoint heads to −30 + 4.
        let setpoint = (after[0]["setpoint_w"] as? NSNumber)?.doubleValue ?? 0
        #expect(setpoint < -5_000)
        #expect(after[0]["override"] != nil)

        let standby = try Package.run("bessctl", ["mode", "standby", "--unit", "D2", "--socket", daemon.socket])
        #expect(standby.status == 0)
        usleep(300_000)
        let d2 = try #require(try daemon.request(["verb": "status"])["units"] as? [[String: Any]])[1]
        #expect(d2["state"] as? String == "standby")
        #expect((d2["setpoint_w"] as? NSNumber)?.doubleValue == 0)
        let faults = try Package.run("bessctl", ["faults", "--socket", daemon.socket])
        #expect(faults.out.contains("no active faults"))
        let reset = try Package.run("bessctl", ["reset", "D1", "--socket", daemon.socket])
        #expect(reset.status == 0)
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        // Each command is audited with the caller's uid.
        #expect(text.contains("bessctl (uid \(getuid())): override D1 to -30.0 kW for 120 s"))
        #expect(text.contains("bessctl (uid \(getuid())): mode standby for D2"))
        let missing = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(missing.status == 3)
        #expect(missing.err.contains("CONTROL_SOCKET_UNREACHABLE"))
    }

    @Test("SIGHUP: a good file is applied, a bad one refused with its errors while the old one keeps running")
    func reload() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // Good: droop 10 % (half the response).
        try daemonYAML.replacingOccurrences(of: "@SOCKET@", with: daemon.socket)
            .appending("\ngrid_integration: {droop_settings: {droop_percent: 10.0, response_time_s: 0}}\n")
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        let good = daemon.notify.collect(seconds: 5) { $0.hasPrefix("READY=1") }
        #expect(good.contains("RELOADING=1"))
        // Bad: a negative power.
        try daemonYAML.replacingOccurrences(of: "@SOCKET@", with: daemon.socket)
            .replacingOccurrences(of: "max_power_kw: 100}\n  - {id: D2", with: "max_power_kw: -100}\n  - {id: D2")
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = daemon.notify.collect(seconds: 5) { $0.hasPrefix("READY=1") }
        let status = try daemon.request(["verb": "status"])
        #expect(status["ok"] as? Bool == true)
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        #expect(text.contains("reload applied"))
        #expect(text.contains("reload refused: \(daemon.configPath):5: bess_units[0].max_power_kw: must be greater than 0"))
        #expect(text.contains("the running configuration stays"))
    }

    @Test("a 10 ms period runs: cycles counted, lateness measured, no overrun storm")
    func tenMilliseconds() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML.replacingOccurrences(of: "period_ms: 50", with: "period_ms: 10"))
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        usleep(2_000_000)
        let status = try daemon.request(["verb": "status"])
        let cycle = try #require(status["cycle"] as? [String: Any])
        #expect(cycle["period_ms"] as? Int == 10)
        let cycles = (cycle["cycles"] as? NSNumber)?.intValue ?? 0
        #expect(cycles >= 150)  // about 100 per second
        let overruns = (cycle["overruns"] as? NSNumber)?.intValue ?? .max
        #expect(overruns * 10 < cycles)
        #expect(cycle["jitter_max_us"] != nil)
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
    }

    @Test("with an aggregator configured, telemetry, availability and events go into the durable spool")
    func spoolRecords() throws {
        let yaml = daemonYAML + """

            state_directory: @STATE@
            aggregator: {url: "http://127.0.0.1:9/bess", interval_s: 0.5, site_id: HIL_SITE}
            """
        let state = NSTemporaryDirectory() + "bessd-state-\(getpid())"
        defer { try? FileManager.default.removeItem(atPath: state) }
        let daemon = try RunningDaemon(yaml: yaml.replacingOccurrences(of: "@STATE@", with: state))
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        usleep(2_500_000)
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
        let spool = try Spool(directory: state + "/spool")
        let records = try spool.records(after: 0, limit: 1000)
        #expect(records.map(\.seq) == Array(1...UInt64(records.count)))
        let decoded = try records.map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0.payload)) }
        #expect(zip(decoded, records).allSatisfy { $0.seq == $1.seq })
        let telemetry = decoded.compactMap { record -> [UnitTelemetry]? in
            if case .telemetry(_, _, _, let units) = record.body { return units }
            return nil
        }
        #expect(telemetry.count >= 4)  // every 0.5 s for about 2.5 s
        #expect(telemetry.last?.map(\.id) == ["D1", "D2"])
        #expect(telemetry.last?.first?.bmsOnline == true)
        #expect(decoded.contains { if case .availability = $0.body { return true } else { return false } })
        #expect(decoded.contains { if case .event(_, "stateChanged", _, _) = $0.body { return true } else { return false } })
    }
}
