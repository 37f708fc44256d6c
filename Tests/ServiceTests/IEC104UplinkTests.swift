import BessBase
import BessSystem
import Config
import ControlCore
@testable import Cycle
import Foundation
import Glibc
import IEC104
import Logging
import Outstation
@testable import Service
import Synchronization
import TestSupport
import Testing
import Uplink
import UplinkIngest

/// Issue 46 §3: every IEC 104 command and its outcome to the journal, /metrics and the uplink.
@Suite("IEC 104 command outcomes in the journal, /metrics and the uplink", .serialized)
struct IEC104UplinkTests {
    /// The events of kind `kind` that bess-aggregator stored for `site` (its SQLite database), in seq order.
    static func storedEvents(_ database: String, site: String, kind: String) -> [[String: Any]] {
        guard let rows = try? shell(["sqlite3", database, "SELECT body FROM records WHERE site = '\(site)' AND type = 'event' ORDER BY seq"]),
              rows.status == 0
        else { return [] }
        return rows.out.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }.filter { $0["kind"] as? String == kind }
    }

    /// Accepted AGC setpoint, one outside the band, a select, its execute and a cancel of nothing: each arrives with code, IOA, value, peer and outcome.
    @Test("IEC 104 command outcomes reach the aggregator as coded events counted in /metrics; AGC expiry too")
    func outcomesReachTheAggregator() throws {
        let dir = NSTemporaryDirectory() + "bessd-iec104-uplink-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let aggregatorPort = Loopback.freePort(), port = Loopback.freePort(), metricsPort = Loopback.freePort()
        let aggregator = try Background([Package.executable("bess-aggregator")!.path, "--listen", "127.0.0.1:\(aggregatorPort)",
                                         "--database", dir + "/agg.sqlite"], output: dir + "/aggregator.log")
        defer { aggregator.stop() }
        #expect(waitFor(seconds: 30) { Loopback.listening(aggregatorPort) }, "bess-aggregator never listened: \(aggregator.text)")
        // AGC expires 2 s after its last target: the test waits for that event too.
        let yaml = IEC104DaemonTests.yaml(port: port).replacingOccurrences(of: "agc: {expiry_s: 30}", with: "agc: {expiry_s: 2}") + """

            metrics_listen: 127.0.0.1:\(metricsPort)
            aggregator: {url: "http://127.0.0.1:\(aggregatorPort)", interval_s: 0.2, site_id: IEC_SITE}
            """
        let daemon = try RunningDaemon(yaml: yaml)
        var connected: RawControlStation?
        #expect(waitFor(seconds: 15) { connected = try? RawControlStation(port: port); return connected != nil }, "bessd listens")
        let station = try #require(connected)
        station.send(.unnumbered(.startDataTransferActivation))
        #expect(station.asdu { $0.type == .endOfInitialisation } != nil)

        let inService = try IEC104DaemonTests.command(station, .singleCommand(SingleCommand(on: true)), at: 3101)
        #expect(inService.map(\.cause.cause) == [.activationConfirmation, .activationTermination], "AGC in service: \(inService)")
        // The band is ± the units' 200 kW: 0.5 MW is outside it, 0.05 MW inside.
        let outside = try IEC104DaemonTests.command(station, .setpointFloat(0.5, SetpointQualifier(select: false)), at: 3001)
        #expect(outside.count == 1 && outside.first?.cause.negative == true, "0.5 MW refused: \(outside)")
        let inside = try IEC104DaemonTests.command(station, .setpointFloat(0.05, SetpointQualifier(select: false)), at: 3001)
        #expect(inside.map(\.cause.cause) == [.activationConfirmation, .activationTermination] && !inside.contains { $0.cause.negative },
                "0.05 MW accepted: \(inside)")

        // Select-before-operate of the site setpoint: the select and the execute accepted; a cancel
        // with nothing selected refused.
        let select = try IEC104DaemonTests.command(station, .setpointFloat(0.01, SetpointQualifier(select: true)), at: 3002)
        #expect(select.count == 1 && select.first?.cause.negative == false, "select: \(select)")
        let execute = try IEC104DaemonTests.command(station, .setpointFloat(0.01, SetpointQualifier(select: false)), at: 3002)
        #expect(execute.map(\.cause.cause) == [.activationConfirmation, .activationTermination], "execute: \(execute)")
        try station.send(ASDU(type: .setpointFloat, cause: CauseOfTransmission(cause: .deactivation), commonAddress: 7,
                              objects: [InformationObject(address: 3002, element: .setpointFloat(0.01, SetpointQualifier(select: true)))]))
        let cancel = station.asdu { $0.type == .setpointFloat }
        #expect(cancel?.cause.cause == .deactivationConfirmation && cancel?.cause.negative == true, "cancel: \(String(describing: cancel))")

        var commands: [[String: Any]] = []
        let arrived = waitFor(seconds: 20) {
            commands = Self.storedEvents(dir + "/agg.sqlite", site: "IEC_SITE", kind: OutstationAudit.kind)
            return commands.count >= 6
        }
        #expect(arrived, "the aggregator's iec104_command events: \(commands)")
        func message(_ event: [String: Any]) -> String { event["message"] as? String ?? "" }
        let setpoints = commands.filter { message($0).contains("(IOA 3001)") }
        let refused = setpoints.first { $0["code"] as? String == "IEC104_COMMAND_REFUSED" }
        let accepted = setpoints.first { $0["code"] as? String == "IEC104_COMMAND" }
        for (event, value, outcome) in [(refused, "= 0.5 ", "refused, AGC_OUTSIDE_BAND"), (accepted, "= 0.05 ", "accepted, executed")] {
            let text = event.map(message) ?? ""
            #expect(text.contains(value) && text.contains("from 127.0.0.1:") && text.contains("(group sldc)") && text.contains(outcome),
                    "event \(String(describing: event))")
            #expect(event?["unit"] as? String == "site")
        }
        let siteSetpoint = commands.filter { message($0).contains("(IOA 3002) = 0.01 ") }.map { "\($0["code"] ?? "-") \(message($0))" }
        #expect(siteSetpoint.count == 3 && siteSetpoint[0].hasPrefix("IEC104_COMMAND IEC 104 select ") && siteSetpoint[1].hasPrefix("IEC104_COMMAND IEC 104 execute ")
                    && siteSetpoint[2].hasPrefix("IEC104_COMMAND_REFUSED ") && siteSetpoint[2].contains("refused, COMMAND_NOT_SELECTED"),
                "select, execute, cancel: \(siteSetpoint)")
        #expect(commands.filter { $0["code"] as? String == "IEC104_COMMAND" }.count == 4, "AGC in service, its target, select, execute: \(commands)")

        // /metrics: by result and code (the refusal's code), beside the totals.
        #expect(metric(metricsPort, #"bessd_iec104_command_outcomes_total{result="accepted",code="IEC104_COMMAND"}"#) == 4)
        #expect(metric(metricsPort, #"bessd_iec104_command_outcomes_total{result="refused",code="AGC_OUTSIDE_BAND"}"#) == 1)
        #expect(metric(metricsPort, #"bessd_iec104_command_outcomes_total{result="refused",code="COMMAND_NOT_SELECTED"}"#) == 1)
        #expect(metric(metricsPort, #"bessd_iec104_commands_total{result="refused"}"#) == 2)

        // Not refreshed within expiry_s: the journal's AGC_SIGNAL_LOST is an uplink event with that code.
        var lost: [[String: Any]] = []
        #expect(waitFor(seconds: 20) {
            lost = Self.storedEvents(dir + "/agg.sqlite", site: "IEC_SITE", kind: "agcSignalLost")
            return !lost.isEmpty
        }, "no agcSignalLost event at the aggregator")
        #expect(lost.first?["code"] as? String == "AGC_SIGNAL_LOST", "\(lost)")

        daemon.signal(SIGTERM)
        let (_, text) = daemon.finish()
        let journal = text.split(separator: "\n").filter { $0.contains("BESS_IOA=3001") && $0.contains("BESS_REASON=AGC_OUTSIDE_BAND") }
        #expect(journal.count == 1 && journal.allSatisfy { $0.contains("BESS_PEER=127.0.0.1:") && $0.contains("BESS_GROUP=sldc")
                    && $0.contains("BESS_VALUE=0.5") && $0.contains("BESS_RESULT=refused") && $0.contains("BESS_CODE=IEC104_COMMAND_REFUSED") },
                "the refusal's journal line: \(journal)")
    }

    @Test("the aggregator takes IEC 104 and AGC event codes, and refuses codes that are neither nor trips")
    func ingestTakesTheEventCodes() {
        func batch(_ code: String) -> RecordBatch {
            RecordBatch(site: "IEC_SITE", records: [UplinkRecord(seq: 1, time: 1, body: .event(unit: "site", kind: OutstationAudit.kind, code: code, message: "m"))],
                        acks: [])
        }
        for code in [OutstationLogCode.command.rawValue, OutstationLogCode.commandRefused.rawValue, "AGC_SIGNAL_LOST"] {
            #expect(IngestRules.check(batch(code)) == nil, "\(code)")
        }
        #expect(IngestRules.check(batch("IEC104_CONNECTED"))?.code == .tripCodeInvalid)
        // A unit's trips stay trip codes only.
        let telemetry = UnitTelemetry(id: "U1", state: "running", socPercent: 50, sohPercent: nil, powerW: 0, setpointW: 0, voltageV: nil,
                                      currentA: nil, temperatureMinC: nil, temperatureMaxC: nil, allowedChargeW: 1, allowedDischargeW: 1,
                                      trips: ["IEC104_COMMAND"], latched: [], bmsOnline: true, inverterOnline: true)
        let trips = RecordBatch(site: "IEC_SITE", records: [UplinkRecord(seq: 1, time: 1, body: .telemetry(frequencyHz: 50, cycleP99Us: 1, overruns: 0,
                                                                                                            units: [telemetry]))], acks: [])
        #expect(IngestRules.check(trips)?.code == .tripCodeInvalid)
    }

    /// The inbox is bounded with its drops counted.
    @Test("outstation outcomes reach the uplink escaped, bounded and counted by code; other log codes pass by")
    func auditPostsEscapedAndBounded() {
        let inbox = RecordInbox(capacity: 3)
        let audit = OutstationAudit(inbox: inbox, wakeup: nil)
        let subject = "CN=sldc\n\u{1B}[31mforged line" + String(repeating: "x", count: 600)
        audit.note(.commandRefused, "IEC 104 execute agcSetpoint (IOA 3001) = 9 from \(subject) (group sldc): refused, AGC_OUTSIDE_BAND: outside",
                   [.reason: "AGC_OUTSIDE_BAND"])
        audit.note(.command, "accepted", [.reason: "executed"])
        audit.note(.commandRefused, "refused", [.reason: "lower case\n"])
        audit.note(.connected, "not a command", [:])
        let taken = inbox.take()
        #expect(taken.records.count == 3 && taken.dropped == 0)
        guard case let .event(unit, kind, code, message)? = taken.records.first?.body else {
            Issue.record("no event: \(taken.records)")
            return
        }
        #expect(unit == "site" && kind == "iec104_command" && code == "IEC104_COMMAND_REFUSED")
        #expect(message.hasPrefix("IEC 104 execute agcSetpoint (IOA 3001) = 9 from CN=sldc\\u{a}\\u{1b}[31mforged line"), "\(message.prefix(120))")
        #expect(message.unicodeScalars.allSatisfy { (0x20...0x7E).contains($0.value) || $0 == "…" } && message.hasSuffix("…"))
        #expect(message.count < OutstationAudit.messageLimit + 40)
        var m = MetricsText()
        audit.metrics(into: &m)
        #expect(m.text.contains(#"bessd_iec104_command_outcomes_total{result="accepted",code="IEC104_COMMAND"} 1"#), "\(m.text)")
        #expect(m.text.contains(#"bessd_iec104_command_outcomes_total{result="refused",code="AGC_OUTSIDE_BAND"} 1"#))
        #expect(m.text.contains(#"bessd_iec104_command_outcomes_total{result="refused",code="OTHER"} 1"#), "an odd reason is not a label")
        for n in 0..<5 { inbox.post(.spoolDrop(count: UInt64(n))) }
        let bounded = inbox.take()
        #expect(bounded.records.map(\.body) == [.spoolDrop(count: 2), .spoolDrop(count: 3), .spoolDrop(count: 4)] && bounded.dropped == 2)
        #expect(inbox.take().records.isEmpty)
    }

    /// 30 refusals: 20 journal lines and one IEC104_LOG_SUPPRESSED of 10; /metrics counts 30 by code; the uplink inbox gets 20 events and one with the count of the other 10.
    @Test("refused commands are journalled up to the budget, then summarised; /metrics and the uplink count all")
    func refusalsPastTheJournalBudgetStillAudited() throws {
        let inbox = RecordInbox()
        let audit = OutstationAudit(inbox: inbox, wakeup: nil)
        let clock = ManualClock()
        var settings = OutstationSettings()
        settings.port = 0
        settings.commonAddress = 7
        // The group may not command the site setpoint: every one is refused COMMAND_NOT_ALLOWED.
        settings.groups = [IEC104Group(name: "sldc", commands: [.agc])]
        let journal = Mutex<[(code: OutstationLogCode, fields: [String: String])]>([])
        let entries = Mutex<[OutstationAuditEntry]>([])
        let description = StationDescription(ratingsW: [1e5, 1e5], capacitiesWh: [2.5e5, 2.5e5], hasMeter: false, frequencyResponseEnabled: false)
        let server = OutstationServer(settings: settings, description: description, shared: SharedState(units: 2), clock: clock,
                                      audit: { entry in entries.withLock { $0.append(entry) }; audit.record(entry) }) { notice in journal.withLock { $0.append((notice.outstationCode!, notice.fieldsByName)) } }
        try server.start()
        defer { server.stop() }
        let station = try RawControlStation(port: server.port)
        station.send(.unnumbered(.startDataTransferActivation))
        #expect(station.asdu { $0.type == .endOfInitialisation } != nil)
        for _ in 0..<30 {
            try station.send(ASDU(type: .setpointFloat, cause: CauseOfTransmission(cause: .activation), commonAddress: 7,
                                  objects: [InformationObject(address: 3002, element: .setpointFloat(0.01, SetpointQualifier(select: false)))]))
        }
        #expect(waitFor { server.counters.commandsRefused.load(ordering: .relaxed) == 30 })
        func lines(_ code: OutstationLogCode) -> [[String: String]] { journal.withLock { $0.filter { $0.code == code }.map(\.fields) } }
        #expect(lines(.commandRefused).count == OutstationServer.journalLines)
        #expect(waitFor { entries.withLock { $0.count } == 30 }, "one audit entry per command, journalled or not")
        let outcomes = entries.withLock { $0 }.compactMap { if case let .outcome(_, _, fields, journalled) = $0 { (fields, journalled) } else { nil } }
        #expect(outcomes.count == 30 && outcomes.filter(\.1).count == OutstationServer.journalLines)
        #expect(outcomes.first.map { $0.0[.reason] == "COMMAND_NOT_ALLOWED" && $0.0[.result] == "refused" && $0.0[.ioa] == "3002" } == true,
                "the audit's typed fields are the journal line's: \(outcomes.first.map { $0.0 } ?? [:])")
        var m = MetricsText()
        audit.metrics(into: &m)
        #expect(m.text.contains(#"bessd_iec104_command_outcomes_total{result="refused",code="COMMAND_NOT_ALLOWED"} 30"#), "\(m.text)")
        let written = inbox.take().records.map(\.body)
        #expect(written.count == OutstationServer.journalLines
                    && written.allSatisfy { if case let .event(_, kind, code, _) = $0 { kind == OutstationAudit.kind && code == "IEC104_COMMAND_REFUSED" } else { false } },
                "\(written)")

        clock.advance(by: OutstationServer.journalWindow)
        #expect(waitFor { !lines(.suppressed).isEmpty })
        #expect(lines(.suppressed).map { $0["BESS_REFUSED_COMMANDS"] } == ["10"], "\(lines(.suppressed))")
        var summary: [RecordBody] = []
        #expect(waitFor { summary += inbox.take().records.map(\.body); return !summary.isEmpty })
        guard summary.count == 1, case let .event(_, kind, code, message) = summary[0] else {
            Issue.record("one summary event: \(summary)")
            return
        }
        #expect(kind == OutstationAudit.kind && code == "IEC104_COMMAND_REFUSED" && message.contains("10 more commands from 127.0.0.1 refused"), "\(message)")
    }

    @Test("the inbox is a ring: past capacity it keeps the newest, oldest first, and counts the dropped")
    func inboxRingKeepsTheNewestInOrder() {
        let inbox = RecordInbox(capacity: 4)
        for n in 0..<3 { inbox.post(.spoolDrop(count: UInt64(n))) }
        #expect(inbox.take().records.map(\.body) == (0..<3).map { .spoolDrop(count: UInt64($0)) })
        for n in 3..<10 { inbox.post(.spoolDrop(count: UInt64(n))) }
        let wrapped = inbox.take()
        #expect(wrapped.records.map(\.body) == (6..<10).map { .spoolDrop(count: UInt64($0)) } && wrapped.dropped == 3)
        inbox.post(.spoolDrop(count: 10))
        let after = inbox.take()
        #expect(after.records.map(\.body) == [.spoolDrop(count: 10)] && after.dropped == 0)
    }
}
