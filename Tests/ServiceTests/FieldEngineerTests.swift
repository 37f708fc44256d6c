import BessSystem
import Config
import ControlProtocol
import Foundation
import Glibc
@testable import Service
import TestSupport
import Testing

/// What a field engineer hit following the docs (issue 44): two controllers on one site, a secret
/// in the support bundle, a wrong inverter address the journal recipes could not find, replies that
/// said what did not happen.
@Suite("Field engineer findings", .serialized)
struct FieldEngineerTests {
    /// A loopback TCP port nothing listens on (bound, read, closed).
    static func closedPort() -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, 16) } }
        var length = socklen_t(16)
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs `bessd run` to its end (it is expected to refuse to start) and returns status and output.
    static func runToEnd(_ configPath: String) throws -> (status: Int32, out: String) {
        let run = try Package.run("bessd", ["run", "--config", configPath, "--status-every", "0", "--log", "stdout", "--duration", "20"])
        return (run.status, run.out + run.err)
    }

    /// The refusal names the first's PID; a live control socket is refused CONTROL_SOCKET_IN_USE and stays the first's.
    @Test("a second daemon on the same state directory is refused (ALREADY_RUNNING); SIGKILL does not block")
    func oneControllerPerSite() throws {
        let first = try RunningDaemon(yaml: daemonYAML)
        _ = first.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(FileManager.default.fileExists(atPath: first.stateDirectory + "/bessd.lock"))

        // The same configuration by hand, "to see the output": refused before it touches anything.
        let second = try Self.runToEnd(first.configPath)
        #expect(second.status == 3, "\(second.out)")
        #expect(second.out.contains("ALREADY_RUNNING"), "\(second.out)")
        #expect(second.out.contains("pid \(first.process.processIdentifier)"), "\(second.out)")
        // Another state directory but the first one's control socket: refused, and the socket stays.
        let other = first.directory + "/other.yaml"
        try daemonYAML.replacingOccurrences(of: "@SOCKET@", with: first.socket)
            .appending("\nstate_directory: \(first.directory)/other-state\n")
            .write(toFile: other, atomically: true, encoding: .utf8)
        let third = try Self.runToEnd(other)
        #expect(third.status == 3, "\(third.out)")
        #expect(third.out.contains("CONTROL_SOCKET_IN_USE"), "\(third.out)")
        #expect(third.out.contains("pid \(first.process.processIdentifier)"), "\(third.out)")
        // The first still answers on its socket: the refused ones deleted nothing.
        #expect((try? first.request(["verb": "status"]))?["ok"] as? Bool == true)
        let standby = try Package.run("bessctl", ["mode", "standby", "--socket", first.socket])
        #expect(standby.status == 0, "\(standby.err)")

        // A crash leaves the lock file and the socket file behind; neither blocks the restart.
        first.signal(SIGKILL)
        _ = first.finish()
        #expect(FileManager.default.fileExists(atPath: first.socket))
        let restarted = try RunningDaemon(yaml: daemonYAML, directory: first.directory)
        let ready = restarted.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(ready.contains { $0.contains("READY=1") })
        #expect((try? restarted.request(["verb": "status"]))?["ok"] as? Bool == true)
        restarted.signal(SIGTERM)
        let (status, text) = restarted.finish()
        #expect(status == 0, "\(text.suffix(600))")
        // A clean stop leaves no socket behind.
        #expect(!FileManager.default.fileExists(atPath: restarted.socket))
        try? FileManager.default.removeItem(atPath: first.directory)
    }

    /// status, status --json, metrics, every file of the support bundle, the journal lines.
    @Test("a password in the aggregator URL appears in no output")
    func noSecretLeaves() throws {
        let yaml = daemonYAML + """

            aggregator:
              url: http://gwuser:S3cretPass@127.0.0.1:\(Self.closedPort())/
              site_id: leak-test
              interval_s: 1
            """
        let daemon = try RunningDaemon(yaml: yaml)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        var outputs: [(String, String)] = []
        let status = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        outputs.append(("status", status.out + status.err))
        let json = try Package.run("bessctl", ["status", "--json", "--socket", daemon.socket])
        outputs.append(("status --json", json.out))
        #expect(json.out.contains("<redacted>@127.0.0.1"), "\(json.out)")
        outputs.append(("metrics", (try daemon.request(["verb": "metrics"]))["text"] as? String ?? ""))
        let bundle = daemon.directory + "/bundle.tar.gz"
        #expect(try Package.run("bessctl", ["diag", "--socket", daemon.socket, "--output", bundle]).status == 0)
        let extract = daemon.directory + "/extract"
        try FileManager.default.createDirectory(atPath: extract, withIntermediateDirectories: true)
        #expect(try Package.tool(["tar", "-xzf", bundle, "-C", extract]).status == 0)
        let files = FileManager.default.enumerator(atPath: extract)?.compactMap { $0 as? String } ?? []
        #expect(files.contains { $0.hasSuffix("status.json") } && files.contains { $0.hasSuffix("spool.json") })
        for file in files {
            outputs.append((file, (try? String(contentsOfFile: extract + "/" + file, encoding: .utf8)) ?? ""))
        }
        daemon.signal(SIGTERM)
        outputs.append(("journal lines", daemon.finish().text))
        for (name, text) in outputs {
            #expect(!text.contains("S3cretPass") && !text.contains("gwuser"), "the secret is in \(name):\n\(text.prefix(2000))")
        }
    }

    /// Warning with BESS_UNIT and MESSAGE_ID; the unit is not running through its 30 s grace; the stop line says the zero was not acknowledged; mode changes are found by BESS_UNIT.
    @Test("a wrong inverter address is MODBUS_CONNECT_FAILED in the journal and keeps the unit out of running")
    func wrongInverterAddress() throws {
        let journal = try TestJournal()
        let unit = "ADDR\(getpid())"
        let yaml = """
            mode: hil
            period_ms: 100
            control_socket: @SOCKET@
            bess_units:
              - id: \(unit)
                capacity_kwh: 250
                max_power_kw: 100
                modbus: {host: 127.0.0.1, port: \(Self.closedPort()), timeout_ms: 200}
                inverter: {protocol: sunspec}
                bms: {simulated: true}
            grid_integration:
              mode: simulation
              frequency_source: inverter
            """
        let daemon = try RunningDaemon(yaml: yaml)
        let process = try daemon.rerunLoggingToJournal(seconds: 30)
        defer { if process.isRunning { process.terminate() } }

        // Not `running` while its inverter has never answered: the grace ends at the failure.
        var state = ""
        let leftRunning = waitFor(seconds: 15) {
            let status = try? ControlClient.request(["verb": "status"], socket: daemon.socket)
            let units = status?["units"] as? [[String: Any]]
            state = units?.first?["state"] as? String ?? ""
            return (units?.first?["trips"] as? [String])?.contains("INVERTER_COMM_LOST") == true
        }
        #expect(leftRunning, "state \(state)")
        #expect(state != "running")
        // Who put the unit in standby, by unit: the unit's own and the site's.
        #expect(try Package.run("bessctl", ["mode", "standby", "--unit", unit, "--socket", daemon.socket]).status == 0)
        #expect(try Package.run("bessctl", ["mode", "standby", "--socket", daemon.socket]).status == 0)
        process.terminate()
        process.waitUntilExit()
        #expect(waitFor(seconds: 10) {
            (try? journal.query(["-t", "bessd", "MESSAGE_ID=\(MessageID.lifecycle)", "BESS_CODE=STOP_ZERO_UNCONFIRMED",
                                 "BESS_UNIT=\(unit)", "-o", "cat"]))?.contains("bessd stopped") == true
        })

        let failed = try journal.query(["-t", "bessd", "BESS_CODE=MODBUS_CONNECT_FAILED", "BESS_UNIT=\(unit)", "-p", "warning", "-o", "json"])
        let entries = failed.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(entries.contains { $0["PRIORITY"] as? String == "4" && $0["MESSAGE_ID"] as? String == MessageID.device },
                "\(failed)")
        let modes = try journal.query(["-t", "bessd", "MESSAGE_ID=\(MessageID.mode)", "BESS_UNIT=\(unit)", "-o", "cat"])
        #expect(modes.contains("mode standby for \(unit)"), "\(modes)")
        #expect(modes.contains("mode standby for the site"), "\(modes)")
        let stop = try journal.query(["-t", "bessd", "MESSAGE_ID=\(MessageID.lifecycle)", "BESS_UNIT=\(unit)", "-o", "cat"])
        #expect(stop.contains("the zero setpoint was not acknowledged by \(unit)"), "\(stop)")
        #expect(!stop.contains("zero setpoints written with revert armed"), "\(stop)")
        withExtendedLifetime(journal) {}
    }

    @Test("site mode auto names a unit its own standby keeps, instead of answering every unit")
    func modeAutoSaysWhatHolds() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        #expect(try Package.run("bessctl", ["mode", "standby", "--unit", "D2", "--socket", daemon.socket]).status == 0)
        let auto = try Package.run("bessctl", ["mode", "auto", "--socket", daemon.socket])
        #expect(auto.status == 0, "\(auto.err)")
        #expect(!auto.out.contains("every unit"), "\(auto.out)")
        #expect(auto.out.contains("still in standby:") && auto.out.contains("D2: its own operator standby"), "\(auto.out)")
        let answer = try daemon.request(["verb": "mode", "mode": "auto"])
        let held = answer["still_standby"] as? [[String: Any]] ?? []
        #expect(held.count == 1 && held.first?["unit"] as? String == "D2" && held.first?["held_by"] as? String == "operator")
        #expect(try Package.run("bessctl", ["mode", "auto", "--unit", "D2", "--socket", daemon.socket]).status == 0)
        let clear = try Package.run("bessctl", ["mode", "auto", "--socket", daemon.socket])
        #expect(clear.out.contains("every unit in auto"), "\(clear.out)")
        daemon.signal(SIGTERM)
        let (status, text) = daemon.finish()
        #expect(status == 0)
        // A simulated site's inverters all take the zero: the stop line says so.
        #expect(text.contains("zero setpoints written with revert armed"), "\(text.suffix(400))")
    }

    @Test("one redaction for every output: URL credentials anywhere, keys naming secrets in a configuration")
    func redactionRules() {
        #expect(Redaction.urlCredentials(in: "uplink: POST http://u:p@h:8/v1 failed; also mqtts://a:b@c") == "uplink: POST http://<redacted>@h:8/v1 failed; also mqtts://<redacted>@c")
        #expect(Redaction.urlCredentials(in: "https://host/path?x=a@b") == "https://host/path?x=a@b")
        #expect(Redaction.urlCredentials(in: "no url here") == "no url here")
        let config = ConfigRedaction.text("url: https://site7:hunter2@agg/v1\npassword: swordfish\npassword_file: /etc/p")
        #expect(!config.contains("hunter2") && !config.contains("site7") && !config.contains("swordfish"))
        #expect(config.contains("password_file: /etc/p"))
    }
}
