import BessBase
import BessSystem
import ControlCore
import Foundation
import Glibc
@testable import Config
@testable import Cycle
@testable import Scada
import Synchronization
import TestSupport
import Testing

/// The site as a SunSpec device (issue 12, part 1): the layout comes from the standard's JSON, an
/// independent client reads it, and what it reads is what bessctl shows.
@Suite("SCADA: the site served as SunSpec", .serialized)
struct ScadaTests {
    @Test("the model tables are exactly what scripts/sunspec-codegen.py makes of pysunspec2's model JSON")
    func tablesAreGenerated() throws {
        let generated = try Package.tool(["python3", "scripts/sunspec-codegen.py", "-"])
        #expect(generated.status == 0, "\(generated.err)")
        let checkedIn = try String(contentsOf: Package.root.appendingPathComponent("Sources/Scada/SunSpecTables.swift"),
                                   encoding: .utf8)
        #expect(generated.out == checkedIn, "Sources/Scada/SunSpecTables.swift is stale: run scripts/sunspec-codegen.py")
        // And the tables say what the standard says of the points bessd fills.
        #expect(SunSpecTables.M704.length == 65 && SunSpecTables.M802.length == 62 && SunSpecTables.M713.length == 7)
        #expect(SunSpecTables.M704.WMaxLimPct.writable && !SunSpecTables.M701.W.writable)
    }

    @Test("allow_from: networks and single addresses; an empty list means loopback only")
    func allowFrom() throws {
        let networks = [try #require(IPv4Network("10.20.0.0/24")), try #require(IPv4Network("192.168.1.7"))]
        func a(_ text: String) -> UInt32 { IPv4Network.parse(text)! }
        #expect(ScadaServer.allowed(a("10.20.0.99"), by: networks))
        #expect(!ScadaServer.allowed(a("10.20.1.1"), by: networks))
        #expect(ScadaServer.allowed(a("192.168.1.7"), by: networks))
        #expect(!ScadaServer.allowed(a("192.168.1.8"), by: networks))
        #expect(!ScadaServer.allowed(a("127.0.0.1"), by: networks))
        #expect(ScadaServer.allowed(a("127.0.0.1"), by: []))
        #expect(!ScadaServer.allowed(a("10.20.0.1"), by: []))
        #expect(IPv4Network("10.0.0.0/33") == nil && IPv4Network("10.0.0") == nil && IPv4Network("10.0.0.256") == nil)
        #expect(IPv4Network("10.1.2.3/8")?.description == "10.0.0.0/8")
    }

    /// A server on a free loopback port over a SharedState the test fills.
    func server(_ settings: ScadaConfiguration, log: @escaping @Sendable (Notice) -> Void = { _ in })
        throws -> (ScadaServer, SharedState)
    {
        let shared = SharedState(units: 2, capacitiesWh: [250_000, 250_000])
        let site = ScadaSiteDescription(siteID: "SITE_T", version: "0.0.0", mode: "simulation", unitID: 1,
                                        ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000], hasMeter: false)
        let server = try ScadaServer(configuration: settings, site: site, shared: shared, log: log)
        try server.start()
        return (server, shared)
    }

    /// Connects to 127.0.0.1:`port`; returns the socket.
    func connect(_ port: Int) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        _ = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        return fd
    }

    /// True once the peer has closed `fd` (a read returns 0) within `seconds`.
    func closedByPeer(_ fd: Int32, within seconds: Double) -> Bool {
        waitFor(seconds: seconds) {
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&pfd, 1, 50) > 0 else { return false }
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, 0) == 0
        }
    }

    @Test("a peer outside allow_from is closed at accept (SCADA_PEER_REFUSED); one within it is served")
    func refusedOutsideAllowFrom() throws {
        let said = Mutex<[String]>([])
        let settings = ScadaConfiguration(host: "127.0.0.1", port: 0, allowFrom: [IPv4Network("10.0.0.0/8")!])
        let (server, _) = try server(settings) { notice in said.withLock { $0.append(notice.code ?? "") } }
        defer { server.stop() }
        let fd = connect(server.port)
        defer { close(fd) }
        #expect(closedByPeer(fd, within: 5))
        #expect(server.connectionsRefused.load(ordering: .relaxed) == 1)
        #expect(said.withLock { $0 } == ["SCADA_PEER_REFUSED"])
        // Loopback allowed: mbpoll reads the marker.
        let open = ScadaConfiguration(host: "127.0.0.1", port: 0, allowFrom: [IPv4Network("127.0.0.0/8")!])
        let (served, _) = try self.server(open)
        defer { served.stop() }
        let read = try Package.tool(["mbpoll", "-m", "tcp", "-p", String(served.port), "-a", "1", "-r", "40001", "-c", "2",
                                     "-t", "4:hex", "-1", "-q", "127.0.0.1"])
        #expect(read.out.contains("[40001]: \t0x5375") && read.out.contains("[40002]: \t0x6E53"), "\(read.out)\(read.err)")
    }

    @Test("a connection silent for idle_timeout_s is closed and logged SCADA_CLIENT_IDLE")
    func idleClosed() throws {
        let said = Mutex<[String]>([])
        let settings = ScadaConfiguration(host: "127.0.0.1", port: 0, idleTimeout: .seconds(1))
        let (server, _) = try server(settings) { notice in said.withLock { $0.append(notice.code ?? "") } }
        defer { server.stop() }
        let fd = connect(server.port)
        defer { close(fd) }
        #expect(closedByPeer(fd, within: 10))
        #expect(server.idleClosed.load(ordering: .relaxed) == 1)
        #expect(said.withLock { $0 } == ["SCADA_CLIENT_IDLE"])
    }

    @Test("the server sleeps until a client, its idle timeout or stop() wakes it: no fixed tick")
    func serverSleeps() throws {
        let settings = ScadaConfiguration(host: "127.0.0.1", port: 0, idleTimeout: .seconds(1))
        let (server, _) = try server(settings)
        let fd = connect(server.port)
        defer { close(fd) }
        #expect(closedByPeer(fd, within: 10))
        #expect(server.idleClosed.load(ordering: .relaxed) == 1)
        // The second the client idled cost a handful of wake-ups (the accept, the timeout), not one
        // every 100 ms as the server's old fixed poll did (at least 10).
        let woken = server.wakeups.load(ordering: .relaxed)
        #expect(woken >= 2 && woken <= 5, "wake-ups: \(woken)")
        func at(_ ms: Int64) -> MonotonicInstant { .zero + .milliseconds(ms) }
        #expect(ScadaServer.pollTimeout([MonotonicInstant](), idle: .seconds(1), now: .zero) == -1)
        #expect(ScadaServer.pollTimeout([at(0), at(500)], idle: .seconds(1), now: at(250)) == 751)
        #expect(ScadaServer.pollTimeout([at(0), at(500)], idle: .seconds(1), now: at(250) + .nanoseconds(1)) == 751)
        #expect(ScadaServer.pollTimeout([at(0)], idle: .seconds(1), now: at(2000)) == 0)
        #expect(ScadaServer.pollTimeout([at(0)], idle: .seconds(3600), now: .zero) == 60_000)
        // No client: the server waits without a timeout, and stop() still ends it.
        #expect(returns(within: 5) { server.stop() }, "stop() did not end the server's wait")
    }

    @Test("max_clients: one connection too many is closed at accept (SCADA_CLIENTS_FULL); others stay")
    func maxClients() throws {
        let said = Mutex<[String]>([])
        let settings = ScadaConfiguration(host: "127.0.0.1", port: 0, maxClients: 2)
        let (server, _) = try server(settings) { notice in said.withLock { $0.append(notice.code ?? "") } }
        defer { server.stop() }
        let first = connect(server.port), second = connect(server.port)
        defer { close(first); close(second) }
        // The third knocks once the server holds both.
        #expect(waitFor(seconds: 5) { server.connected.load(ordering: .relaxed) == 2 })
        let third = connect(server.port)
        defer { close(third) }
        #expect(closedByPeer(third, within: 5))
        #expect(said.withLock { $0 } == ["SCADA_CLIENTS_FULL"])
        #expect(!closedByPeer(first, within: 0.2))
    }

    /// Site sums and weighted SOC; alarm bits from trip codes.
    @Test("pysunspec2 scans the published image: every model, site sums, 802 per unit; writes answer 01")
    func imageFromPublishedState() throws {
        let (server, shared) = try server(ScadaConfiguration(host: "127.0.0.1", port: 0))
        defer { server.stop() }
        shared.contents.withLock { c in
            c.units[0].state = .running
            c.units[0].soc = 40
            c.units[0].soh = 98
            c.units[0].power = 30_000
            c.units[0].chargeCurrentLimit = 100
            c.units[0].dischargeCurrentLimit = 120
            c.units[1].state = .tripped
            c.units[1].soc = 80
            c.units[1].soh = 90
            c.units[1].power = 0
            c.units[1].active.insert(.overtemperature)
            c.units[1].latched.insert(.cellOvervoltageCritical)
            c.stats.frequency = 49.95
            c.stats.cycles = 7
        }
        let result = try Package.tool(["python3", "hil/peers/sunspec_scan.py", "127.0.0.1", String(server.port)])
        #expect(result.status == 0, "\(result.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(result.out.utf8)) as? [String: Any])
        let chain = (json["models"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int }
        #expect(chain == [1, 701, 702, 713, 704, 802, 802])
        let points = try #require(json["points"] as? [String: [String: Any]])
        let instances = try #require(json["instances"] as? [String: [[String: Any]]])
        func n(_ model: [String: Any]?, _ name: String) -> Double? {
            (model?[name] as? Double) ?? (model?[name] as? Int).map(Double.init)
        }
        #expect(points["1"]?["Mn"] as? String == "bessd" && points["1"]?["SN"] as? String == "SITE_T")
        #expect(points["1"]?["Opt"] as? String == "simulation")
        #expect(n(points["701"], "W") == 30_000)  // no meter: Σ units, + = export
        #expect(n(points["701"], "Hz").map { abs($0 - 49.95) < 1e-6 } == true)
        #expect(n(points["702"], "WMaxRtg") == 200_000)
        #expect(n(points["713"], "WHRtg") == 500_000)
        #expect(n(points["713"], "SoC").map { abs($0 - 60) < 1e-6 } == true)
        #expect(n(points["713"], "WHAvail") == 300_000)
        #expect(n(points["704"], "WMaxLimPctRvrt") == 100 && n(points["704"], "WSetEnaRvrt") == 0)
        let batteries = instances["802"] ?? []
        #expect(batteries.count == 2)
        #expect(n(batteries.first, "SoC") == 40 && n(batteries.first, "State") == 3 && n(batteries.first, "AChaMax") == 100)
        #expect(n(batteries.first, "Evt1") == 0)
        #expect(n(batteries.last, "SoC") == 80 && n(batteries.last, "State") == 99)
        // OVER_TEMP_ALARM (1) and OVER_VOLT_ALARM (9).
        #expect(n(batteries.last, "Evt1") == Double(1 << 1 | 1 << 9))
        // A write while writes are off: exception 01 (illegal function), counted and logged.
        let base = ScadaImage.base + (ScadaImage(site: server.siteDescription).start(of: 704) ?? 0)
        let write = try Package.tool(["mbpoll", "-m", "tcp", "-p", String(server.port), "-a", "1",
                                      "-r", String(base + SunSpecTables.M704.WMaxLimPct.offset + 1), "-1", "-q", "127.0.0.1", "30"])
        #expect(write.status != 0)
        #expect((write.out + write.err).lowercased().contains("illegal function"), "\(write.out)\(write.err)")
        #expect(server.writesRefused.load(ordering: .relaxed) == 1)
    }

    /// socat pty, 19200 8N1, unit 7.
    @Test("scada.serial serves the same image over RTU: pysunspec2 scans it; a write is refused with 01")
    func serialLine() throws {
        let directory = NSTemporaryDirectory() + "bessd-scada-rtu-\(getpid())"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let socat = try ptyPair(directory, "bessd", "scada")
        defer {
            kill(socat.processIdentifier, SIGKILL)
            socat.waitUntilExit()
            try? FileManager.default.removeItem(atPath: directory)
        }
        #expect(waitFor(seconds: 5) { FileManager.default.fileExists(atPath: "\(directory)/bessd") })
        let c = try ConfigLoader.parse("""
            bess_units:
              - {id: A, capacity_kwh: 250, max_power_kw: 100}
              - {id: B, capacity_kwh: 250, max_power_kw: 100}
            scada:
              listen: 127.0.0.1:1502
              serial: {device: \(directory)/bessd, baud: 19200, parity: none, unit_id: 7}
            """, file: "scada-rtu.yaml")
        let settings = try #require(c.scada)
        #expect(settings.serial?.baud == 19200 && settings.serialUnitID == 7)
        let shared = SharedState(units: 2, capacitiesWh: [250_000, 250_000])
        shared.contents.withLock { c in
            c.units[0].soc = 55
            c.units[1].soc = 65
            c.stats.cycles = 1
        }
        let site = ScadaSiteDescription(siteID: "SITE_R", version: "0.0.0", mode: "simulation", unitID: 1,
                                        ratingsW: [100_000, 100_000], capacitiesWh: [250_000, 250_000], hasMeter: false)
        let server = try ScadaServer(configuration: settings, serialLine: true, site: site, shared: shared) { _ in }
        try server.start()
        defer { server.stop() }
        let scan = try Package.tool(["python3", "hil/peers/sunspec_scan.py", "--rtu", "\(directory)/scada", "19200", "7"])
        #expect(scan.status == 0, "\(scan.err)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(scan.out.utf8)) as? [String: Any])
        #expect((json["models"] as? [[String: Any]] ?? []).compactMap { $0["id"] as? Int } == [1, 701, 702, 713, 704, 802, 802])
        let points = json["points"] as? [String: [String: Any]] ?? [:]
        #expect(points["1"]?["DA"] as? Int == 7)
        #expect((points["713"]?["SoC"] as? Double).map { abs($0 - 60) < 1e-6 } == true)
        let write = try Package.tool(["mbpoll", "-m", "rtu", "-b", "19200", "-P", "none", "-a", "7", "-r", "40001", "-1", "-q",
                                      "\(directory)/scada", "1"])
        #expect((write.out + write.err).lowercased().contains("illegal function"), "\(write.out)\(write.err)")
        #expect(server.writesRefused.load(ordering: .relaxed) == 1)
        // The line's thread wakes once per request it reads and once for stop() (it sleeps on the
        // line with no timeout): a line in error or a stray wake-up would show as more.
        server.stop()
        let answered = server.answered.load(ordering: .relaxed), woken = server.wakeups.load(ordering: .relaxed)
        #expect(answered > 0 && woken <= answered + 2, "wake-ups \(woken) for \(answered) requests")
    }
}
