import ControlProtocol
import Foundation
import Glibc
import TestSupport
import Testing

/// A systemd-journald of the test's own in a mount namespace of its own (a private tmpfs on
/// /run/systemd/journal and /run/log/journal), with bessd started in the same namespace: stopping
/// it stops no other process's journal. `prefix` runs bessd there (`RunningDaemon(prefix:)`).
final class PrivateJournald {
    let pidFile: String
    /// The shell that mounts, starts journald and becomes bessd (`exec "$@"`).
    let prefix: [String]

    init(directory: String) {
        pidFile = directory + "/journald.pid"
        let script = """
            set -e
            mkdir -p /run/systemd/journal /run/log/journal
            mount -t tmpfs tmpfs /run/systemd/journal
            mount -t tmpfs tmpfs /run/log/journal
            # journald keeps no descriptor of the test's but its own: Foundation sees bessd end
            # when every copy of the descriptor it gave bessd is closed.
            env -u NOTIFY_SOCKET -u WATCHDOG_USEC python3 -c 'import os; os.closerange(3, 65536); os.execv("/lib/systemd/systemd-journald", ["systemd-journald"])' </dev/null >/dev/null 2>&1 &
            echo $! > \(pidFile)
            i=0
            while [ ! -S /run/systemd/journal/socket ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done
            exec "$@"
            """
        prefix = ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "private-journald"]
    }

    /// journald's pid once it started (0 before).
    var pid: Int32 {
        Int32(((try? String(contentsOfFile: pidFile, encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0
    }

    /// True while journald is stopped (state `T` in /proc).
    var isStopped: Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return false }
        return stat[stat.index(close, offsetBy: 2)...].first == "T"
    }

    /// Fills journald's native socket (as seen in its namespace) until a send would block: every
    /// writer after this waits until journald reads again. Returns the datagrams sent.
    func fillSocket() -> Int {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        guard fd >= 0, UnixSocketPath.connect(fd, "/proc/\(pid)/root/run/systemd/journal/socket") else { return 0 }
        var sent = 0
        let message = Array("MESSAGE=filler from the test\nPRIORITY=6\n".utf8)
        while sent < 100_000, send(fd, message, message.count, Int32(MSG_DONTWAIT)) > 0 { sent += 1 }
        return sent
    }

    /// Lets journald go on and stops it.
    func stop() {
        let pid = self.pid
        guard pid > 0 else { return }
        kill(pid, SIGCONT)
        kill(pid, SIGKILL)
    }
}

/// connect(2) to a Unix socket path.
enum UnixSocketPath {
    static func connect(_ fd: Int32, _ path: String) -> Bool {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { b in for (i, c) in bytes.enumerated() { b[i] = c } }
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        } == 0
    }
}

/// Nothing that waits on a peer stalls the field (issue 57 part 5): a stopped journald, a reload.
@Suite("bessd: the field goes on while journald or a reload waits", .serialized)
struct FieldProgressTests {
    /// One pymodbus SunSpec inverter (`unit`) on `port`, for 120 s.
    static func inverter(_ unit: Int, port: Int) throws -> UnitsPeer {
        try UnitsPeer(arguments: ["python3", "hil/peers/pymodbus_sunspec_units.py", "--seconds", "120", "--port", String(port), String(unit)])
    }

    /// The last REQUESTS line of `peer` for `unit`: (reads, writes), zeros before the first.
    static func requests(_ peer: UnitsPeer, unit: Int) -> (reads: Int, writes: Int) {
        guard let line = peer.all.last(where: { $0.hasPrefix("REQUESTS unit=\(unit) ") }) else { return (0, 0) }
        func value(_ key: String) -> Int {
            line.split(separator: " ").first { $0.hasPrefix(key + "=") }.flatMap { Int($0.dropFirst(key.count + 1)) } ?? 0
        }
        return (value("reads"), value("writes"))
    }

    /// Unit `index`'s measured power in status (nil while its reading is stale or status is silent).
    static func power(_ daemon: RunningDaemon, _ index: Int) -> Double? {
        let units = (try? daemon.request(["verb": "status"]))?["units"] as? [[String: Any]] ?? []
        return index < units.count ? (units[index]["power_w"] as? NSNumber)?.doubleValue : nil
    }

    @Test("with journald stopped and its socket full, a returning inverter is read again, the other served",
          .enabled(if: getuid() == 0, "a mount namespace and systemd-journald need root"))
    func journaldStopped() throws {
        let portA = Loopback.freePort()
        let portB = Loopback.freePort()
        var peerA = try Self.inverter(1, port: portA)
        let peerB = try Self.inverter(2, port: portB)
        defer {
            peerA.stop()
            peerB.stop()
        }
        let yaml = """
            mode: hil
            period_ms: 100
            control_socket: @SOCKET@
            bess_units:
              - {id: JA, capacity_kwh: 250, max_power_kw: 100, modbus: {host: 127.0.0.1, port: \(portA), unit_id: 1, timeout_ms: 200}, bms: {simulated: true}}
              - {id: JB, capacity_kwh: 250, max_power_kw: 100, modbus: {host: 127.0.0.1, port: \(portB), unit_id: 2, timeout_ms: 200}, bms: {simulated: true}}
            grid_integration:
              frequency_source: inverter
            simulation: {frequency_profile: steady, base_hz: 50.0}
            """
        let directory = NSTemporaryDirectory() + "bessd-journald-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let journald = PrivateJournald(directory: directory)
        defer {
            journald.stop()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let daemon = try RunningDaemon(yaml: yaml, extra: ["--log", "journal"], prefix: journald.prefix, directory: directory)
        defer {
            daemon.signal(SIGKILL)
            _ = daemon.finish()
        }
        #expect(!daemon.notify.collect(seconds: 20) { $0.contains("READY=1") }.isEmpty, "bessd is ready")
        // 1234 W from unit id 1 and 2234 W from unit id 2 (the peer's image), + = discharge.
        #expect(waitFor(seconds: 15) { Self.power(daemon, 0) == 1234 && Self.power(daemon, 1) == 2234 }, "both inverters are read")
        #expect(journald.pid > 0)

        // journald stops with its socket full: from now on every write to the journal blocks.
        kill(journald.pid, SIGSTOP)
        #expect(waitFor { journald.isStopped })
        let filled = journald.fillSocket()
        #expect(filled > 0, "the test filled journald's socket")
        let before = Self.requests(peerB, unit: 2)

        // Inverter JA drops: its worker has notices to give while journald cannot take them.
        peerA.stop()
        #expect(waitFor(seconds: 10) { Self.power(daemon, 0) == nil }, "bessd sees JA gone")
        peerA = try Self.inverter(1, port: portA)
        #expect(peerA.ready, "JA's inverter serves again on \(portA)")
        // Read again within its reconnect back-off (at most 10 s, EndpointSession's link back-off).
        let readAgain = waitFor(seconds: 12) { Self.requests(peerA, unit: 1).reads > 0 && Self.power(daemon, 0) == 1234 }
        #expect(readAgain, "JA is read again while journald is stopped: \(peerA.all.suffix(3))")
        // JB's reads and writes went on meanwhile (a setpoint is written at least every half revert period).
        let goneOn = waitFor(seconds: 10) {
            let now = Self.requests(peerB, unit: 2)
            return now.reads > before.reads + 10 && now.writes > before.writes && Self.power(daemon, 1) == 2234
        }
        #expect(goneOn, "JB read and written meanwhile: \(before) → \(Self.requests(peerB, unit: 2))")
        #expect(journald.isStopped, "all of it while journald was still stopped")
        let health = (try? daemon.request(["verb": "status"]))?["health"] as? [String: Any]
        #expect(health?["notices_dropped"] != nil, "status says how many notices were dropped: \(String(describing: health))")
        kill(journald.pid, SIGCONT)
    }

    /// The cycle's figures in status: cycles, overruns and the longest gap between two cycles, ms.
    static func cycle(_ daemon: RunningDaemon) -> (cycles: Int, overruns: Int, longestGapMs: Double?) {
        let cycle = (try? daemon.request(["verb": "status"]))?["cycle"] as? [String: Any] ?? [:]
        return ((cycle["cycles"] as? NSNumber)?.intValue ?? -1, (cycle["overruns"] as? NSNumber)?.intValue ?? -1,
                (cycle["longest_gap_ms"] as? NSNumber)?.doubleValue)
    }

    /// A counter's value in /metrics (nil when absent).
    static func metric(_ daemon: RunningDaemon, _ name: String) -> Double? {
        let text = (try? daemon.request(["verb": "metrics"]))?["text"] as? String ?? ""
        return text.split(separator: "\n").first { $0.hasPrefix(name + " ") }.flatMap { Double($0.split(separator: " ").last ?? "") }
    }

    /// SIGHUP, then the notify socket's RELOADING=1 and READY=1.
    static func reload(_ daemon: RunningDaemon) -> Bool { daemon.reloadAndWait().finished }

    /// status.cycle, bessd_cycles_total and bessd_cycle_overruns_total; an overrun before it stays.
    @Test("cycle and overrun counters never go back across a reload")
    func countersAcrossReload() throws {
        let daemon = try RunningDaemon(yaml: daemonYAML)
        #expect(!daemon.notify.collect(seconds: 15) { $0.contains("READY=1") }.isEmpty, "bessd is ready")
        #expect(waitFor(seconds: 10) { Self.cycle(daemon).cycles > 20 })
        // An overrun: the whole process stopped for 0.4 s, six periods of 50 ms; the cycle wakes late.
        daemon.signal(SIGSTOP)
        usleep(400_000)
        daemon.signal(SIGCONT)
        #expect(waitFor(seconds: 10) { Self.cycle(daemon).overruns >= 1 }, "the stop was counted as an overrun")
        let before = Self.cycle(daemon)
        let cyclesTotal = Self.metric(daemon, "bessd_cycles_total") ?? -1
        #expect(cyclesTotal >= Double(before.cycles))
        #expect(Self.reload(daemon), "the reload finished")
        let after = Self.cycle(daemon)
        #expect(after.cycles > before.cycles, "status.cycle goes on: \(before.cycles) → \(after.cycles)")
        #expect(after.overruns >= before.overruns, "the overrun before the reload stays: \(before.overruns) → \(after.overruns)")
        #expect((Self.metric(daemon, "bessd_cycles_total") ?? -1) > cyclesTotal, "bessd_cycles_total never goes back")
        #expect((Self.metric(daemon, "bessd_cycle_overruns_total") ?? -1) >= Double(before.overruns))
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        #expect(text.contains("reload applied"))
    }

    /// Rewrites the fixture's CRL with `entries` revoked serials besides its own (about 35 bytes each
    /// in DER): a CRL a large PKI really has, and something for a reload to read and parse.
    static func enlargeCRL(_ pki: TLSFixture, entries: Int) throws {
        var index = try String(contentsOfFile: pki.path("ca.index"), encoding: .utf8)
        for n in 0..<entries {
            index += "R\t301231235959Z\t261128000000Z\t\(String(format: "%08X", 0x1000_0000 + n))\tunknown\t/CN=revoked \(n)\n"
        }
        try index.write(toFile: pki.path("ca.index"), atomically: true, encoding: .utf8)
        let ca = ["-config", pki.path("ca.cnf"), "-keyfile", pki.path("ca.key"), "-cert", pki.path("ca.pem")]
        try pki.openssl(["ca"] + ca + ["-gencrl", "-out", pki.path("crl.pem")])
    }

    /// IEC 104 over TLS with a CRL of 20 000 entries, and IEEE 2030.5 configured.
    @Test("20 reloads at 100 ms with TLS and 2030.5: no overrun, no cycle gap over two periods")
    func reloadsCostNoCycle() throws {
        let pki = try TLSFixture()
        try Self.enlargeCRL(pki, entries: 20_000)
        let crlBytes = (try? FileManager.default.attributesOfItem(atPath: pki.path("crl.pem"))[.size] as? Int) ?? 0
        #expect(crlBytes > 500_000, "the CRL a reload reads is large: \(crlBytes) bytes")
        let port = Loopback.freePort()
        // A 2030.5 server that is not there: the client retries on its own thread, the reload keeps it.
        let sep2 = """

            ieee2030_5:
              server: https://127.0.0.1:\(Loopback.freePort())/dcap
              cert_file: \(pki.path("client.pem"))
              key_file: \(pki.path("client.key"))
              ca_file: \(pki.path("ca.pem"))
              pin: "111115"
              poll_s: 10
              timeout_s: 5
            """
        let yaml = IEC104TLSDaemonTests.yaml(port: port, pki: pki, extra: """

                crl_file: \(pki.path("crl.pem"))
            """).replacingOccurrences(of: "period_ms: 50", with: "period_ms: 100") + sep2 + "\n"
        let daemon = try RunningDaemon(yaml: yaml)
        #expect(!daemon.notify.collect(seconds: 20) { $0.contains("READY=1") }.isEmpty, "bessd is ready")
        #expect(waitFor(seconds: 15) { Loopback.listening(port) }, "the outstation listens")
        #expect(waitFor(seconds: 10) { Self.cycle(daemon).cycles > 10 })
        let before = Self.cycle(daemon)
        var reloaded = 0
        for _ in 0..<20 where Self.reload(daemon) { reloaded += 1 }
        #expect(reloaded == 20)
        let after = Self.cycle(daemon)
        // Counters, not clocks: the overrun counter goes on across reloads (part 8), so an overrun
        // in any of the 20 shows; the longest gap is the cycle's own record of the longest interval
        // between two cycles since start, the reloads' pauses included. No wall-clock assert here.
        #expect(after.cycles > before.cycles)
        #expect(after.overruns == before.overruns, "no reload cost an overrun: \(before) → \(after)")
        let gap = try #require(after.longestGapMs, "status says the longest gap")
        #expect(gap <= 200, "no gap between two cycles longer than two periods: \(gap) ms (before the reloads \(before.longestGapMs ?? -1))")
        daemon.signal(SIGTERM)
        let (code, text) = daemon.finish()
        #expect(code == 0)
        let tls = text.split(separator: "\n").filter { $0.contains("BESS_CODE=IEC104_TLS_RELOADED") }
        #expect(tls.count == 20, "each reload read the TLS files and the CRL again: \(tls.count)")
        #expect(text.components(separatedBy: "reload applied").count - 1 == 20)
    }
}
