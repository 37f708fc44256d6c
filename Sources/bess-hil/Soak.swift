import ArgumentParser
import BessSystem
import Config
import ControlCore
import ControlProtocol
import Cycle
import Foundation
import Glibc

/// The soak's timeline: one fault every `faultEvery` seconds, cycling through every fault kind the
/// plant can inject, a reload every `reloadEvery` seconds (the droop alternating 4 % ↔ 5 %), and an
/// uplink outage (bess-aggregator killed, started again `outageLength` later on the same port and
/// database) every `outageEvery` seconds, under a constant 30 kW operator override. It is written
/// as an ordinary scenario file, so `bess-hil scenario` could replay it and its expectations are
/// judged by the same code.
struct SoakPlan {
    var seconds: Double
    var periodMs: Int
    var faultEvery: Double = 30
    var reloadEvery: Double = 300
    var outageEvery: Double = 300
    var outageLength: Double = 60
    var overrideKW = 30.0
    /// No fault in the first and last `quiet` seconds: start-up, and the uplink's backlog draining.
    var quiet = 30.0
    /// The kinds cycled through: every kind, unless the run has no CAN.
    var kinds = FaultInjection.Kind.allCases

    /// The kinds only a BMS on the wire can show (the plant sends its frames late, malformed or
    /// out of range, or takes the link down); without CAN bessd simulates the BMS itself.
    static let canKinds: Set<FaultInjection.Kind> = [.bmsDelay, .bmsGarbage, .bmsOutOfRange, .canBusOff]

    /// What a fault should do to bessd, as the soak judges it.
    enum Outcome {
        /// The code becomes active within `raiseBy` s of the fault's start and is gone `clearBy` s
        /// after it (latching codes: latched, then cleared by an operator reset at `clearBy` − 5 s).
        case code(String, latching: Bool, raiseBy: Double, clearBy: Double)
        /// Malformed frames are refused one by one and counted; bessd keeps running at full power.
        case framesRefused
        /// Within what bessd tolerates by design: no trip, full power.
        case tolerated(String)
    }

    struct Event {
        var kind: FaultInjection.Kind
        var at: Double
        var duration: Double
        /// Extra keys of the timeline entry (`delay_s`, `group`, `bms`), in YAML flow style.
        var extra: String
        var outcome: Outcome
    }

    /// How each fault kind is injected and what it must do. Durations are chosen so that each
    /// fault has cleared (back-off and hold times included) before the next one starts.
    static func shape(_ kind: FaultInjection.Kind) -> (duration: Double, extra: String, outcome: Outcome) {
        switch kind {
        case .bmsSilence: (8, "", .code("BMS_COMM_LOST", latching: false, raiseBy: 6, clearBy: 26))
        case .bmsDelay: (8, "delay_s: 4, ", .code("BMS_COMM_LOST", latching: false, raiseBy: 8, clearBy: 26))
        case .bmsGarbage: (8, "", .framesRefused)
        case .bmsOutOfRange: (8, "", .code("BMS_COMM_LOST", latching: false, raiseBy: 8, clearBy: 26))
        case .canBusOff: (8, "", .code("BMS_COMM_LOST", latching: false, raiseBy: 8, clearBy: 26))
        case .thermalRunaway: (5, "", .code("THERMAL_RUNAWAY", latching: true, raiseBy: 12, clearBy: 50))
        case .inverterFault: (8, "", .code("INVERTER_FAULT", latching: false, raiseBy: 3, clearBy: 26))
        case .modbusSilence: (8, "", .code("INVERTER_COMM_LOST", latching: false, raiseBy: 7, clearBy: 27))
        case .modbusDelay: (8, "delay_s: 0.5, ", .code("INVERTER_COMM_LOST", latching: false, raiseBy: 8, clearBy: 27))
        case .bmsValues: (8, "bms: {protections: [overtemperature]}, ", .code("BMS_PROTECTION", latching: false, raiseBy: 3, clearBy: 26))
        case .frequencyLoss: (8, "", .code("FREQUENCY_LOST", latching: false, raiseBy: 5, clearBy: 20))
        case .bmsGroupSilence: (10, "group: cells, ", .code("BMS_GROUP_MISSING", latching: false, raiseBy: 9, clearBy: 22))
        case .meterSilence: (8, "", .code("METER_STALE", latching: false, raiseBy: 7, clearBy: 27))
        case .meterDelay: (8, "delay_s: 1, ", .tolerated("a reading 1 s behind is within stale_after_s (3 s): no METER_STALE, full power"))
        case .meterGarbage: (8, "", .code("METER_STALE", latching: false, raiseBy: 7, clearBy: 27))
        }
    }

    var events: [Event] {
        var list: [Event] = []
        var slot = quiet
        while slot + faultEvery <= seconds - quiet {
            let kind = kinds[list.count % kinds.count]
            let s = Self.shape(kind)
            list.append(Event(kind: kind, at: slot + 2, duration: s.duration, extra: s.extra, outcome: s.outcome))
            slot += faultEvery
        }
        return list
    }

    var reloads: [Double] { stride(from: reloadEvery, to: seconds - quiet, by: reloadEvery).map { $0 } }
    var outages: [Double] {
        stride(from: outageEvery / 2, to: seconds - quiet - outageLength, by: outageEvery).map { $0 }
    }

    /// The scenario file: the rig with a site meter, a 10 ms period, the timeline and the expectations.
    func scenarioYAML(rig: String) -> String {
        func n(_ v: Double) -> String { v.formatted(.number.grouping(.never).precision(.fractionLength(0...3))) }
        var y = """
        # Generated by `bess-hil soak` (see docs/soak.md): every fault kind in turn, reloads and uplink outages.
        name: soak
        description: "\(n(seconds / 60)) min at \(periodMs) ms: a fault every \(n(faultEvery)) s (every kind), \
        a reload every \(n(reloadEvery)) s, an uplink outage of \(n(outageLength)) s every \(n(outageEvery)) s"
        \(kinds.contains(where: Self.canKinds.contains) ? "requires: [can]" : "# no CAN: bessd simulates the BMS")
        rig: \(rig)
        duration_s: \(n(seconds))
        config:
          period_ms: \(periodMs)
          realtime: {priority: 60, lock_memory: true}   # as config/bessd.yaml ships
          site:
            meter: {protocol: sunspec, stale_after_s: 3}
        timeline:
          - {at_s: 1, override_kw: \(n(overrideKW)), for_s: \(n(seconds + 600))}

        """
        for e in events {
            y += "  - {at_s: \(n(e.at)), fault: \(e.kind.rawValue), \(e.extra)for_s: \(n(e.duration))}\n"
            if case .code(_, true, _, let clearBy) = e.outcome {
                y += "  - {at_s: \(n(e.at + clearBy - 5)), reset: true}\n"
            }
        }
        for (i, at) in reloads.enumerated() {
            let droop = i % 2 == 0 ? "4.0" : "5.0"
            y += "  - {at_s: \(n(at)), reload: {grid_integration: {droop_settings: {droop_percent: \(droop)}}}, label: \"reload: droop \(droop) %\"}\n"
        }
        for at in outages {
            y += "  - {at_s: \(n(at)), aggregator: stop}\n"
            y += "  - {at_s: \(n(at + outageLength)), aggregator: start}\n"
        }
        y += "expect:\n"
        y += "  - {from_s: 0, to_s: \(n(seconds)), bessd: up, why: \"bessd runs the whole soak\"}\n"
        for e in events {
            let k = e.kind.rawValue
            switch e.outcome {
            case .code(let code, let latching, let raiseBy, let clearBy):
                y += "  - {after_s: \(n(e.at)), by_s: \(n(e.at + raiseBy)), \(latching ? "latched" : "active"): [\(code)], why: \"\(k) raised\"}\n"
                // Cleared: gone by then and staying gone for a second (a latch: after the operator's reset).
                y += "  - {from_s: \(n(e.at + clearBy - 1)), to_s: \(n(e.at + clearBy)), inactive: [\(code)], not_latched: [\(code)], "
                    + "why: \"\(k) cleared\"}\n"
            case .framesRefused:
                y += "  - {from_s: \(n(e.at + 1)), to_s: \(n(e.at + e.duration)), inactive: [BMS_COMM_LOST], setpoint_kw: \(n(overrideKW)), "
                    + "tolerance: 1, why: \"\(k): frames refused one by one, full power\"}\n"
            case .tolerated:
                y += "  - {from_s: \(n(e.at + 1)), to_s: \(n(e.at + e.duration)), inactive: [METER_STALE], setpoint_kw: \(n(overrideKW)), "
                    + "tolerance: 1, why: \"\(k) tolerated\"}\n"
            }
        }
        return y
    }
}

/// What the soak measures of bessd each second, besides the scenario's own samples.
struct SoakSample {
    var t: Double
    var rssKiB: Int
    var fds: Int
    /// Cycles and overruns as bessd reports them (its counters start again after a reload).
    var cycles: Int
    var overruns: Int
    var jitterP99: Int
    var jitterMax: Int
    /// BMS frames the decoder refused, all kinds together.
    var refusedFrames: Int
    var backlog: Int
}

/// Resource figures after warm-up: flat means the last third of the run peaks no higher than the
/// first third (plus `toleranceKiB` for RSS: the allocator grows in steps), and the least-squares
/// slope says how fast it would grow if it did.
struct FlatJudgement {
    var firstMax: Int
    var lastMax: Int
    var slopePerHour: Double
    var flat: Bool

    init(_ points: [(t: Double, value: Int)], tolerance: Int) {
        let first = points.prefix(points.count / 3), last = points.suffix(points.count / 3)
        firstMax = first.map(\.value).max() ?? 0
        lastMax = last.map(\.value).max() ?? 0
        let n = Double(points.count)
        let mt = points.reduce(0) { $0 + $1.t } / max(n, 1), mv = points.reduce(0) { $0 + Double($1.value) } / max(n, 1)
        let cov = points.reduce(0) { $0 + ($1.t - mt) * (Double($1.value) - mv) }
        let varT = points.reduce(0) { $0 + ($1.t - mt) * ($1.t - mt) }
        slopePerHour = varT > 0 ? cov / varT * 3600 : 0
        flat = points.count >= 3 && lastMax <= firstMax + tolerance
    }
}

/// `bess-hil soak`: the plant and a real bessd (and bess-aggregator) for half an hour with every
/// fault kind cycling, uplink outages and reloads; judges resources, overruns, faults and the uplink
/// and writes `soak.md`.
struct SoakCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Soak bessd against the plant: every fault kind in turn, uplink outages, reloads (exit 0 pass, 1 fail, 2 could not run).",
        discussion: "Needs a CAN interface (the BMS faults are frames on the wire): `make soak` runs it in a VM when this kernel has no vcan.")

    @Option(help: "Minutes to run.") var minutes: Double = 30
    @Option(help: "bessd's control period, ms.") var periodMs: Int = 10
    @Option(help: "Seconds between faults.") var faultEvery: Double = 30
    @Option(help: "Seconds between reloads.") var reloadEvery: Double = 300
    @Option(help: "Seconds between uplink outages.") var outageEvery: Double = 300
    @Option(help: "Seconds each uplink outage lasts.") var outageLength: Double = 60
    @Option(help: "Seconds of warm-up before resources are judged (default: a sixth of the run).") var warmUp: Double?
    @Option(help: "The rig (a bessd configuration) the soak starts from.") var rig = "hil/rigs/scenario.yaml"
    @Option(help: "Where soak.md, soak.yaml and the CSV files go.") var output = "hil/results"
    @OptionGroup var programs: ScenarioPrograms
    @Option(help: "Where it ran, for the report (e.g. \"VM without KVM\").") var machine = "this machine"
    @Flag(help: "Write soak.yaml, check that it loads, and stop.") var planOnly = false
    @Flag(help: "No CAN: bessd simulates the BMS, and the four kinds only a BMS on the wire shows are left out (the verdict then fails on coverage).")
    var withoutCan = false

    func run() throws {
        let say: (String) -> Void = { FileHandle.standardOutput.write(Data(($0 + "\n").utf8)) }
        var plan = SoakPlan(seconds: minutes * 60, periodMs: periodMs, faultEvery: faultEvery, reloadEvery: reloadEvery,
                            outageEvery: outageEvery, outageLength: outageLength)
        if withoutCan { plan.kinds.removeAll(where: SoakPlan.canKinds.contains) }
        try? FileManager.default.createDirectory(atPath: output, withIntermediateDirectories: true)
        let rigPath = URL(fileURLWithPath: rig).standardizedFileURL.path
        let scenarioPath = output + "/soak.yaml"
        try plan.scenarioYAML(rig: rigPath).write(toFile: scenarioPath, atomically: true, encoding: .utf8)
        let scenario: Scenario
        do {
            scenario = try Scenario.load(scenarioPath)
        } catch {
            say("ERROR soak: the generated scenario is refused: \(error)")
            throw ExitCode(2)
        }
        let events = plan.events
        let kinds = Set(events.map(\.kind))
        say("soak: \(events.count) faults (\(kinds.count) of \(FaultInjection.Kind.allCases.count) kinds), \(plan.reloads.count) reloads, "
            + "\(plan.outages.count) uplink outages, \(scenario.expectations.count) expectations: \(scenarioPath)")
        if planOnly { return }
        guard !scenario.requiresCAN || FileManager.default.fileExists(atPath: "/sys/class/net/\(programs.canInterface)") else {
            say("ERROR soak: needs the CAN interface \(programs.canInterface) (make soak runs it in a VM when this kernel has no vcan)")
            throw ExitCode(2)
        }
        let bessdPath = programs.bessdPath, aggregatorPath = programs.aggregatorPath
        if let missing = RigPrograms.missingPrograms(for: scenario, bessdPath: bessdPath, aggregatorPath: aggregatorPath) {
            say("ERROR soak: \(missing)")
            throw ExitCode(2)
        }
        let run = ScenarioRun(scenario: scenario, outputDirectory: output, bessdPath: bessdPath, aggregatorPath: aggregatorPath,
                              canInterface: programs.canInterface, say: say)
        run.wantsAggregator = true
        var measured: [SoakSample] = []
        var nextSample = 0.0
        var lastReport = 0.0
        run.onTick = { t in
            guard t >= nextSample else { return }
            nextSample = t + 1
            if let s = Self.measure(run, t: t) { measured.append(s) }
            if t - lastReport >= 60 {
                lastReport = t
                let m = measured.last
                say(String(format: "  %7.0f s  RSS %d KiB, %d fds, backlog %d", t, m?.rssKiB ?? 0, m?.fds ?? 0, m?.backlog ?? 0))
            }
        }
        var uplink = UplinkAccount()
        run.beforeStop = {
            uplink = Self.drainAndCount(run, say: say)
            if let s = Self.measure(run, t: scenario.duration) { measured.append(s) }
        }
        let started = Date()
        let failures: [String]
        do {
            failures = try run.run()
        } catch {
            say("ERROR soak: \(error)")
            throw ExitCode(2)
        }
        let report = SoakReport(plan: plan, scenario: scenario, run: run, failures: failures, samples: measured, uplink: uplink,
                                warmUp: warmUp ?? plan.seconds / 6, machine: machine, started: started)
        try report.markdown().write(toFile: output + "/soak.md", atomically: true, encoding: .utf8)
        try report.resourcesCSV().write(toFile: output + "/soak-resources.csv", atomically: true, encoding: .utf8)
        for line in report.verdictLines { say(line) }
        say(report.passed ? "PASS soak: \(output)/soak.md" : "FAIL soak: \(output)/soak.md; bessd log \(run.runDirectory)/bessd.log")
        if !report.passed { throw ExitCode(1) }
    }

    /// RSS and open descriptors from /proc, the cycle's counters and the uplink backlog from bessd.
    static func measure(_ run: ScenarioRun, t: Double) -> SoakSample? {
        guard let process = run.bessd, process.isRunning else { return nil }
        let pid = process.processIdentifier
        var rss = 0
        if let text = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
           let line = text.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }) {
            rss = Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
        }
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        var s = SoakSample(t: t, rssKiB: rss, fds: fds, cycles: -1, overruns: 0, jitterP99: 0, jitterMax: 0, refusedFrames: 0, backlog: -1)
        if let status = try? ControlClient.answer(ControlRequest(.status), socket: run.controlSocket, timeout: .seconds(1))
            .reply(as: StatusReply.self) {
            s.cycles = Int(clamping: status.cycle.cycles)
            s.overruns = Int(clamping: status.cycle.overruns)
            s.jitterP99 = Int(clamping: status.cycle.jitterP99Us)
            s.jitterMax = Int(clamping: status.cycle.jitterMaxUs)
            s.backlog = status.uplink?.backlogRecords.map { Int(clamping: $0) } ?? -1
        }
        if let metrics = try? ControlClient.answer(ControlRequest(.metrics), socket: run.controlSocket, timeout: .seconds(1))
            .reply(as: MetricsReply.self) {
            for line in metrics.text.split(separator: "\n") where line.hasPrefix("bessd_bms_frames_total{") && !line.contains("\"accepted\"") {
                s.refusedFrames += Int(Double(line.split(separator: " ").last ?? "") ?? 0)
            }
        }
        return s
    }

    struct UplinkAccount {
        var acknowledged = 0
        var backlog = -1
        var stored: [Int] = []
        var duplicatesReceived = 0
        var drainSeconds = 0.0
        var problem: String?
    }

    /// Waits (plant still serving) until bessd's spool is empty, then asks the aggregator what it stored.
    static func drainAndCount(_ run: ScenarioRun, say: (String) -> Void) -> UplinkAccount {
        var account = UplinkAccount()
        let start = SystemClock.shared.now()
        let end = start + .seconds(120)
        while SystemClock.shared.now() < end {
            if let status = try? ControlClient.answer(ControlRequest(.status), socket: run.controlSocket, timeout: .seconds(1))
                .reply(as: StatusReply.self),
               let uplink = status.uplink {
                account.backlog = uplink.backlogRecords.map { Int(clamping: $0) } ?? -1
                account.acknowledged = uplink.acknowledgedSeq.map { Int(clamping: $0) } ?? 0
                if account.backlog == 0 { break }
            }
            for _ in 0..<10 { run.plantStep(); usleep(20_000) }
        }
        account.drainSeconds = SystemClock.shared.now().seconds(since: start)
        guard let answer = run.httpRequest("GET", "/v1/sites/HIL/seqs", body: nil), let body = answer.range(of: "\r\n\r\n"),
              let seqs = try? JSONSerialization.jsonObject(with: Data(answer[body.upperBound...].utf8)) as? [NSNumber]
        else {
            account.problem = "bess-aggregator did not list the stored seqs"
            return account
        }
        account.stored = seqs.map(\.intValue)
        if let metrics = run.httpRequest("GET", "/metrics", body: nil),
           let line = metrics.split(separator: "\n").first(where: { $0.hasPrefix("bess_aggregator_duplicates_total ") }) {
            account.duplicatesReceived = Int(Double(line.split(separator: " ").last ?? "") ?? 0)
        }
        say("  uplink: acknowledged seq \(account.acknowledged), backlog \(account.backlog), \(account.stored.count) stored, "
            + "\(account.duplicatesReceived) received twice")
        return account
    }
}

/// The soak's judgements and its report.
struct SoakReport {
    let plan: SoakPlan
    let scenario: Scenario
    let run: ScenarioRun
    let failures: [String]
    let samples: [SoakSample]
    let uplink: SoakCommand.UplinkAccount
    let warmUp: Double
    let machine: String
    let started: Date

    struct Row {
        var what: String
        var figure: String
        var target: String
        var met: Bool
    }

    /// Overruns over the whole run: bessd's counter starts again with each reload's new cycle
    /// thread, so each stretch's last value counts.
    var overruns: (total: Int, cycles: Int, p99Max: Int, max: Int) {
        var total = 0, cycles = 0, lastCycles = -1, lastOverruns = 0, p99 = 0, worst = 0
        for s in samples where s.cycles >= 0 {
            if s.cycles < lastCycles { total += lastOverruns; cycles += lastCycles }
            lastCycles = s.cycles
            lastOverruns = s.overruns
            p99 = max(p99, s.jitterP99)
            worst = max(worst, s.jitterMax)
        }
        return (total + lastOverruns, cycles + max(0, lastCycles), p99, worst)
    }

    var afterWarmUp: [SoakSample] { samples.filter { $0.t >= warmUp && $0.cycles >= 0 } }
    var rss: FlatJudgement { FlatJudgement(afterWarmUp.map { ($0.t, $0.rssKiB) }, tolerance: 1024) }
    var fds: FlatJudgement { FlatJudgement(afterWarmUp.map { ($0.t, $0.fds) }, tolerance: 0) }

    /// Per fault kind: occurrences, raised and cleared as the expectations judged them.
    var faultRows: [(kind: FaultInjection.Kind, count: Int, raised: Int, cleared: Int, note: String)] {
        // The expectations follow the file's order: bessd up, then each event's one or two.
        var index = 1
        var perKind: [FaultInjection.Kind: (count: Int, raised: Int, cleared: Int, note: String)] = [:]
        for e in plan.events {
            var row = perKind[e.kind] ?? (0, 0, 0, "")
            row.count += 1
            switch e.outcome {
            case .code(let code, let latching, _, _):
                if run.judge.miss(scenario.expectations[index]) == nil { row.raised += 1 }
                if run.judge.miss(scenario.expectations[index + 1]) == nil { row.cleared += 1 }
                index += 2
                row.note = latching ? "\(code) latched; cleared by bessctl reset" : code
            case .framesRefused:
                let during = refusedDelta(from: e.at, to: e.at + e.duration + 1)
                let after = refusedDelta(from: e.at + e.duration + 2, to: e.at + plan.faultEvery - 2)
                if during > 0 && run.judge.miss(scenario.expectations[index]) == nil { row.raised += 1 }
                if after == 0 { row.cleared += 1 }
                index += 1
                row.note = "frames refused and counted, full power"
            case .tolerated(let why):
                if run.judge.miss(scenario.expectations[index]) == nil { row.raised += 1; row.cleared += 1 }
                index += 1
                row.note = why
            }
            perKind[e.kind] = row
        }
        return FaultInjection.Kind.allCases.compactMap { kind in
            perKind[kind].map { (kind, $0.count, $0.raised, $0.cleared, $0.note) }
        }
    }

    func refusedDelta(from: Double, to: Double) -> Int {
        let window = samples.filter { $0.t >= from && $0.t <= to }
        guard let first = window.first, let last = window.last else { return 0 }
        return last.refusedFrames - first.refusedFrames
    }

    /// Records bessd's spool had acknowledged that the aggregator does not hold.
    var uplinkLost: Int {
        guard uplink.acknowledged > 0 else { return 0 }
        let stored = Set(uplink.stored)
        return (1...uplink.acknowledged).filter { !stored.contains($0) }.count
    }

    var rows: [Row] {
        let o = overruns, r = rss, f = fds
        let faults = faultRows
        let allFaults = faults.allSatisfy { $0.raised == $0.count && $0.cleared == $0.count }
        let kindsCovered = faults.count == FaultInjection.Kind.allCases.count
        let storedOnce = uplink.stored.count == Set(uplink.stored).count
        let plannedReloads = plan.reloads.count
        return [
            Row(what: "bessd cycles at \(plan.periodMs) ms", figure: "\(o.cycles.formatted()) cycles, \(o.total) overruns; lateness p99 ≤ \(o.p99Max) µs, max \(o.max.formatted()) µs",
                target: "0 overruns", met: o.total == 0 && o.cycles > 0),
            Row(what: "RSS after warm-up (\(Int(warmUp)) s)", figure: "first third peak \(r.firstMax.formatted()) KiB, last third peak \(r.lastMax.formatted()) KiB; trend \(String(format: "%+.0f", r.slopePerHour)) KiB/h",
                target: "last third ≤ first third + 1,024 KiB", met: r.flat),
            Row(what: "open file descriptors after warm-up", figure: "first third peak \(f.firstMax), last third peak \(f.lastMax); trend \(String(format: "%+.1f", f.slopePerHour))/h",
                target: "last third ≤ first third", met: f.flat),
            Row(what: "faults raised and cleared", figure: "\(faults.reduce(0) { $0 + $1.raised })/\(faults.reduce(0) { $0 + $1.count }) raised, \(faults.reduce(0) { $0 + $1.cleared })/\(faults.reduce(0) { $0 + $1.count }) cleared; \(faults.count) of \(FaultInjection.Kind.allCases.count) kinds",
                target: "every fault of every kind", met: allFaults && kindsCovered),
            Row(what: "uplink across \(plan.outages.count) outage(s) of \(Int(plan.outageLength)) s", figure: uplink.problem ?? "acknowledged 1…\(uplink.acknowledged), \(uplink.stored.count) stored, \(uplinkLost) missing, \(uplink.stored.count - Set(uplink.stored).count) stored twice; backlog \(uplink.backlog) after \(String(format: "%.1f", uplink.drainSeconds)) s; \(uplink.duplicatesReceived) records received again (ignored)",
                target: "0 lost, 0 stored twice, backlog 0", met: uplink.problem == nil && uplinkLost == 0 && storedOnce && uplink.backlog == 0 && uplink.acknowledged > 0),
            Row(what: "reloads (SIGHUP, droop 4 % ↔ 5 %)", figure: "\(run.reloadsApplied) of \(plannedReloads) applied",
                target: "every one applied", met: run.reloadsApplied == plannedReloads),
            Row(what: "scenario expectations", figure: "\(scenario.expectations.count - failures.count) of \(scenario.expectations.count) met",
                target: "all", met: failures.isEmpty),
        ]
    }

    var passed: Bool { rows.allSatisfy(\.met) }

    var verdictLines: [String] { rows.map { "  \($0.met ? "met   " : "MISSED") \($0.what): \($0.figure)" } + failures.map { "  FAIL \($0)" } }

    func markdown() -> String {
        let commit = ProcessInfo.processInfo.environment["BESS_COMMIT"] ?? "(not given)"
        let canBMS = scenario.requiresCAN ? "its BMS sending Pylontech frames on virtual CAN" : "its BMS simulated inside bessd (no CAN)"
        var md = """
        # Soak: bessd against the plant for \(String(format: "%g", plan.seconds / 60)) minutes

        `make soak` (`bess-hil soak`, docs/soak.md). Run \(ISO8601DateFormatter().string(from: started)) at commit \(commit), on \(machine),
        bessd from \(run.bessdPath), at a \(plan.periodMs) ms period; one 100 kW / 250 kWh unit: its inverter on Modbus TCP and a
        site meter (SunSpec) served by the plant, \(canBMS); bess-aggregator on HTTP as the uplink. A 30 kW
        operator override holds the whole run. A fault every \(Int(plan.faultEvery)) s, cycling through \(plan.kinds.count) of the
        \(FaultInjection.Kind.allCases.count) kinds; SIGHUP every \(Int(plan.reloadEvery)) s (droop 4 % ↔ 5 %); bess-aggregator SIGKILLed every
        \(Int(plan.outageEvery)) s and started again \(Int(plan.outageLength)) s later. RSS and descriptors from /proc once a second;
        cycle counters from `bessctl status`; what was stored from the aggregator's `/v1/sites/HIL/seqs`.

        **Verdict: \(passed ? "pass" : "fail")**

        | what | figure | target | verdict |
        |---|---|---|---|

        """
        for r in rows { md += "| \(r.what) | \(r.figure) | \(r.target) | \(r.met ? "met" : "**missed**") |\n" }
        md += "\n## Faults\n\n| fault kind | injected | raised | cleared | what bessd must do |\n|---|---|---|---|---|\n"
        for f in faultRows {
            md += "| `\(f.kind.rawValue)` | \(f.count) | \(f.raised) | \(f.cleared) | \(f.note) |\n"
        }
        if !failures.isEmpty {
            md += "\n## Expectations missed\n\n"
            for f in failures { md += "- \(f)\n" }
        }
        md += "\nSamples: `soak.csv` (the scenario's, every 100 ms) and `soak-resources.csv` (every second).\n"
        return md
    }

    func resourcesCSV() -> String {
        var csv = "t_s,rss_kib,fds,cycles,overruns,jitter_p99_us,jitter_max_us,bms_frames_refused,uplink_backlog\n"
        for s in samples {
            csv += "\(String(format: "%.1f", s.t)),\(s.rssKiB),\(s.fds),\(s.cycles),\(s.overruns),\(s.jitterP99),\(s.jitterMax),\(s.refusedFrames),\(s.backlog)\n"
        }
        return csv
    }
}
