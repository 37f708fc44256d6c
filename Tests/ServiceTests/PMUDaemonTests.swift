import BessSystem
import Foundation
import Glibc
import TestSupport
import Testing

/// `hil/peers/pmu_peer.py serve` (pyPMU's own TCP server, with its data over UDP to `dataPort` for
/// `tcp_udp`, or the script's PMU streaming unasked to `dataPort` for `udp_spontaneous`; IDCODE 1410,
/// integer FREQ from 50 Hz, 50 frames/s on 127.0.0.1), steered on its standard input; `stop()` ends
/// it and its connection processes.
struct PMUServer {
    let peer: UnitsPeer
    let input = Pipe()
    /// The port it serves (0 when it did not start).
    var port: Int { peer.port }

    init(port: Int = 0, hz: Double, transport: String = "tcp", dataPort: Int = 0) throws {
        peer = try UnitsPeer(arguments: ["python3", "hil/peers/pmu_peer.py", "serve", "--transport", transport, "--port", String(port),
                                         "--data-port", String(dataPort), "--idcode", "1410", "--freq", String(hz)], input: input)
    }

    /// Sends `command` (`stat invalid`…) and waits for the peer's `OK`.
    func send(_ command: String) -> Bool {
        let ok = "OK " + (command.split(separator: " ").first.map(String.init) ?? "")
        let before = peer.all.filter { $0 == ok }.count
        input.fileHandleForWriting.write(Data((command + "\n").utf8))
        return waitFor(seconds: 10) { peer.all.filter { $0 == ok }.count > before }
    }

    func stop() {
        if peer.process.isRunning { kill(-peer.process.processIdentifier, SIGKILL) }
        peer.stop()
    }
}

/// bessd run against pyPMU: the droop follows the PMU, and falls back to the inverters and back.
@Suite("bessd following pyPMU", .serialized)
struct PMUDaemonTests {
    /// Status of the running daemon: the source, frequency and each unit's droop.
    static func status(_ daemon: RunningDaemon) -> (source: String?, hz: Double, age: Double, droop: [Double]) {
        let status = (try? daemon.request(["verb": "status"])) ?? [:]
        let units = status["units"] as? [[String: Any]] ?? []
        return (status["frequency_source"] as? String, status["frequency_hz"] as? Double ?? .nan,
                status["frequency_age_ms"] as? Double ?? .nan, units.map { $0["droop_w"] as? Double ?? .nan })
    }

    /// Waits until the daemon follows `source` at `hz` with every unit's droop on `sign`'s side.
    static func follows(_ daemon: RunningDaemon, _ source: String, hz: Double, sign: Double, seconds: Double = 30)
        -> (Bool, String)
    {
        var last = status(daemon)
        let ok = waitFor(seconds: seconds) {
            last = status(daemon)
            return last.source == source && abs(last.hz - hz) < 0.002 && last.droop.count == 2
                && last.droop.allSatisfy { $0 * sign > 2_000 }
        }
        return (ok, "\(last)")
    }

    /// pyPMU over tcp, tcp_udp and udp_spontaneous: PMU 49.8 Hz beats the inverters' 50.2; STAT invalid → inverter and back; PMU stopped → inverter, restarted → pmu (bessd reconnects); status, text and /metrics say which.
    @Test("droop follows the PMU over each transport, falls back to the inverters and returns with the PMU",
          arguments: ["tcp", "tcp_udp", "udp_spontaneous"])
    func daemonFollowsPyPMU(transport: String) throws {
        let dataPort = transport == "tcp" ? 0 : Loopback.freePort()
        var peer = try PMUServer(hz: 49.8, transport: transport, dataPort: dataPort)
        let maxAge = 500
        defer { peer.stop() }
        #expect(peer.port > 0, "pmu_peer.py serve printed no port")
        let port = peer.port
        let link = switch transport {
        case "tcp": "port: \(port), transport: tcp"
        case "tcp_udp": "port: \(port), transport: tcp_udp, local_port: \(dataPort)"
        default: "transport: udp_spontaneous, local_port: \(dataPort)"
        }
        let yaml = daemonYAML.replacingOccurrences(of: "base_hz: 49.8", with: "base_hz: 50.2") + """

            grid_integration:
              frequency_source: pmu
              pmu: {host: 127.0.0.1, \(link), idcode: 1410, max_age_ms: \(maxAge), reconnect_s: 0.2}
            """
        let daemon = try RunningDaemon(yaml: yaml)
        var (ok, seen) = Self.follows(daemon, "pmu", hz: 49.8, sign: 1)
        #expect(ok, "following the PMU: \(seen)")
        // The rule the cycle enforces, not a timing: while the source is the PMU, its sample is no
        // older than max_age_ms (a slow machine may fall back meanwhile, which is also in the rule).
        for _ in 0..<10 {
            let now = Self.status(daemon)
            #expect(now.source != "pmu" || (now.age >= 0 && now.age <= Double(maxAge)), "\(now)")
        }
        let table = try Package.run("bessctl", ["status", "--socket", daemon.socket])
        #expect(table.out.contains("Hz (pmu, "), "\(table.out)")
        let metrics = (try daemon.request(["verb": "metrics"]))["text"] as? String ?? ""
        #expect(metrics.contains("bessd_frequency_source{source=\"pmu\"} 1"), "\(metrics)")
        #expect(metrics.contains("bessd_pmu_connected 1"))
        #expect(metrics.range(of: "bessd_pmu_frames_total [1-9]", options: .regularExpression) != nil)

        // STAT says the data is invalid: no usable sample, the inverters' 50.2 Hz decides.
        #expect(peer.send("stat invalid"))
        (ok, seen) = Self.follows(daemon, "inverter", hz: 50.2, sign: -1)
        #expect(ok, "falling back on STAT: \(seen)")
        let unusable = (try daemon.request(["verb": "metrics"]))["text"] as? String ?? ""
        #expect(unusable.range(of: "bessd_pmu_unusable_samples_total [1-9]", options: .regularExpression) != nil)
        #expect(peer.send("stat ok"))
        (ok, seen) = Self.follows(daemon, "pmu", hz: 49.8, sign: 1)
        #expect(ok, "back on valid STAT: \(seen)")

        // The PMU stops (its process ends); a new one on the same port: bessd reconnects by itself.
        peer.stop()
        (ok, seen) = Self.follows(daemon, "inverter", hz: 50.2, sign: -1)
        #expect(ok, "falling back with the PMU stopped: \(seen)")
        peer = try PMUServer(port: port, hz: 49.8, transport: transport, dataPort: dataPort)
        (ok, seen) = Self.follows(daemon, "pmu", hz: 49.8, sign: 1)
        #expect(ok, "following the restarted PMU: \(seen)")

        daemon.signal(SIGTERM)
        let (status, text) = daemon.finish()
        #expect(status == 0)
        #expect(text.contains("FREQUENCY_SOURCE_FALLBACK: no usable PMU sample"), "\(text.suffix(2000))")
        #expect(text.contains("FREQUENCY_SOURCE_FALLBACK cleared: the PMU's samples are usable again"))
        #expect(text.contains("PMU_CONNECTED: 127.0.0.1") && text.contains("(\(transport), stream 1410): PMU 1410"), "\(text.suffix(2000))")
        #expect(text.contains("stopped in order: operator server → cycle → PMU → bus workers → journal"), "\(text.suffix(600))")
    }
}
