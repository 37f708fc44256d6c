@testable import bess_hil
import BessBase
import ControlCore
import Foundation
import Testing

/// The scenarios' judges of the utility's side (hil/README.md): a `series` of back-to-back controls,
/// `sep2_schedule` (the limits in force against the published schedule, no dip between controls, the
/// grid at the limit), `sep2_responses` (each response once and on time) and `journal` … `times`.
@Suite("Scenario judges of the 2030.5 schedule and responses: series, sep2_schedule, sep2_responses, times")
struct ScenarioSep2JudgeTests {
    static func load(_ body: String) throws -> Result<Scenario, ScenarioError> { try ScenarioIEC104FileTests.load(body) }

    /// Back-to-back controls C01 (30 kW) 2–6 s, C02 (60 kW) 6–10 s, C03 (10 kW) 10–14 s, over a 0 W default.
    static var schedule: Sep2Schedule {
        var schedule = Sep2Schedule()
        schedule.defaults = [(-.infinity, ["opModExpLimW": 0])]
        for (n, kw) in [30.0, 60, 10].enumerated() {
            let start = 2 + 4 * Double(n)
            schedule.controls.append(.init(mrid: "C0\(n + 1)", published: 0.5, start: start, end: start + 4,
                                           limits: ["opModExpLimW": kw * 1000], responses: true))
        }
        return schedule
    }

    static func run() throws -> ScenarioRun {
        let scenario = try load("sep2: {poll_s: 2}\nexpect:\n  - {at_s: 2, setpoint_kw: 5}").get()
        return ScenarioRun(scenario: scenario, outputDirectory: NSTemporaryDirectory(), bessdPath: "/nonexistent",
                           aggregatorPath: "/nonexistent", canInterface: "", say: { _ in })
    }

    /// Samples every 0.1 s over 0–16 s: the export limit bessd says is in force and the grid's power.
    static func samples(limitKW: (Double) -> Double?, gridKW: (Double) -> Double) -> [Sample] {
        (0...160).map { i in
            let t = Double(i) / 10
            var s = Sample(t: t, frequency: 50, setpointKW: 0, powerKW: 0, socPercent: 50, reverted: false, bessdUp: true)
            s.statusOK = true
            if let kw = limitKW(t) { s.sep2["sep2_export_limit_kw"] = kw }
            s.gridKW = gridKW(t)
            return s
        }
    }

    /// What the schedule puts in force at `t` (kW), moved `lag` seconds later.
    static func limit(_ t: Double, lag: Double = 0.2) -> Double {
        (schedule.limit("opModExpLimW", at: t - lag)?.watts ?? .nan) / 1000
    }

    /// Controls PREFIX01….
    @Test("a series step reads as back-to-back controls at their percent of of_w; bad ones refused")
    func series() throws {
        let scenario = try Self.load("""
            sep2: {poll_s: 2, responses: true}
            timeline:
              - {at_s: 1, sep2: {series: C, start_s: 4, each_s: 5, of_w: 100000, percent: [30, 10, 100], limits: [opModExpLimW, opModImpLimW]}}
            expect:
              - {at_s: 2, setpoint_kw: 5}
            """).get()
        #expect(scenario.sep2?.responses == true)
        guard case .sep2(.batch(let orders)) = scenario.actions.first?.kind else {
            Issue.record("no batch: \(scenario.actions)")
            return
        }
        #expect(orders == [
            .control(mrid: "C01", start: 4, duration: 5, limits: ["opModExpLimW": 30000, "opModImpLimW": 30000]),
            .control(mrid: "C02", start: 9, duration: 5, limits: ["opModExpLimW": 10000, "opModImpLimW": 10000]),
            .control(mrid: "C03", start: 14, duration: 5, limits: ["opModExpLimW": 100000, "opModImpLimW": 100000]),
        ])
        #expect(scenario.actions[0].label == "2030.5 C01–C03: 3 × 5 s from 4 s, export, import at 30, 10, 100 %")
        for bad in ["{series: X, start_s: 4, each_s: 5, of_w: 100000, percent: [30], limits: [opModExpLimW]}",
                    "{series: C, start_s: 4, each_s: 5, of_w: 100000, percent: [130], limits: [opModExpLimW]}",
                    "{series: C, start_s: 4, each_s: 0.5, of_w: 100000, percent: [30], limits: [opModExpLimW]}",
                    "{series: C, start_s: 4, each_s: 5, of_w: 100000, percent: [30], limits: [opModFixedW]}",
                    "{series: C, start_s: 4, each_s: 5, of_w: 100000, percent: [30], limits: [opModExpLimW], tag: x}"] {
            let result = try Self.load("sep2: {poll_s: 2}\ntimeline:\n  - {at_s: 1, sep2: \(bad)}\nexpect:\n  - {at_s: 2, setpoint_kw: 5}")
            guard case .failure(let error) = result else {
                Issue.record("loaded: \(bad)")
                continue
            }
            #expect(error.message.contains("timeline[0].sep2"), "\(error)")
        }
    }

    @Test("sep2_schedule, sep2_responses and times are read; misplaced ones are refused, each named")
    func expectations() throws {
        let scenario = try Self.load("""
            sep2: {poll_s: 2}
            expect:
              - {from_s: 1, to_s: 20, sep2_schedule: {settle_s: 0.5, grid_settle_s: 2, grid_rise_s: 8, surplus_kw: 65}}
              - {from_s: 1, to_s: 20, sep2_schedule: {settle_s: 0.3}}
              - {from_s: 0, to_s: 20, sep2_responses: {statuses: [1, 2, 3], within_s: 1.5}}
              - {from_s: 0, to_s: 20, journal: SEP2_SERVER_UNREACHABLE, times: 1}
            """).get()
        #expect(scenario.expectations.map(\.sep2) == [
            .schedule(settle: 0.5, gridSettle: 2, gridRise: 8, gridTolerance: 1, surplusKW: 65),
            .schedule(settle: 0.3, gridSettle: nil, gridRise: nil, gridTolerance: 1, surplusKW: nil),
            .responses(statuses: [1, 2, 3], within: 1.5), nil,
        ])
        #expect(scenario.expectations[3].journalTimes == 1)
        let result = try Self.load("""
            expect:
              - {at_s: 3, sep2_schedule: {settle_s: 0.5}}
              - {from_s: 1, to_s: 20, sep2_responses: {statuses: [4], within_s: 1}}
              - {from_s: 1, to_s: 20, sep2_schedule: {settle_s: 0.5}, grid_kw: 0}
              - {from_s: 1, to_s: 20, sep2_schedule: {settle_s: 0.5, surplus_kw: 5}}
              - {from_s: 1, to_s: 20, no_journal: X, times: 1}
            """)
        guard case .failure(let error) = result else {
            Issue.record("loaded")
            return
        }
        for text in ["expect[0]: sep2_schedule or sep2_responses, one, over from_s + to_s", "expect[0]: sep2_schedule / sep2_responses need",
                     "expect[1].sep2_responses: {statuses", "expect[2]: sep2_schedule / sep2_responses stand alone",
                     "expect[3].sep2_schedule: grid_rise_s, grid_tolerance and surplus_kw go with grid_settle_s",
                     "expect[4].times: a count ≥ 0, with journal"] {
            #expect(error.message.contains(text), "\(text) in \(error)")
        }
    }

    @Test("journal with times: exactly that many lines in the window; one more or one fewer fails")
    func journalTimes() throws {
        let scenario = try Self.load("""
            expect:
              - {from_s: 0, to_s: 20, journal: SEP2_SERVER_UNREACHABLE, times: 1}
              - {from_s: 0, to_s: 20, journal: SEP2_SERVER_RESTORED, times: 0}
            """).get()
        let run = try Self.run()
        run.samples = Self.samples(limitKW: { _ in nil }, gridKW: { _ in .nan })
        run.samples[30].logLines = ["SEP2_SERVER_UNREACHABLE: 127.0.0.1:1: closed"]
        #expect(run.judge.journalMiss(scenario.expectations[0]) == nil && run.judge.journalMiss(scenario.expectations[1]) == nil)
        run.samples[90].logLines = ["SEP2_SERVER_UNREACHABLE: 127.0.0.1:1: closed", "SEP2_SERVER_RESTORED: 127.0.0.1:1 answers"]
        #expect(run.judge.journalMiss(scenario.expectations[0])?.contains("2 log line(s) with \"SEP2_SERVER_UNREACHABLE\" (want 1)") == true)
        #expect(run.judge.journalMiss(scenario.expectations[1])?.contains("1 log line(s) with \"SEP2_SERVER_RESTORED\" (want 0)") == true)
    }

    @Test("schedule limit: latest control in window, none once cancelled, else default; mRIDs as hexBinary")
    func scheduleLimit() {
        var schedule = Self.schedule
        #expect(schedule.limit("opModExpLimW", at: 1.9)?.source == "default")
        #expect(schedule.limit("opModExpLimW", at: 2)?.watts == 30000 && schedule.limit("opModExpLimW", at: 6)?.source == "C02")
        #expect(schedule.limit("opModImpLimW", at: 3) == nil)
        schedule.cancelled["C02"] = 7
        #expect(schedule.limit("opModExpLimW", at: 6.5)?.source == "C02" && schedule.limit("opModExpLimW", at: 7)?.source == "default")
        schedule.controls.append(.init(mrid: "C09", published: 3, start: 10, end: 12, limits: ["opModExpLimW": 5000], responses: false))
        #expect(schedule.limit("opModExpLimW", at: 11)?.source == "C09" && schedule.limit("opModExpLimW", at: 12.5)?.source == "C03")
        #expect(schedule.keys == ["opModExpLimW"])
        #expect(Sep2Plant.hexBinary("c01") == "0C01" && Sep2Plant.hexBinary("0C01") == "0C01")
    }

    @Test("sep2_schedule: limits 0.2 s late pass; a dip to the default between controls fails, as does none")
    func scheduleJudge() throws {
        let run = try Self.run()
        run.samples = Self.samples(limitKW: { Self.limit($0) }, gridKW: { _ in .nan })
        #expect(run.judge.scheduleMiss(Self.schedule, from: 0.5, to: 16, settle: 0.5, grid: nil) == nil)
        run.samples = Self.samples(limitKW: { abs($0 - 6.3) < 0.05 ? 0 : Self.limit($0) }, gridKW: { _ in .nan })
        let dip = run.judge.scheduleMiss(Self.schedule, from: 0.5, to: 16, settle: 0.5, grid: nil)
        #expect(dip?.contains("at 6.300 s sep2_export_limit_kw 0.000 (want 30.000 (C01) or 60.000 (C02))") == true, "\(dip ?? "met")")
        run.samples = Self.samples(limitKW: { $0 > 8 && $0 < 8.25 ? nil : Self.limit($0) }, gridKW: { _ in .nan })
        #expect(run.judge.scheduleMiss(Self.schedule, from: 0.5, to: 16, settle: 0.5, grid: nil)?.contains("want 60.000 (C02)") == true)
        run.samples = Self.samples(limitKW: { Self.limit($0, lag: 0.7) }, gridKW: { _ in .nan })
        #expect(run.judge.scheduleMiss(Self.schedule, from: 0.5, to: 16, settle: 0.5, grid: nil) != nil, "0.7 s late is beyond settle_s")
    }

    @Test("sep2_schedule's grid: −min(limit, surplus) after a fall, never past a rising limit, at it once risen")
    func gridJudge() throws {
        let run = try Self.run()
        let grid = (settle: 2.0, rise: 3.0, tolerance: 1.0, surplusKW: Optional(50.0))
        // The grid follows a fall in 1 s and a rise in 2.5 s; C02's 60 kW is above the 50 kW surplus.
        func follows(_ t: Double) -> Double {
            let target = -min(Self.limit(t, lag: 0), 50)
            let since = t - (t >= 10 ? 10 : t >= 6 ? 6 : t >= 2 ? 2 : 0)
            let before = -min(Self.limit(t - since - 0.01, lag: 0), 50)
            let fraction = min(1, since / (target < before ? 2.5 : 1))
            return before + (target - before) * fraction
        }
        run.samples = Self.samples(limitKW: { Self.limit($0) }, gridKW: follows)
        #expect(run.judge.scheduleMiss(Self.schedule, from: 0.5, to: 16, settle: 0.5, grid: grid) == nil)
        run.samples = Self.samples(limitKW: { Self.limit($0) }, gridKW: { abs($0 - 7) < 0.05 ? -55 : follows($0) })
        let beyond = run.judge.scheduleMiss(Self.schedule, from: 0.5, to: 16, settle: 0.5, grid: grid)
        #expect(beyond?.contains("at 7.000 s grid_kw -55.000 (want -50.000 ± 1.000, C02)") == true, "\(beyond ?? "met")")
        run.samples = Self.samples(limitKW: { Self.limit($0) }, gridKW: { $0 > 12.5 && $0 < 13 ? -12 : follows($0) })
        #expect(run.judge.scheduleMiss(Self.schedule, from: 0.5, to: 16, settle: 0.5, grid: grid)?.contains("want -10.000") == true)
        #expect(ScenarioJudge.stood(Self.schedule, limit: 60000, at: 7, fall: 2, rise: 3) == false, "rising: never beyond")
        #expect(ScenarioJudge.stood(Self.schedule, limit: 60000, at: 9.1, fall: 2, rise: 3) == true)
        #expect(ScenarioJudge.stood(Self.schedule, limit: 10000, at: 11, fall: 2, rise: 3) == nil, "just fallen: not judged")
    }

    /// Unasked ones fail too.
    @Test("sep2_responses: each status once in its window passes; missing, repeated, late or early fail")
    func responsesJudge() throws {
        let run = try Self.run()
        let schedule = Self.schedule
        var onTime: [(subject: String, status: Int, at: Double)] = []
        for c in schedule.controls {
            onTime += [("0" + c.mrid, 1, 2.6), ("0" + c.mrid, 2, c.start + 0.02), ("0" + c.mrid, 3, c.end + 0.02)]
        }
        #expect(run.judge.responsesMiss(schedule, received: onTime, statuses: [1, 2, 3], within: 1, from: 0, to: 16) == nil)
        let late = onTime.map { $0.subject == "0C02" && $0.status == 3 ? ($0.subject, 3, 11.5) : $0 }
        #expect(run.judge.responsesMiss(schedule, received: late, statuses: [1, 2, 3], within: 1, from: 0, to: 16)?
            .contains("C02 status 3 at 11.500 s (want 10.000–11.000 s)") == true)
        let early = onTime.map { $0.subject == "0C03" && $0.status == 2 ? ($0.subject, 2, 9.5) : $0 }
        #expect(run.judge.responsesMiss(schedule, received: early, statuses: [1, 2, 3], within: 1, from: 0, to: 16)?.contains("C03 status 2") == true)
        #expect(run.judge.responsesMiss(schedule, received: onTime + [("0C01", 2, 2.5)], statuses: [1, 2, 3], within: 1, from: 0, to: 16)?
            .contains("C01 status 2: 2 responses (want 1)") == true)
        #expect(run.judge.responsesMiss(schedule, received: Array(onTime.dropFirst()), statuses: [1, 2, 3], within: 1, from: 0, to: 16)?
            .contains("C01 status 1: 0 responses (want 1)") == true)
        #expect(run.judge.responsesMiss(schedule, received: onTime + [("0C02", 5, 7)], statuses: [1, 2, 3], within: 1, from: 0, to: 16)?
            .contains("C02: status 5, not asked") == true)
        #expect(run.judge.responsesMiss(schedule, received: onTime, statuses: [1, 2, 3], within: 1, from: 20, to: 30)?
            .contains("no control asking for responses") == true)
    }
}
