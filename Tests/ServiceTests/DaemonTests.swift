import BessSystem
import ControlCore
import ControlProtocol
import Foundation
import Glibc
@testable import Service
@testable import Cycle
@testable import Config
import TestSupport
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
        let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
        while SystemClock.shared.now() < end {
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
    let keepDirectory: Bool
    var socket: String { directory + "/control.sock" }
    var stateDirectory: String { directory + "/state" }
    var configPath: String { directory + "/bessd.yaml" }

    /// - Parameter directory: where the socket, the configuration and (unless the YAML names one)
    ///   the state directory live; a new one by default. Pass a previous daemon's to restart "the same site".
    init(yaml: String, watchdogUsec: Int? = nil, extra: [String] = [], prefix: [String] = [], directory given: String? = nil) throws {
        directory = given ?? NSTemporaryDirectory() + "bessd-daemon-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        keepDirectory = given != nil
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        var text = yaml.replacingOccurrences(of: "@SOCKET@", with: directory + "/control.sock")
        // Never the gateway's /var/lib/bessd: latches persist there across runs.
        if !text.contains("state_directory:") { text += "\nstate_directory: \(directory)/state\n" }
        try text.write(toFile: directory + "/bessd.yaml", atomically: true, encoding: .utf8)
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

    /// SIGHUP, then waits for the notify socket's RELOADING=1 and a READY=1 after it. Whether the
    /// reload finished, and what the socket said.
    func reloadAndWait(seconds: Double = 20) -> (finished: Bool, said: [String]) {
        signal(SIGHUP)
        var reloading = false
        let said = notify.collect(seconds: seconds) { message in
            if message.contains("RELOADING=1") { reloading = true }
            return reloading && message.hasPrefix("READY=1")
        }
        return (reloading && said.last?.hasPrefix("READY=1") == true, said)
    }

    /// Stops this daemon (it logs to stdout) and runs bessd on the same configuration logging to the
    /// journal for at most `seconds`: for tests that read what journalctl finds.
    func rerunLoggingToJournal(seconds: Int) throws -> Process {
        signal(SIGKILL)
        _ = finish()
        let journaled = Process()
        journaled.executableURL = Package.executable("bessd")
        journaled.arguments = ["run", "--config", configPath, "--status-every", "0", "--log", "journal", "--duration", "\(seconds)"]
        journaled.standardOutput = FileHandle.nullDevice
        try journaled.run()
        return journaled
    }

    /// Waits for exit and returns the status and everything it printed.
    func finish() -> (status: Int32, text: String) {
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        if !keepDirectory { try? FileManager.default.removeItem(atPath: directory) }
    }

    func request(_ object: [String: Any]) throws -> [String: Any] { try ControlClient.request(object, socket: socket) }

    /// The status of every unit.
    /// The status of every unit. A missing answer gives empty entries for the two units of
    /// `daemonYAML`, so a test indexing them records a failure instead of crashing the test process.
    func units() throws -> [[String: Any]] {
        let list = try request(["verb": "status"])["units"] as? [[String: Any]] ?? []
        return list.count >= 2 ? list : list + Array(repeating: [:], count: 2 - list.count)
    }

    /// Polls status until `condition` holds (at most `seconds`); returns the last units seen.
    @discardableResult
    func waitForUnits(seconds: Double = 10, _ condition: ([[String: Any]]) -> Bool) throws -> [[String: Any]] {
        var last: [[String: Any]] = [[:], [:]]
        _ = waitFor(seconds: seconds) {
            guard let units = try? units() else { return false }
            last = units
            return condition(last)
        }
        return last
    }
}

/// The latched codes of a status entry.
func latched(_ unit: [String: Any]) -> [String] { unit["latched"] as? [String] ?? [] }

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
    /// A stalled cycle is in ServiceThreadsTests.
    @Test("systemd notify: READY, STATUS, WATCHDOG; SIGTERM stops services in reverse order and exits 0")
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
        // The stop order (ServiceGroup): watchdog first; the cycle, then the workers' zero; the
        // journal; no uplink in this configuration.
        // (The line form ends with the journal's fields: nothing stopped after the journal.)
        #expect(text.contains("stopped in order: watchdog → operator server → cycle → bus workers → journal  ["), "\(text.suffix(400))")
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
        // −30 kW requested; droop at 49.8 Hz stays on top of the latched base; limits ramp: the setpoint heads to −30 + 4.
        let after = try daemon.waitForUnits { (($0[0]["setpoint_w"] as? NSNumber)?.doubleValue ?? 0) < -5_000 }
        let setpoint = (after[0]["setpoint_w"] as? NSNumber)?.doubleValue ?? 0
        #expect(setpoint < -5_000)
        #expect(after[0]["override"] != nil)

        let standby = try Package.run("bessctl", ["mode", "standby", "--unit", "D2", "--socket", daemon.socket])
        #expect(standby.status == 0)
        let d2 = try daemon.waitForUnits { $0[1]["state"] as? String == "standby" }[1]
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

    @Test("typed replies: each verb's answer decodes as its reply; /metrics counts answers and their cost")
    func typedReplies() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        func ask<R: ControlReply>(_ request: ControlRequest, _ type: R.Type) throws -> R {
            let answer = try ControlClient.answer(request, socket: daemon.socket)
            #expect(answer.refusal == nil, "\(request.verb): \(String(decoding: answer.bytes, as: UTF8.self))")
            #expect(JSONTextTests.keysInOrder(answer.bytes), "\(request.verb): keys out of order")
            return try answer.reply(as: type)
        }
        let status = try ask(ControlRequest(.status), StatusReply.self)
        #expect(status.units.map(\.id) == ["D1", "D2"])
        #expect(status.cycle.periodMs == 50 && status.uplink == nil && status.mode == "simulation")
        #expect(try ask(ControlRequest(.faults), FaultsReply.self).faults.isEmpty)
        let events = try ask(ControlRequest(.events), EventsReply.self)
        #expect(events.events.isEmpty && events.total == 0 && events.kept == 100)
        let site = try ask(ControlRequest(.site), SiteReply.self)
        #expect(site.units.map(\.id) == ["D1", "D2"] && !site.meter.configured)
        #expect(try ask(ControlRequest(.config), ConfigReply.self).text.contains("id: D2"))
        #expect(try ask(ControlRequest(.mode, unit: "D2", mode: "standby"), ModeReply.self).units == ["D2"])
        #expect(try ask(ControlRequest(.mode, unit: "D2", mode: "auto"), ModeReply.self).stillStandby.isEmpty)
        let override = try ask(ControlRequest(.override, unit: "D1", powerKW: -10, forSeconds: 60), OverrideReply.self)
        #expect(override.unit == "D1" && override.powerKW == -10 && override.forS == 60)
        #expect(try ask(ControlRequest(.override, unit: "D1", clear: true), OverrideReply.self).unit == nil)
        #expect(try ask(ControlRequest(.reset), ResetReply.self).refused.isEmpty)
        let refused = try ControlClient.answer(ControlRequest(.reset, unit: "D9"), socket: daemon.socket)
        #expect(refused.refusal?.code == "UNKNOWN_UNIT")
        let metrics = try ask(ControlRequest(.metrics), MetricsReply.self).text
        #expect(metrics.contains("bessd_control_answers_total{verb=\"status\"} 1.0"), "\(metrics.suffix(1500))")
        #expect(metrics.contains("bessd_control_answers_total{verb=\"mode\"} 2.0"))
        let cost = metrics.split(separator: "\n").first { $0.hasPrefix("bessd_control_answer_cpu_seconds_total{verb=\"status\"} ") }
        let seconds = cost.flatMap { Double($0.split(separator: " ").last ?? "") } ?? 0
        #expect(seconds > 0, "the status answer's CPU time is measured: \(cost ?? "absent")")
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }

    @Test("SIGHUP: a good file is applied, a bad one refused with its errors while the old one keeps running")
    func reload() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // Good: droop 10 % (half the response).
        try daemonYAML.replacingOccurrences(of: "@SOCKET@", with: daemon.socket)
            .appending("\ngrid_integration: {droop_settings: {droop_percent: 10.0, response_time_s: 0}}\n")
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        // Before: 5 % droop at 49.8 Hz (0.1 Hz past the edge) gives +4 kW per 100 kW unit.
        let before = try daemon.waitForUnits(seconds: 20) { abs((($0[0]["droop_w"] as? NSNumber)?.doubleValue ?? 0) - 4_000) < 100 }
        #expect(abs(((before[0]["droop_w"] as? NSNumber)?.doubleValue ?? 0) - 4_000) < 100)
        daemon.signal(SIGHUP)
        let good = daemon.notify.collect(seconds: 5) { $0.hasPrefix("READY=1") }
        #expect(good.contains("RELOADING=1"))
        // After: 10 % droop gives half, +2 kW, with no lag (response_time_s: 0).
        let halved = try daemon.waitForUnits { abs((($0[0]["droop_w"] as? NSNumber)?.doubleValue ?? 0) - 2_000) < 100 }
        #expect(abs(((halved[0]["droop_w"] as? NSNumber)?.doubleValue ?? 0) - 2_000) < 100)
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

    /// REALTIME_RESTART_NEEDED.
    @Test("realtime: the journal names the cycle's CPU; a realtime.cpu reload waits for restart",
          .enabled(if: CurrentThread.allowedCPUs().count >= 2, "needs two CPUs to see a move"))
    func realtimeReload() throws {
        let allowed = CurrentThread.allowedCPUs()
        let first = allowed.first!
        let yaml = daemonYAML + "\nrealtime: {priority: 20, lock_memory: false, cpu: \(first)}\n"
        let daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        // The kernel's view: the CPUs of the daemon's thread named bessd-cycle (a new one after a reload).
        let pid = daemon.process.processIdentifier
        func cycleCPUs() -> String? {
            let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
            for task in tasks {
                guard let comm = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/comm", encoding: .utf8),
                      comm.trimmingCharacters(in: .whitespacesAndNewlines) == "bessd-cycle",
                      let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8),
                      let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
                else { continue }
                return line.dropFirst("Cpus_allowed_list:".count).trimmingCharacters(in: .whitespaces)
            }
            return nil
        }
        #expect(waitFor { cycleCPUs() == "\(first)" }, "\(cycleCPUs() ?? "no bessd-cycle thread")")
        func cycles() -> Int { (((try? daemon.request(["verb": "status"]))?["cycle"] as? [String: Any])?["cycles"] as? NSNumber)?.intValue ?? 0 }
        let cyclesBefore = cycles()
        // Unpinned in the new file: the running cycle must not move (its workers could not).
        try yaml.replacingOccurrences(of: "@SOCKET@", with: daemon.socket).replacingOccurrences(of: "cpu: \(first)", with: "cpu: none")
            .write(toFile: daemon.configPath, atomically: true, encoding: .utf8)
        daemon.signal(SIGHUP)
        _ = daemon.notify.collect(seconds: 5) { $0.hasPrefix("READY=1") }
        // The replacing cycle runs (more cycles) and is where the first one was.
        #expect(waitFor { cycles() > cyclesBefore + 5 })
        #expect(cycleCPUs() == "\(first)")
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        #expect(text.contains("real-time: the cycle SCHED_FIFO 20, its bus and CAN workers 19, all on CPU \(first)"), "\(text.prefix(2000))")
        #expect(text.contains("reload: realtime changed; restart bessd to apply; until then the cycle and its bus and CAN workers keep their priority and CPU"))
        #expect(text.contains("reload applied"))
    }

    @Test("a reload whose cycle thread is refused SCHED_FIFO journals REALTIME_DEGRADED, as a start does",
          .enabled(if: getuid() == 0 && geteuid() == 0, "drops CAP_SYS_NICE with setpriv"))
    func realtimeRefusedOnReload() throws {
        // Without CAP_SYS_NICE and with RLIMIT_RTPRIO 0, SCHED_FIFO is refused to the first cycle
        // thread and to the one a reload starts.
        let yaml = daemonYAML + "\nrealtime: {priority: 20, lock_memory: false, cpu: none}\n"
        let daemon = try RunningDaemon(yaml: yaml, prefix: ["/usr/bin/prlimit", "--rtprio=0", "--",
                                                            "/usr/bin/setpriv", "--inh-caps=-sys_nice", "--bounding-set=-sys_nice", "--"])
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        func cycles() -> Int { (((try? daemon.request(["verb": "status"]))?["cycle"] as? [String: Any])?["cycles"] as? NSNumber)?.intValue ?? 0 }
        let before = cycles()
        daemon.signal(SIGHUP)
        _ = daemon.notify.collect(seconds: 5) { $0.hasPrefix("READY=1") }
        #expect(waitFor { cycles() > before + 5 })
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        let refusal = "REALTIME_DEGRADED: SCHED_FIFO 20 refused (Operation not permitted); the cycle runs SCHED_OTHER"
        let reloadAt = try #require(text.range(of: "reload applied"), "\(text.suffix(2000))")
        // At start, as before.
        #expect(text[..<reloadAt.lowerBound].contains(refusal), "\(text.prefix(3000))")
        #expect(text.contains("real-time: the cycle SCHED_FIFO 20, its bus and CAN workers 19, not pinned, except as REALTIME_DEGRADED says"))
        // After the reload, the replacing cycle thread's own refusal: before, the journal said nothing.
        #expect(text[reloadAt.upperBound...].contains("reload: " + refusal), "\(text.suffix(2000))")
    }

    @Test("a 10 ms period runs: cycles counted, lateness measured, no overrun storm")
    func tenMilliseconds() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML.replacingOccurrences(of: "period_ms: 50", with: "period_ms: 10"))
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        var cycle: [String: Any] = [:]
        #expect(waitFor(seconds: 10) {
            cycle = ((try? daemon.request(["verb": "status"]))?["cycle"] as? [String: Any]) ?? [:]
            return ((cycle["cycles"] as? NSNumber)?.intValue ?? 0) >= 150  // about 100 per second
        })
        #expect(cycle["period_ms"] as? Int == 10)
        let cycles = (cycle["cycles"] as? NSNumber)?.intValue ?? 0
        let overruns = (cycle["overruns"] as? NSNumber)?.intValue ?? .max
        #expect(overruns * 10 < cycles)
        let p99 = (cycle["jitter_p99_us"] as? NSNumber)?.intValue ?? -1
        let max = (cycle["jitter_max_us"] as? NSNumber)?.intValue ?? -1
        #expect(p99 >= 0 && max >= p99)
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
        // Telemetry every 0.5 s: let the daemon run 100 cycles of 50 ms (5 s, about ten of them). The
        // spool is opened only after bessd has stopped: opening it recovers it (cuts a torn tail), which
        // a live writer's half-written record would be to a second opener.
        let ran = waitFor(seconds: 30) {
            ((try? daemon.request(["verb": "status"])["cycle"] as? [String: Any])?["cycles"] as? Int ?? 0) >= 100
        }
        #expect(ran)
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
        let spool = try Spool(directory: state + "/spool")
        let records = try spool.records(after: 0, limit: 1000)
        #expect(records.map(\.seq) == Array(1...UInt64(records.count)))
        let decoded = try records.map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0.payload)) }
        #expect(zip(decoded, records).allSatisfy { $0.seq == $1.seq })
        let telemetry = decoded.compactMap { record -> [UnitTelemetry]? in
            if case .telemetry(_, _, _, let units, _) = record.body { return units }
            return nil
        }
        #expect(telemetry.count >= 8, "\(telemetry.count) telemetry records in 5 s")  // every 0.5 s
        #expect(telemetry.last?.map(\.id) == ["D1", "D2"])
        #expect(telemetry.last?.first?.bmsOnline == true)
        #expect(decoded.contains { if case .availability = $0.body { return true } else { return false } })
        #expect(decoded.contains { if case .event(_, "stateChanged", _, _) = $0.body { return true } else { return false } })
    }

    // MARK: latches survive restarts (issue 10, part 2)

    static let latchingYAML = daemonYAML.replacingOccurrences(of: "simulation: {frequency_profile: steady, base_hz: 49.8}", with: """
        simulation:
          frequency_profile: steady
          base_hz: 49.8
          faults:
            - {kind: bms_values, unit: D1, at_s: 0, duration_s: 3, bms: {protections: [system_error]}}
        """)

    @Test("a latch persists across SIGKILL restart, restored before the first setpoint; a reset persists too")
    func latchAcrossRestart() throws {
        #expect(Self.latchingYAML.contains("system_error"))
        let directory = NSTemporaryDirectory() + "bessd-latch-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var first: RunningDaemon? = try RunningDaemon(yaml: Self.latchingYAML, directory: directory)
        let latchedNow = try first!.waitForUnits { latched($0[0]).contains("BMS_CRITICAL") }
        #expect(latched(latchedNow[0]) == ["BMS_CRITICAL"])
        #expect(latched(latchedNow[1]).isEmpty)
        // Written at once: the file names the latch before anything else happens.
        let file = directory + "/state/latches.json"
        #expect(waitFor { (try? String(contentsOfFile: file, encoding: .utf8))?.contains("\"BMS_CRITICAL\"") ?? false })
        first!.signal(SIGKILL)
        _ = first!.finish()
        first = nil

        // Restart without the fault: the very first status already holds the latch at zero power.
        let second = try RunningDaemon(yaml: daemonYAML, directory: directory)
        _ = second.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let restored = try second.units()
        #expect(latched(restored[0]) == ["BMS_CRITICAL"])
        #expect((restored[0]["setpoint_w"] as? NSNumber)?.doubleValue == 0)
        #expect(restored[0]["state"] as? String != "running")
        #expect(latched(restored[1]).isEmpty)
        // The condition is gone, so the operator's reset clears it, and that persists too.
        let reset = try second.request(["verb": "reset", "unit": "D1"])
        #expect(reset["cleared"] as? [String] == ["D1:BMS_CRITICAL"])
        let cleared = try second.waitForUnits { latched($0[0]).isEmpty }
        #expect(latched(cleared[0]).isEmpty)
        #expect(waitFor { !((try? String(contentsOfFile: file, encoding: .utf8))?.contains("BMS_CRITICAL") ?? true) })
        second.signal(SIGTERM)
        let (_, text) = second.finish()
        #expect(text.contains("D1 BMS_CRITICAL still latched from an earlier run"))
    }

    @Test("an unreadable latch file starts every unit latched with LATCH_STATE_CORRUPT until a reset")
    func corruptLatchFile() throws {
        let directory = NSTemporaryDirectory() + "bessd-corrupt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory + "/state", withIntermediateDirectories: true)
        try "{\"format\": \"bessd-latches\", \"version\": 1, \"units\": {\"D1\": {\"THERMAL_RUN".write(
            toFile: directory + "/state/latches.json", atomically: true, encoding: .utf8)
        let daemon = try RunningDaemon(yaml: daemonYAML, directory: directory)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let units = try daemon.units()
        #expect(units.map(latched) == [["LATCH_STATE_CORRUPT"], ["LATCH_STATE_CORRUPT"]])
        #expect(units.allSatisfy { ($0["setpoint_w"] as? NSNumber)?.doubleValue == 0 })
        let reset = try daemon.request(["verb": "reset"])
        #expect(reset["cleared"] as? [String] == ["D1:LATCH_STATE_CORRUPT", "D2:LATCH_STATE_CORRUPT"])
        let after = try daemon.waitForUnits { $0.allSatisfy { latched($0).isEmpty } }
        #expect(after.allSatisfy { latched($0).isEmpty })
        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        #expect(text.contains("LATCH_STATE_CORRUPT"))
        let kept = try FileManager.default.contentsOfDirectory(atPath: directory + "/state").filter { $0.hasPrefix("latches.json.damaged-") }
        #expect(kept.count == 1)
    }

    // MARK: the operator outranks the remote (issue 10, part 3)

    @Test("a request naming a unit that does not exist is refused and changes nothing")
    func unknownUnits() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        _ = try daemon.request(["verb": "mode", "mode": "standby"])
        for unit: Any in [-1, "99999999999999999999", NSDecimalNumber(string: "99999999999999999999"), "NOPE", "", 0, true] {
            let mode = try daemon.request(["verb": "mode", "mode": "auto", "unit": unit])
            #expect(mode["code"] as? String == "UNKNOWN_UNIT", "\(unit)")
            let reset = try daemon.request(["verb": "reset", "unit": unit])
            #expect(reset["code"] as? String == "UNKNOWN_UNIT", "\(unit)")
            let override = try daemon.request(["verb": "override", "unit": unit, "power_kw": 1, "for_s": 60])
            #expect(override["code"] as? String == "UNKNOWN_UNIT", "\(unit)")
        }
        // Every unit is still in the operator's standby.
        let units = try daemon.units()
        #expect(units.allSatisfy { $0["mode"] as? String == "standby" && $0["held_by"] as? String == "operator_site" })
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }

    @Test("status says who holds each unit: JSON held_by, and the table's standby (operator)")
    func heldBy() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        _ = try daemon.request(["verb": "mode", "mode": "standby", "unit": "D1"])
        _ = try daemon.request(["verb": "override", "unit": "D2", "power_kw": 5, "for_s": 600])
        let units = try daemon.units()
        #expect(units[0]["mode"] as? String == "standby")
        #expect(units[0]["held_by"] as? String == "operator")
        #expect(units[1]["mode"] as? String == "auto")
        #expect(units[1]["held_by"] as? String == "override")
        let until = (units[1]["held_until_unix"] as? NSNumber)?.doubleValue ?? 0
        #expect(abs(until - (Date().timeIntervalSince1970 + 600)) < 5)
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("standby (operator)"))
        #expect(table.out.contains("auto (override 5.0 kW until "))
        daemon.signal(SIGTERM)
        _ = daemon.finish()
    }

    // MARK: the watchdog tells the truth (issue 10, part 4)

    /// On the control socket and on /metrics.
    @Test("200 idle connections: status still answers within 1 s and WATCHDOG=1 keeps its cadence")
    func idleConnections() throws {
        let port = 20_000 + Int(getpid() % 20_000)
        let daemon = try RunningDaemon(yaml: daemonYAML + "\nmetrics_listen: 127.0.0.1:\(port)\n", watchdogUsec: 1_000_000)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        var idle: [Int32] = []
        defer { for fd in idle { close(fd) } }
        for _ in 0..<200 {
            let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { b in for (i, c) in daemon.socket.utf8.enumerated() { b[i] = c } }
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
            #expect(rc == 0, "control connect: \(String(cString: strerror(errno)))")
            idle.append(fd)
        }
        for _ in 0..<200 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = UInt16(port).bigEndian
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            #expect(rc == 0, "metrics connect: \(String(cString: strerror(errno)))")
            idle.append(fd)
        }
        // Answers within the client's 1 s deadline, while every idle connection is still open.
        for _ in 0..<5 {
            let status = try ControlClient.request(["verb": "status"], socket: daemon.socket, timeout: .seconds(1))
            #expect(status["ok"] as? Bool == true)
        }
        // WATCHDOG=1 every WATCHDOG_USEC/2, with no gap above 0.6 × WATCHDOG_USEC, over 3 s.
        var stamps: [Date] = []
        let end = Date().addingTimeInterval(3)
        while Date() < end {
            stamps += daemon.notify.collect(seconds: 0.05) { $0 == "WATCHDOG=1" }.filter { $0 == "WATCHDOG=1" }.map { _ in Date() }
        }
        #expect(stamps.count >= 5)
        let gaps = zip(stamps.dropFirst(), stamps).map { $0.timeIntervalSince($1) }
        #expect(gaps.allSatisfy { $0 <= 0.6 }, "gaps: \(gaps)")
        daemon.signal(SIGTERM)
        #expect(daemon.finish().status == 0)
    }

    // MARK: the site at its connection point (issue 11)

    /// Grid power + = import; METER_STALE shows.
    @Test("bessctl site: grid power, binding limit, application and unit shares; /metrics and faults agree")
    func siteVerb() throws {
        let port = 20_000 + Int((getpid() + 7) % 20_000)
        let yaml = daemonYAML.replacingOccurrences(of: "simulation: {frequency_profile: steady, base_hz: 49.8}", with: """
            simulation:
              frequency_profile: steady
              base_hz: 50.0
              load: {base_kw: 260}
              faults:
                - {kind: meter_silence, at_s: 12}
            site:
              meter: {protocol: sunspec}
              grid_limits: {import_max_kw: 230}
              application: peak_shaving
              peak_shaving: {import_max_kw: 200}
            metrics_listen: 127.0.0.1:\(port)
            """)
        let daemon = try RunningDaemon(yaml: yaml)
        var site: [String: Any] = [:]
        // Peak shaving holds import at 200 kW once the units run (both share the 60 kW).
        let shaved = waitFor(seconds: 10) {
            site = (try? daemon.request(["verb": "site"])) ?? [:]
            return (site["grid_power_w"] as? Double).map { abs($0 - 200_000) < 3_000 } ?? false
        }
        #expect(shaved, "site: \(site)")
        let application = site["application"] as? [String: Any] ?? [:]
        #expect(application["name"] as? String == "peak_shaving" && application["active"] as? Bool == true)
        let units = site["units"] as? [[String: Any]] ?? []
        #expect(units.count == 2 && units.allSatisfy { $0["share"] as? String == "headroom" })
        let limits = site["limits"] as? [String: Any] ?? [:]
        #expect(limits["import_max_w"] as? Double == 230_000)
        #expect(waitFor(seconds: 5) { metric(port, "bessd_site_grid_power_watts").map { abs($0 - 200_000) < 3_000 } ?? false })
        // The meter goes silent at 12 s: METER_STALE after 3 s; the application rests, the import
        // limit's floor (30 kW) holds.
        let stale = waitFor(seconds: 20) {
            let faults = (try? daemon.request(["verb": "faults"]))?["faults"] as? [[String: Any]] ?? []
            return faults.contains { $0["code"] as? String == "METER_STALE" && $0["unit"] as? String == "site" }
        }
        #expect(stale)
        site = (try? daemon.request(["verb": "site"])) ?? [:]
        #expect((site["meter"] as? [String: Any])?["stale"] as? Bool == true)
        #expect(site["grid_power_w"] is NSNull)
        let decision = site["decision"] as? [String: Any] ?? [:]
        #expect((decision["delivered_w"] as? Double).map { $0 > 29_000 && $0 < 31_000 } == true, "decision: \(decision)")
        daemon.signal(SIGTERM)
        let end = daemon.finish()
        #expect(end.status == 0)
        #expect(end.text.contains("METER_STALE"))
    }
}
