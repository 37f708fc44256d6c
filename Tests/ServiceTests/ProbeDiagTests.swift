import Config
import ControlCore
import Fieldbus
import Foundation
import Glibc
import HILPlant
@testable import Service
import TestSupport
import Testing

/// `bessctl probe modbus` against independent SunSpec images (pymodbus, over TCP and RTU) and the
/// plant's own; `bessctl diag` against a running bessd.
@Suite("bessctl probe and diag", .serialized)
struct ProbeDiagTests {
    /// The block a probe printed, after its comment line, with the blanks filled.
    static func pasted(_ output: String) -> String {
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("# paste under") }) else { return "" }
        return lines[(start + 1)...].joined(separator: "\n").replacingOccurrences(of: "FILL_IN", with: "100")
    }

    static func checkConfig(_ yaml: String) throws -> (status: Int32, out: String, err: String) {
        let path = NSTemporaryDirectory() + "probe-\(UInt32.random(in: 0...UInt32.max)).yaml"
        try yaml.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try Package.run("bessd", ["check-config", path])
    }

    static let bms = "    bms:\n      interface: can_bms\n      protocol: pylontech\n"

    /// pymodbus: 704, 124, a meter and a 704 without WSet_SF.
    @Test("probe modbus over TCP: each pasted block passes check-config")
    func modbusTCP() throws {
        let peer = try UnitsPeer(["1", "2:124", "3:meter", "4:wsetsf=none"], seconds: 60)
        defer { peer.stop() }
        #expect(peer.port > 0)
        let address = "127.0.0.1:\(peer.port)"

        let p704 = try Package.run("bessctl", ["probe", "modbus", address, "--unit-id", "1"])
        #expect(p704.status == 0, "\(p704.out)\(p704.err)")
        #expect(p704.out.contains("SunSpec at 40000: models 1 (L 66 at 40002), 701"), "\(p704.out)")
        #expect(p704.out.contains("now: 1234 W"), "\(p704.out)")
        #expect(p704.out.contains("control path: 704 (WSet in W)"))
        #expect(p704.out.contains("revert timer: available"))
        let unit = Self.pasted(p704.out)
        #expect(unit.contains("      host: 127.0.0.1\n      port: \(peer.port)\n      unit_id: 1"), "\(unit)")
        let check = try Self.checkConfig("mode: hardware\nbess_units:\n" + unit + "\n" + Self.bms)
        #expect(check.status == 0, "pasted block refused: \(check.out)\(check.err)\n\(unit)")

        let p124 = try Package.run("bessctl", ["probe", "modbus", address, "--unit-id", "2"])
        #expect(p124.status == 0, "\(p124.out)\(p124.err)")
        #expect(p124.out.contains("control path: 124 (OutWRte/InWRte in % of WChaMax)"), "\(p124.out)")
        #expect(p124.out.contains("revert timer: available"))

        let meter = try Package.run("bessctl", ["probe", "modbus", address, "--unit-id", "3"])
        #expect(meter.status == 0, "\(meter.out)\(meter.err)")
        #expect(meter.out.contains("meter: model 203; now ") && meter.out.contains(" W (+ = import), 50.010 Hz"), "\(meter.out)")
        let site = Self.pasted(meter.out)
        let withMeter = try Self.checkConfig("mode: hardware\nsite:\n" + site + "\nbess_units:\n" + unit + "\n" + Self.bms)
        #expect(withMeter.status == 0, "pasted meter block refused: \(withMeter.out)\(withMeter.err)\n\(site)")

        let noSF = try Package.run("bessctl", ["probe", "modbus", address, "--unit-id", "4"])
        #expect(noSF.status == 1, "\(noSF.out)")
        #expect(noSF.out.contains("control path: none ("), "\(noSF.out)")
        #expect(!noSF.out.contains("# paste under"))

        let nobody = try Package.run("bessctl", ["probe", "modbus", "127.0.0.1:1"])
        #expect(nobody.status == 3, "\(nobody.out)")
    }

    @Test("probe modbus over RTU (pymodbus on a pty): the serial keys in the pasted block")
    func modbusRTU() throws {
        let directory = NSTemporaryDirectory() + "probe-rtu-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socat = try ptyPair(directory, "gateway", "device")
        defer {
            // SIGKILL, as the other pty tests: socat inherits the test thread's blocked signals, and a
            // SIGTERM left it running after every make check.
            kill(socat.processIdentifier, SIGKILL)
            socat.waitUntilExit()
        }
        #expect(waitFor(seconds: 5) { FileManager.default.fileExists(atPath: directory + "/device") })
        let peer = try UnitsPeer(["1"], rtu: directory + "/device", seconds: 60)
        defer { peer.stop() }
        #expect(peer.ready)
        let probe = try Package.run("bessctl", ["probe", "modbus", "--serial", directory + "/gateway", "--baud", "19200",
                                                "--parity", "none", "--unit-id", "1"])
        #expect(probe.status == 0, "\(probe.out)\(probe.err)")
        #expect(probe.out.contains("control path: 704"))
        #expect(Self.pasted(probe.out).contains("      device: \(directory)/gateway\n      baud: 19200\n      parity: none\n      unit_id: 1"),
                "\(probe.out)")
    }

    @Test("probe modbus against the plant's inverter image (103 + 124)")
    func plant() throws {
        let server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0),
                                       profile: SunSpecDeviceProfile(measurementModel: 103, controlModel: 124, ratingW: 30_000))
        try server.start()
        defer { server.stop() }
        let probe = try Package.run("bessctl", ["probe", "modbus", "127.0.0.1:\(server.port)"])
        #expect(probe.status == 0, "\(probe.out)\(probe.err)")
        #expect(probe.out.contains("nameplate: rated power 30000 W"), "\(probe.out)")
        #expect(probe.out.contains("control path: 124"))
        #expect(Self.pasted(probe.out).contains("    max_power_kw: 30\n"))
    }

    /// They talk to no bessd.
    @Test("--socket before or after the verb: codes and probe take it like every verb")
    func socketAfterEveryVerb() throws {
        for arguments in [["codes", "--socket", "/tmp/bessctl-none.sock", "THERMAL_RUNAWAY"],
                          ["codes", "THERMAL_RUNAWAY", "--socket=/tmp/bessctl-none.sock"],
                          ["--socket", "/tmp/bessctl-none.sock", "codes", "THERMAL_RUNAWAY"],
                          ["codes", "THERMAL_RUNAWAY", "--markdown", "--socket", "/tmp/bessctl-none.sock"]] {
            let codes = try Package.run("bessctl", arguments)
            #expect(codes.status == 0, "\(arguments): \(codes.err)")
            #expect(codes.out.contains("THERMAL_RUNAWAY"), "\(arguments): \(codes.out)")
        }
        let server = try SunSpecServer(transport: .tcp(host: "127.0.0.1", port: 0),
                                       profile: SunSpecDeviceProfile(measurementModel: 103, controlModel: 124, ratingW: 30_000))
        try server.start()
        defer { server.stop() }
        for arguments in [["probe", "modbus", "--socket", "/tmp/bessctl-none.sock", "127.0.0.1:\(server.port)"],
                          ["probe", "modbus", "127.0.0.1:\(server.port)", "--socket=/tmp/bessctl-none.sock"],
                          ["--socket", "/tmp/bessctl-none.sock", "probe", "modbus", "127.0.0.1:\(server.port)"],
                          ["probe", "--socket", "/tmp/bessctl-none.sock", "modbus", "127.0.0.1:\(server.port)"]] {
            let probe = try Package.run("bessctl", arguments)
            #expect(probe.status == 0, "\(arguments): \(probe.out)\(probe.err)")
            #expect(probe.out.contains("control path: 124"), "\(arguments): \(probe.out)")
        }
        // probe can parses it too: the answer is about the interface, not the command line (exit 3, not 64).
        let can = try Package.run("bessctl", ["probe", "can", "nosuchcan9", "--seconds", "0.1", "--socket", "/tmp/bessctl-none.sock"])
        #expect(can.status == 3, "\(can.out)\(can.err)")
    }

    /// Address, port, unit id.
    @Test("probe modbus with nothing answering: exit 3 and what to check, never a register map")
    func silentDevice() throws {
        // A listener that accepts connections (the kernel completes them) and never answers a request.
        var listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(listener >= 0)
        defer { if listener >= 0 { close(listener) } }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 }
        }
        #expect(bound && listen(listener, 8) == 0)
        let port = Int(UInt16(bigEndian: address.sin_port))
        let silent = try Package.run("bessctl", ["probe", "modbus", "127.0.0.1:\(port)", "--unit-id", "7", "--timeout-ms", "200"])
        #expect(silent.status == 3, "\(silent.out)")
        #expect(silent.out.contains("no answer: MODBUS_TIMEOUT"), "\(silent.out)")
        #expect(silent.out.contains("nothing answered for unit id 7: check the unit id"), "\(silent.out)")
        #expect(!silent.out.contains("register map") && !silent.out.contains("register_map"), "\(silent.out)")

        // Nothing listening at all: the address and port to check.
        close(listener)
        listener = -1
        let refused = try Package.run("bessctl", ["probe", "modbus", "127.0.0.1:\(port)", "--timeout-ms", "200"])
        #expect(refused.status == 3, "\(refused.out)")
        #expect(refused.out.contains("check the address and the port"), "\(refused.out)")
        #expect(!refused.out.contains("register map") && !refused.out.contains("register_map"), "\(refused.out)")
    }

    @Test("redaction: password, token and secret values and URL credentials; _file paths kept")
    func redaction() {
        let text = """
            aggregator:
              url: https://site7:hunter2@agg.example.com/v1
              token_file: /etc/bessd/token
              password: swordfish
              api_token: "abc"
              client_secret: s3
            """
        let out = ControlVerbs.redacted(text)
        for secret in ["hunter2", "site7", "swordfish", "abc", "s3"] { #expect(!out.contains(secret), "\(secret) left in:\n\(out)") }
        #expect(out.contains("url: https://<redacted>@agg.example.com/v1"))
        #expect(out.contains("token_file: /etc/bessd/token"))
        #expect(out.contains("password: <redacted>"))
    }

    @Test("diag bundles every part from a running bessd; with bessd stopped it says so and exits 0")
    func diag() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        _ = daemon.notify.collect(seconds: 8) { $0.contains("READY=1") }
        let bundle = daemon.directory + "/bundle.tar.gz"
        let run = try Package.run("bessctl", ["diag", "--socket", daemon.socket, "--output", bundle])
        #expect(run.status == 0, "\(run.out)\(run.err)")
        let list = try Package.tool(["tar", "-tzf", bundle]).out
        for file in ["status.json", "faults.json", "site.json", "config.yaml", "metrics.txt", "versions.txt", "NOTES.txt", "spool.json"] {
            #expect(list.contains("/" + file), "\(file) missing from \(list)")
        }
        let extract = daemon.directory + "/extract"
        try FileManager.default.createDirectory(atPath: extract, withIntermediateDirectories: true)
        #expect(try Package.tool(["tar", "-xzf", bundle, "-C", extract]).status == 0)
        let folder = try #require(try FileManager.default.contentsOfDirectory(atPath: extract).first)
        let read = { (name: String) in (try? String(contentsOfFile: "\(extract)/\(folder)/\(name)", encoding: .utf8)) ?? "" }
        #expect(read("config.yaml").contains("- {id: D1, capacity_kwh: 250, max_power_kw: 100}"))
        #expect(read("metrics.txt").contains("bessd_cycle"))
        #expect(read("status.json").contains("\"D2\""))
        #expect(read("versions.txt").hasPrefix("bessctl "))
        #expect(read("NOTES.txt").contains("bessctl diag at "))
        #expect(read("NOTES.txt").contains("- spool: bessd has no uplink configured (no spool)"))
        var info = stat()
        #expect(stat(bundle, &info) == 0 && info.st_mode & 0o077 == 0, "the bundle is for its owner only")

        daemon.signal(SIGTERM)
        _ = daemon.finish()
        let stopped = daemon.directory + "/stopped.tar.gz"
        let again = try Package.run("bessctl", ["diag", "--socket", daemon.socket, "--output", stopped])
        #expect(again.status == 0, "\(again.out)\(again.err)")
        #expect(again.out.contains("not collected: status: bessd not reachable"), "\(again.out)")
        let notes = try Package.tool(["tar", "-xzOf", stopped, "--wildcards", "*/NOTES.txt"]).out
        #expect(notes.contains("- status: bessd not reachable on \(daemon.socket)"), "\(notes)")
    }
}
