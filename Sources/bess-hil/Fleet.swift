import ArgumentParser
import BessSystem
import ControlCore
import Foundation
import Glibc
import Fieldbus
import Uplink

/// N simulated gateways on one machine, each a real MQTT 5 connection with its own client id,
/// persistent session and durable spool, delivering real record batches through bessd's uplink code
/// (`MQTTUplinkSender`, `Spool`) and acting on the commands pushed to it.
struct FleetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Run N simulated gateways against an MQTT broker with bessd's uplink code; print a JSON summary at the end.")

    @Option(help: "Gateways.") var sites = 100
    @Option(help: "The broker: mqtt://host:port.") var broker: String
    @Option(help: "Telemetry records per second per site (each site sends its batches every 1/R s).") var rateHz: Double = 1
    @Option(help: "Battery units per site.") var units = 2
    @Option(help: "Seconds to run.") var duration: Double = 60
    @Option(help: "Where the sites' spools go (one directory each).") var state = "/tmp/bess-fleet"
    @Option(help: "Site ids are PREFIX-00000 …") var prefix = "FLEET"
    @Option(help: "Number of the first site (several fleet processes share one fleet).") var first = 0
    @Option(help: "Threads that drive the connections.") var threads = 4
    @Option(help: "Seconds over which the sites first connect.") var rampS: Double = 10
    @Option(help: "The spools' fsync interval, s (bessd's is 1 s). Thousands of spools on one disk measure that disk's fsync rate, not the fleet: put --state on tmpfs (scripts/fleet-bench.sh uses /dev/shm) or raise this.")
    var spoolSyncS: Double = 1
    @Option(help: "Seconds to wait at the end for what is still in flight to be acknowledged.") var drainS: Double = 10
    @Option(help: "Write the summary JSON here too.") var report: String?
    @Flag(help: "Every site writes its record at the same instant of each period (a fleet in lock-step, the worst burst). By default each site has its own phase, spread evenly over the period, as gateways that started at different times do (bessd's recorder runs on its own monotonic clock).")
    var aligned = false

    func validate() throws {
        guard sites > 0, rateHz > 0, rateHz <= 100, units > 0, units <= 64, duration > 0 else {
            throw ValidationError("sites, rate (≤ 100 Hz), units (≤ 64) and duration must be positive")
        }
        guard MQTTURL(broker) != nil else { throw ValidationError("--broker must be mqtt://host[:port]") }
    }

    /// What one simulated site holds: its spool and what the last command set.
    final class Site: @unchecked Sendable {
        let id: String
        let queue: SpoolQueue
        let setpointW = PILock(0.0)
        let commands = PILock(0)
        init(id: String, queue: SpoolQueue) {
            self.id = id
            self.queue = queue
        }
    }

    func run() throws {
        // Each site holds its spool's files and a socket: raise the descriptor limit (root may raise
        // the hard limit too) and refuse to start a fleet that cannot fit.
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        // Per site: the spool's three files (the segment written, the segment read, the state), the
        // socket, libmosquitto's wake-up socket pair.
        let wanted = rlim_t(max(6 * sites + 1024, Int(limit.rlim_cur)))
        var raised = rlimit(rlim_cur: max(wanted, limit.rlim_cur), rlim_max: max(wanted, limit.rlim_max))
        if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) != 0 {
            limit.rlim_cur = limit.rlim_max
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard Int(limit.rlim_cur) >= 6 * sites + 256 else {
            throw ValidationError("FLEET_FD_LIMIT: \(sites) sites need about \(6 * sites + 256) file descriptors (spool files and sockets); "
                                  + "the limit is \(limit.rlim_cur): raise it (ulimit -n) or run fewer sites")
        }
        signal(SIGPIPE, SIG_IGN)
        let url = MQTTURL(broker)!
        let unitIDs = (1...units).map { "U\($0)" }
        let ratings = Dictionary(uniqueKeysWithValues: unitIDs.map { ($0, 100.0) })
        var list: [Site] = []
        var senders: [MQTTUplinkSender] = []
        let failures = PILock((count: 0, last: ""))
        for i in 0..<sites {
            let id = String(format: "%@-%05d", prefix, first + i)
            let spool = try Spool(directory: "\(state)/\(id)", maxBytes: 8 << 20, segmentBytes: 1 << 20,
                                  syncInterval: .seconds(fromDouble: spoolSyncS))
            let site = Site(id: id, queue: SpoolQueue(spool))
            list.append(site)
            var settings = MQTTUplinkSender.Settings(url: url, site: id, interval: .seconds(fromDouble: 1 / rateHz),
                                                     version: "fleet", mode: "simulation", units: unitIDs)
            settings.keepaliveSeconds = 60
            // The first connections spread over the ramp, so the broker is not hit by every site at once.
            settings.firstAttemptDelay = .seconds(fromDouble: rampS * Double(i) / Double(sites))
            senders.append(MQTTUplinkSender(
                settings: settings, queue: site.queue,
                log: { notice in
                    guard let code = notice.code else { return }
                    failures.withLock {
                        $0.count += 1
                        $0.last = "\(code): \(notice.message)"
                    }
                },
                handleCommands: { commands in
                    commands.map { c in
                        if let reason = DispatchValidator.validate(c, ratings: ratings, now: Date().timeIntervalSince1970) {
                            return CommandAck(id: c.id, accepted: false, reason: reason)
                        }
                        site.setpointW.withLock { $0 = (c.powerKW ?? 0) * 1000 }
                        site.commands.withLock { $0 += 1 }
                        return CommandAck(id: c.id, accepted: true)
                    }
                }))
        }
        let group = try MQTTUplinkSender.startGroup(senders, threads: threads)
        let start = Date().timeIntervalSince1970
        let end = start + duration
        var made: UInt64 = 0
        var nextReport = start + 10
        // The period is cut into slots; a site writes in its own slot of every period (all in slot 0
        // when aligned). 100 slots: 10 ms apart at 1 Hz.
        let slots = aligned ? 1 : max(1, min(100, list.count))
        var slot = 0
        var unitsJSON = [(setpoint: Double, text: [UInt8])](repeating: (.nan, []), count: list.count)
        FileHandle.standardError.write(Data("fleet: \(sites) sites → \(broker), \(rateHz) records/s each, \(duration) s\n".utf8))
        while true {
            let now = Date().timeIntervalSince1970
            if now >= end { break }
            // One telemetry record per site per tick, as bessd's recorder writes them.
            // The units' part changes only with a command: made again only then (the generator's own
            // CPU is taken from the same two cores as the fleet it measures).
            let part = slot % slots
            for i in (part * list.count / slots)..<((part + 1) * list.count / slots) {
                let site = list[i]
                let setpoint = site.setpointW.withLock { $0 }
                if unitsJSON[i].setpoint != setpoint {
                    unitsJSON[i] = (setpoint, Array(("[" + unitIDs.map { id in
                        "{\"id\":\"\(id)\",\"state\":\"running\",\"soc_percent\":60,\"soh_percent\":100,\"power_w\":\(setpoint / Double(units)),"
                            + "\"setpoint_w\":\(setpoint / Double(units)),\"allowed_charge_w\":100000,\"allowed_discharge_w\":100000,"
                            + "\"trips\":[],\"latched\":[],\"bms_online\":true,\"inverter_online\":true}"
                    }.joined(separator: ",") + "]").utf8))
                }
                let tail = unitsJSON[i].text
                _ = try? site.queue.append { seq in
                    Array("{\"seq\":\(seq),\"time\":\(now),\"mode\":\"simulation\",\"type\":\"telemetry\",\"frequency_hz\":50,\"cycle_p99_us\":0,\"overruns\":0,\"units\":".utf8)
                        + tail + [0x7D]
                }
                made += 1
            }
            if now >= nextReport {
                nextReport += 10
                let connected = senders.filter { $0.stats.connected }.count
                let acked = senders.reduce(UInt64(0)) { $0 + $1.stats.recordsAcknowledged }
                let problems = failures.withLock { $0 }
                FileHandle.standardError.write(Data(String(format: "fleet: t=%.0f s connected %d/%d, records made %llu, acknowledged %llu, problems logged %d%@\n",
                                                           now - start, connected, sites, made, acked, problems.count,
                                                           problems.count > 0 ? " (last: \(problems.last))" : "").utf8))
            }
            slot += 1
            let next = start + Double(slot) / Double(slots) / rateHz
            let pause = next - Date().timeIntervalSince1970
            if pause > 0 { Thread.sleep(forTimeInterval: pause) }
        }
        // A short drain: what is in flight may still be acknowledged.
        let drainEnd = Date().timeIntervalSince1970 + drainS
        while Date().timeIntervalSince1970 < drainEnd,
              senders.reduce(UInt64(0), { $0 + $1.stats.recordsAcknowledged }) < made {
            Thread.sleep(forTimeInterval: 0.2)
        }
        for site in list { site.queue.sync() }
        let stats = senders.map(\.stats)
        group.stop()
        let summary = FleetSummary(
            sites: sites, rateHz: rateHz, durationS: duration,
            recordsMade: made,
            recordsAcknowledged: stats.reduce(UInt64(0)) { $0 + $1.recordsAcknowledged },
            batchesPublished: stats.reduce(UInt64(0)) { $0 + $1.batchesPublished },
            sitesConnectedAtEnd: stats.filter(\.connected).count,
            connects: stats.reduce(UInt64(0)) { $0 + $1.connects },
            failures: stats.reduce(UInt64(0)) { $0 + $1.failures },
            commandsActedOn: list.reduce(0) { $0 + $1.commands.withLock { $0 } })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let data = try encoder.encode(summary)
        print(String(decoding: data, as: UTF8.self))
        if let report { try data.write(to: URL(fileURLWithPath: report)) }
    }
}

/// What a fleet run prints and writes to `--report`: one JSON object, keys sorted
/// (scripts/fleet-bench.sh sums its fields over the fleet's processes).
struct FleetSummary: Encodable {
    var sites: Int
    var rateHz: Double
    var durationS: Double
    var recordsMade: UInt64
    var recordsAcknowledged: UInt64
    var batchesPublished: UInt64
    var sitesConnectedAtEnd: Int
    var connects: UInt64
    var failures: UInt64
    var commandsActedOn: Int

    enum CodingKeys: String, CodingKey {
        case sites, connects, failures
        case rateHz = "rate_hz", durationS = "duration_s", recordsMade = "records_made"
        case recordsAcknowledged = "records_acknowledged", batchesPublished = "batches_published"
        case sitesConnectedAtEnd = "sites_connected_at_end", commandsActedOn = "commands_acted_on"
    }
}

/// A command queued at bess-aggregator (HTTP) → pushed over MQTT → bessd → the new setpoint on the
/// inverter's wire.
struct CommandPushLatency: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "command-push",
        abstract: "Aggregator queues a command → new setpoint on the inverter's wire, over MQTT (bessd's uplink transport: mqtt).")
    @Option(help: "Commands to time.") var commands = 100
    @OptionGroup var bessd: BenchBessdOptions
    @Option(help: "The broker bessd and the aggregator share: mqtt://host:port.") var broker: String
    @Option(help: "bess-aggregator's HTTP address, http://host:port.") var aggregator: String
    @Option(help: "Write one latency (ms) per line here.") var csv: String?

    func run() throws {
        let site = "PUSH_BENCH"
        let bench = try WireBench(periodMs: bessd.periodMs, canInterface: nil, bessdPath: bessd.path,
                                  extraConfig: "aggregator: {transport: mqtt, url: \"\(broker)\", site_id: \(site), interval_s: 1}")
        defer { bench.stop() }
        try bench.waitReady()
        bench.run(for: 3)
        var latencies: [Double] = []
        var misses = 0
        for i in 0..<commands {
            bench.run(for: Double.random(in: 0.35...0.75))
            let before = bench.lastCommanded
            let kw = i % 2 == 0 ? 40.0 : -40.0
            let body = "{\"id\":\"push-\(getpid())-\(i)\",\"kind\":\"power\",\"unit\":\"BENCH_01\",\"power_kw\":\(kw),"
                + "\"expires_unix\":\(Date().timeIntervalSince1970 + 30)}"
            let t = SystemClock.shared.now()
            post("\(aggregator)/v1/sites/\(site)/commands", body)
            if let w = bench.firstWrite(after: t, timeout: 3, { abs($0 - before) > 100 }) {
                latencies.append(milliseconds(w - t))
            } else {
                misses += 1
            }
        }
        try report("command_push_to_setpoint", latencies, misses: misses, csv: csv)
    }

    /// A POST on a plain socket (the aggregator is on loopback); the answer is read and dropped.
    func post(_ url: String, _ body: String) {
        guard let u = URLComponents(string: url), let host = u.host, let port = u.port else { return }
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr(host)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return }
        let request = "POST \(u.path) HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
            + "Connection: close\r\n\r\n\(body)"
        _ = request.withCString { send(fd, $0, strlen($0), 0) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        while recv(fd, &buffer, buffer.count, 0) > 0 {}
    }
}
