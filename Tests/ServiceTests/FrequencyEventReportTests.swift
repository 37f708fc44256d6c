import BessSystem
import ControlCore
import ControlProtocol
import Foundation
import Glibc
import Logging
@testable import Config
@testable import Cycle
@testable import Service
import Simulation
import TestSupport
import Testing
import Uplink

/// Every frequency-event assessment reported where issue 47 §3 lists: from the cycle's side of
/// `SharedState` to the journal, the uplink's spool, `bessctl events`, /metrics and the aggregator's
/// status page.
@Suite("Frequency events reported", .serialized)
struct FrequencyEventReportTests {
    /// An under-frequency event: 250 kW required at the response time, 180 kW delivered, unit 1
    /// tripped (each unit required 125 kW; D1 delivered 180 kW, D2 none); or, with `full`, delivered in
    /// full. Measured at the connection point; the worst cycle 90 kW short.
    static func assessment(_ sequence: UInt64, full: Bool = false) -> FrequencyEventAssessment {
        var units = FrequencyEventUnits()
        units.append(FrequencyEventUnitAssessment(unit: 0, requiredW: 125_000, deliveredW: full ? 125_000 : 180_000, requiredMeanW: 100_000,
                                                  deliveredMeanW: full ? 100_000 : 150_000, shortfallW: 0))
        units.append(FrequencyEventUnitAssessment(unit: 1, requiredW: 125_000, deliveredW: full ? 125_000 : 0, requiredMeanW: 100_000,
                                                  deliveredMeanW: full ? 100_000 : 0, shortfallW: full ? 0 : 125_000))
        return FrequencyEventAssessment(
            sequence: sequence, start: 1_800_000_000 + Double(sequence) * 100, end: 1_800_000_036 + Double(sequence) * 100,
            direction: .under, extremeHz: 49.712, maxRocofHzPerSecond: full ? 0.125 : .nan, preEventW: 20_000, requiredW: 250_000,
            deliveredW: full ? 250_000 : 180_000, requiredMeanW: 200_000, deliveredMeanW: full ? 200_000 : 150_000,
            shortfallW: full ? 0 : 70_000, cause: full ? .none : .unitTripped, causeCode: full ? nil : .inverterFault,
            causeUnit: full ? -1 : 1, score: full ? 1 : 0.75, metered: true, maxShortfallW: full ? 0 : 90_000, units: units)
    }

    /// A logger whose lines (message, then the journal's fields) are kept.
    static func collecting() -> (Logger, PILock<[String]>) {
        let lines = PILock<[String]>([])
        let logger = Logger(label: "test") { _ in LineLogHandler { line in lines.withLock { $0.append(line) } } }
        return (logger, lines)
    }

    @Test("the cycle publishes into preallocated storage; oldest first; past 16 the oldest dropped and counted")
    func sharedState() {
        let shared = SharedState(units: 2)
        let reserved = shared.contents.withLock { $0.frequencyEvents.pending.capacity }
        #expect(reserved >= FrequencyEventMailbox.capacity)
        #expect(shared.takeFrequencyEvents().assessments.isEmpty && shared.frequencyEventTally == FrequencyEventTally())
        for n in 1...3 { shared.publish(frequencyEvent: Self.assessment(UInt64(n))) }
        let three = shared.takeFrequencyEvents()
        #expect(three.assessments.map(\.sequence) == [1, 2, 3] && three.dropped == 0)
        #expect(shared.takeFrequencyEvents().assessments.isEmpty, "taken once")
        for n in 4...23 { shared.publish(frequencyEvent: Self.assessment(UInt64(n))) }
        #expect(shared.contents.withLock { $0.frequencyEvents.pending.capacity } == reserved, "no storage grown on the cycle's side")
        let bounded = shared.takeFrequencyEvents()
        #expect(bounded.assessments.map(\.sequence) == Array(8...23) && bounded.dropped == 4)
        #expect(shared.takeFrequencyEvents().dropped == 0, "the drop is reported once")
        let tally = shared.frequencyEventTally
        #expect(tally.count == 23 && tally.last?.sequence == 23, "the outstation's tally is not taken by the service")
    }

    /// Simulated dip for 10 s reaches SharedState.
    @Test("the cycle publishes the controller's assessment: a dip to 49.7 Hz is one under-frequency event")
    func cyclePublishes() throws {
        let c = try ConfigLoader.parse("""
            mode: simulation
            period_ms: 100
            bess_units:
              - {id: D1, capacity_kwh: 250, max_power_kw: 100}
              - {id: D2, capacity_kwh: 250, max_power_kw: 100}
            simulation: {frequency_profile: steps, base_hz: 50, amplitude_hz: 0.3, step_period_s: 10}
            """, file: "steps.yaml")
        let runner = try SiteRunner.make(configuration: c, startedAt: .zero) { _ in }
        let shared = SharedState(units: c.units.count)
        runner.attach(shared)
        var taken: [FrequencyEventAssessment] = []
        // 50 Hz for 10 s, 49.7 Hz for 10 s, 50 Hz again: the event ends 5 s after the return.
        for k in 1...300 {
            runner.run(now: MonotonicInstant(nanoseconds: Int64(k) * 100_000_000), lateness: .zero)
            taken += shared.takeFrequencyEvents().assessments
        }
        #expect(taken.count == 1, "\(taken)")
        let event = try #require(taken.first)
        #expect(event.sequence == 1 && event.direction == .under && abs(event.extremeHz - 49.7) < 0.01, "\(event)")
        // start and end are the wall clock's, which this test does not step: only their order is known.
        #expect(event.end >= event.start && event.start > 1_700_000_000, "\(event.start) … \(event.end)")
        #expect(shared.frequencyEventTally.count == 1)
    }

    /// MESSAGE_ID, BESS_* fields; the warning names direction, extreme, required and delivered, shortfall and cause.
    @Test("frequency-event journal entry: coded fields, a warning for a shortfall, a notice for a full response")
    func journal() {
        let (logger, lines) = Self.collecting()
        let reports = FrequencyEventReports(logger: logger)
        reports.record(([Self.assessment(1), Self.assessment(2, full: true)], 0), unitIDs: ["D1", "D2"], recorder: nil)
        let logged = lines.withLock { $0 }
        #expect(logged.count == 2)
        let short = logged.first ?? ""
        for text in ["FREQUENCY_EVENT 1: under-frequency to 49.712 Hz, 08:01:40–08:02:16 UTC (36 s)",
                     "required 250.0 kW at the response time, delivered 180.0 kW, short by 70.0 kW: unit D2 tripped (INVERTER_FAULT)",
                     "200.0 kW required and 150.0 kW delivered on average, score 0.75",
                     "MESSAGE_ID=\(MessageID.frequencyEvent)", "BESS_CODE=FREQUENCY_EVENT", "BESS_CAUSE=unit_tripped",
                     "BESS_CAUSE_CODE=INVERTER_FAULT", "BESS_CAUSE_UNIT=D2", "BESS_SHORTFALL_W=70000.0", "BESS_REQUIRED_W=250000.0",
                     "BESS_DELIVERED_W=180000.0", "BESS_EXTREME_HZ=49.712", "BESS_DIRECTION=under", "BESS_START=1800000100.0",
                     "PRIORITY=4", "BESS_METERED=true", "BESS_MAX_SHORTFALL_W=90000.0",
                     "D1 required_w=125000.0 delivered_w=180000.0 required_mean_w=100000.0 delivered_mean_w=150000.0 shortfall_w=0.0",
                     "D2 required_w=125000.0 delivered_w=0.0 required_mean_w=100000.0 delivered_mean_w=0.0 shortfall_w=125000.0",
                     "worst cycle short by 90.0 kW; measured at the connection point",
                     "per unit, required/delivered kW at the response time: D1 125.0/180.0, D2 125.0/0.0"] {
            #expect(short.contains(text), "\(text) in \(short)")
        }
        #expect(!short.contains("BESS_ROCOF"), "an unknown ROCOF is left out, not written as nan")
        #expect(short.contains("BESS_UNIT_RESPONSE=D1 ") && !short.contains("BESS_UNITS_OMITTED"), "\(short)")
        let full = logged.last ?? ""
        #expect(full.contains("delivered 250.0 kW: full response") && full.contains("(ROCOF up to 0.125 Hz/s)") && full.contains("PRIORITY=5"))
        #expect(!full.contains("BESS_CAUSE"), "\(full)")
        let dropped = Self.collecting()
        FrequencyEventReports(logger: dropped.0).record(([], 3), unitIDs: [], recorder: nil)
        #expect(dropped.1.withLock { $0 }.first?.contains("BESS_CODE=FREQUENCY_EVENTS_DROPPED") == true)
    }

    /// The last one's score and shortfall.
    @Test("bessctl keeps the last 100 events, newest last; /metrics counts all and shows the last's figures")
    func listAndMetrics() {
        let reports = FrequencyEventReports(logger: Logger(label: "test") { _ in SwiftLogNoOpLogHandler() })
        var before = MetricsText()
        reports.metrics(into: &before)
        #expect(before.text.contains("bessd_frequency_events_total 0.0\n"))
        #expect(!before.text.contains("\nbessd_frequency_event_score ") && !before.text.contains("\nbessd_frequency_event_shortfall_watts "),
                "no score or shortfall before the first event")
        reports.record(((1...104).map { Self.assessment(UInt64($0)) } + [Self.assessment(105, full: true)], 2), unitIDs: ["D1", "D2"],
                       recorder: nil)
        let reply = reports.reply()
        #expect(reply.events.count == 100 && reply.events.first?.sequence == 6 && reply.events.last?.sequence == 105)
        #expect(reply.total == 107, "the two dropped count too")
        var m = MetricsText()
        reports.metrics(into: &m)
        #expect(m.text.contains("bessd_frequency_events_total 107.0\n"))
        #expect(m.text.contains("bessd_frequency_event_score 1.0\n") && m.text.contains("bessd_frequency_event_shortfall_watts 0.0\n"))
        reports.record(([Self.assessment(106)], 0), unitIDs: ["D1", "D2"], recorder: nil)
        var after = MetricsText()
        reports.metrics(into: &after)
        #expect(after.text.contains("bessd_frequency_event_score 0.75\n") && after.text.contains("bessd_frequency_event_shortfall_watts 70000.0\n"))
        #expect(after.text.contains("bessd_frequency_event_max_shortfall_watts 90000.0\n"), "\(after.text)")
        #expect(after.text.contains("bessd_frequency_event_unit_shortfall_watts{unit=\"D1\"} 0.0\n")
                && after.text.contains("bessd_frequency_event_unit_shortfall_watts{unit=\"D2\"} 125000.0\n"))
    }

    @Test("a frequency assessment shows in bessctl events, the spool and /metrics with the same fields")
    func endToEnd() throws {
        let directory = NSTemporaryDirectory() + "bessd-frequency-events-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let socket = directory + "/control.sock"
        let configuration = try ConfigLoader.parse("""
            mode: simulation
            period_ms: 100
            control_socket: \(socket)
            state_directory: \(directory)/state
            bess_units:
              - {id: D1, capacity_kwh: 250, max_power_kw: 100}
              - {id: D2, capacity_kwh: 250, max_power_kw: 100}
            aggregator: {url: "http://127.0.0.1:9/bess", site_id: EVENT_SITE}
            """, file: "events.yaml")
        let (logger, lines) = Self.collecting()
        let daemon = try Daemon(configuration: configuration, configPath: nil, logger: logger, say: { _ in }) {
            started, output throws(RunError) in try SiteRunner.make(configuration: configuration, startedAt: started, output: output)
        }
        daemon.operatorServer.start()
        defer { daemon.operatorServer.stop() }
        let bessctl = { (arguments: [String]) throws -> (status: Int32, out: String, err: String) in
            try Package.run("bessctl", arguments + ["--socket", socket])
        }
        #expect(try bessctl(["events"]).out.contains("no frequency event since bessd started"))

        // What the cycle does with a drained assessment, then the service loop's round.
        daemon.shared.publish(frequencyEvent: Self.assessment(1))
        let spool = try #require(daemon.spool)
        spool.beginRound()
        daemon.journalFlush.logEvents(now: SystemClock.shared.now())
        spool.endRound()

        let listed = try bessctl(["events", "--json"])
        #expect(listed.status == 0, "\(listed.err)")
        let list = try #require(try JSONSerialization.jsonObject(with: Data(listed.out.utf8)) as? [[String: Any]], "\(listed.out)")
        #expect(list.count == 1)
        let entry = try #require(list.first)
        #expect(entry["start"] as? Double == 1_800_000_100 && entry["end"] as? Double == 1_800_000_136)
        #expect(entry["extreme_hz"] as? Double == 49.712 && entry["direction"] as? String == "under")
        #expect(entry["required_w"] as? Double == 250_000 && entry["delivered_w"] as? Double == 180_000)
        #expect(entry["required_mean_w"] as? Double == 200_000 && entry["delivered_mean_w"] as? Double == 150_000)
        #expect(entry["shortfall_w"] as? Double == 70_000 && entry["score"] as? Double == 0.75)
        #expect(entry["cause"] as? String == "unit_tripped" && entry["cause_code"] as? String == "INVERTER_FAULT")
        #expect(entry["cause_unit"] as? String == "D2" && entry["max_rocof_hz_per_s"] is NSNull)
        #expect(entry["metered"] as? Bool == true && entry["max_shortfall_w"] as? Double == 90_000 && entry["units_omitted"] as? Int == 0)
        let units = try #require(entry["units"] as? [[String: Any]], "\(entry)")
        #expect(units.map { $0["unit"] as? String } == ["D1", "D2"])
        #expect(units[1]["required_w"] as? Double == 125_000 && units[1]["delivered_w"] as? Double == 0
                && units[1]["required_mean_w"] as? Double == 100_000 && units[1]["delivered_mean_w"] as? Double == 0
                && units[1]["shortfall_w"] as? Double == 125_000)

        // The spool's record carries the same fields with the same values.
        let payloads = try spool.pending(limit: 100).map(\.payload)
        let records = try payloads.compactMap { try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any] }
        let record = try #require(records.first { $0["type"] as? String == "frequency_event" }, "\(records.map { $0["type"] ?? "?" })")
        for (key, value) in entry {
            #expect((record[key] as? NSObject) == (value as? NSObject), "\(key): \(record[key] ?? "absent") in the record, \(value) listed")
        }
        let decoded = try payloads.map { try JSONDecoder().decode(UplinkRecord.self, from: Data($0)) }
        #expect(decoded.contains { if case .frequencyEvent(let e) = $0.body { e.sequence == 1 && e.causeUnit == "D2" } else { false } })

        let table = try bessctl(["events"])
        #expect(table.out.contains("1 frequency event since bessd started"), "\(table.out)")
        let row = table.out.split(separator: "\n").first { $0.hasPrefix("1  ") }.map(String.init) ?? ""
        for cell in ["36", "under", "49.712", "250.0", "180.0", "70.0", "200.0 / 150.0", "90.0", "meter", "0.75", "unit_tripped INVERTER_FAULT D2"] {
            #expect(row.contains(cell), "\(cell) in \(row)")
        }
        #expect(table.out.contains("units of event 1"), "\(table.out)")
        let unitRow = table.out.split(separator: "\n").first { $0.hasPrefix("D2 ") }.map(String.init) ?? ""
        for cell in ["125.0", "0.0", "100.0 / 0.0"] { #expect(unitRow.contains(cell), "\(cell) in \(unitRow)") }
        #expect(lines.withLock { $0 }.contains { $0.contains("FREQUENCY_EVENT 1: under-frequency") })
        let metrics = daemon.operatorServer.metricsText()
        #expect(metrics.contains("bessd_frequency_events_total 1.0\n") && metrics.contains("bessd_frequency_event_shortfall_watts 70000.0\n"))
    }

    @Test("the aggregator page lists frequency events; a record with markup is refused with its code")
    func aggregatorPage() throws {
        let directory = NSTemporaryDirectory() + "bess-aggregator-events-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let port = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(port)",
                                         "--database", directory + "/agg.sqlite"], output: directory + "/aggregator.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(port) })
        let base = "http://127.0.0.1:\(port)"
        func record(_ seq: Int, unit: String, cause: String, shortfall: Double) -> String {
            "{\"seq\":\(seq),\"time\":1800000200,\"type\":\"frequency_event\",\"sequence\":\(seq),\"start\":1800000000,\"end\":1800000036,"
                + "\"direction\":\"under\",\"extreme_hz\":49.712,\"max_rocof_hz_per_s\":null,\"pre_event_w\":0,\"required_w\":250000,"
                + "\"delivered_w\":\(250_000 - shortfall),\"required_mean_w\":200000,\"delivered_mean_w\":150000,\"shortfall_w\":\(shortfall),"
                + "\"cause\":\(cause),\"cause_code\":null,\"cause_unit\":\(unit),\"score\":0.75,\"metered\":false,\"max_shortfall_w\":\(shortfall),"
                + "\"units\":[{\"unit\":\"D1\",\"required_w\":250000,\"delivered_w\":\(250_000 - shortfall),\"required_mean_w\":200000,"
                + "\"delivered_mean_w\":150000,\"shortfall_w\":\(shortfall)}],\"units_omitted\":0}"
        }
        func post(_ records: [String]) throws -> String {
            let body = "{\"protocol_version\":1,\"site\":\"EVENT_SITE\",\"acks\":[],\"records\":[\(records.joined(separator: ","))]}"
            try body.write(toFile: directory + "/batch.json", atomically: true, encoding: .utf8)
            return try shell(["curl", "-s", "-m", "10", "-X", "POST", "--data-binary", "@\(directory)/batch.json",
                              "\(base)/v1/sites/EVENT_SITE/records"]).out
        }
        #expect(try post([record(1, unit: "\"D1\"", cause: "\"soc_limit\"", shortfall: 61_000),
                          record(2, unit: "null", cause: "null", shortfall: 0)]).contains("\"acked_seq\":2"))
        let refused = try post([record(3, unit: "\"<script>alert(1)</script>\"", cause: "\"soc_limit\"", shortfall: 1)])
        #expect(refused.contains("UNIT_ID_INVALID"), "\(refused)")
        let page = try shell(["curl", "-s", "-m", "10", "\(base)/"]).out
        let section = page.components(separatedBy: "<h3>Frequency events</h3>").dropFirst().first?.components(separatedBy: "</table>").first ?? ""
        #expect(section.contains("soc_limit D1") && section.contains("<td class=trip>61.0</td>"), "\(section)")
        #expect(section.contains("<td class=l>D1 250.0 / 189.0</td>"), "each unit's required and delivered: \(section)")
        #expect(section.components(separatedBy: "<tr>").count - 1 == 3, "a header and two events")
        #expect(!page.contains("<script>"), "nothing a peer sent reaches the page unescaped")
    }
}
