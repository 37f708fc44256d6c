import BessBase
import ControlCore
import ControlProtocol
import Foundation
import Glibc
import Scada
import Cycle
import Config
import Yams

/// A HIL scenario: a timeline (grid frequency, injected faults, dispatch, operator commands, bessd
/// killed, restarted or reloaded) played against the in-process plant and a real `bessd` process,
/// sampled every 100 ms and judged against the file's expectations.
struct Scenario {
    struct Action {
        enum Kind {
            case frequency(Double)
            /// The plant's grid voltage source V0, p.u. (`voltage_pu`): the connection point's
            /// voltage is V0 moved by what the site injects (`GridVoltage`).
            case voltage(Double)
            case ramp(toHz: Double, over: Double)
            case fault(Node)
            case reset
            case mode(String)
            case override(kw: Double, seconds: Double)
            case clearOverride
            /// `unit`: a unit id, `site` for the whole site (shared by the site's allocation), nil for
            /// the first unit. `kvar`: the dispatch's `reactive_kvar` (`dispatch_kvar`, + = injecting).
            case dispatch(kw: Double, seconds: Double, unit: String?, kvar: Double? = nil)
            case kill
            case start
            case reload(Node)
            /// A write to bessd's SunSpec server as plant SCADA would make it: model 704 points by
            /// name, in engineering units (percent, W, s, 0/1), written in runs of adjacent points.
            case scada([(point: String, value: Double)])
            /// bess-aggregator stopped (SIGKILL: an uplink outage) or started again on its port and database.
            case aggregator(running: Bool)
            /// Commands from the grid operator's control centre to bessd's IEC 104 outstation
            /// (`ControlCentre`), sent in order, each direct execute.
            case iec104([IEC104Order])
            /// The plant's PMU (`PMUSender`, C37.118.2 over TCP, which bessd then follows): the frequency
            /// it measures from now on (nil: the plant's grid frequency, or the last one set) and its STAT.
            /// `badFrames`: nil unchanged, `.some(nil)` none from now on.
            case pmu(hz: Double?, status: PMUSender.Status?, badFrames: PMUSender.BadFrames?? = nil)
            /// A command to the plant's IEEE 2030.5 server (`sep2` steps; Scenario+Sep2.swift).
            case sep2(Sep2Order)
            /// A block schedule loaded through bessctl or the aggregator (ScenarioSchedule.swift).
            case schedule(ScenarioSchedule.Order)
            /// The optimiser's forecast file written anew: load and PV for every block (ScenarioSchedule.swift).
            case forecast(loadKW: Double, pvKW: Double)
        }
        var at: Double
        var kind: Kind
        var label: String
        /// For an `iec104` action: the activation confirmation the file expects (`confirm:
        /// positive` or `negative`); a different one is a missed expectation.
        var wantPositive: Bool? = nil
    }

    enum Window {
        case at(Double)
        case always(Double, Double)
        case eventually(Double, Double)
    }

    struct Expectation {
        var window: Window
        var numeric: [(signal: String, target: Double, tolerance: Double)] = []
        var bounds: [(signal: String, min: Double?, max: Double?)] = []
        var codes: [(kind: String, codes: [String])] = []
        var flags: [(signal: String, value: String)] = []
        /// Text bessd's log must hold in a line logged inside the window (`journal`), or must not (`no_journal`).
        var journal: [(text: String, present: Bool)] = []
        /// How often a signal may turn back in the window (`reversals`: holding, not hunting).
        var reversals: Reversals? = nil
        /// How fast a signal may move in the window (`rate`: a ramp, not a step), per second over 1 s.
        var rate: (signal: String, maxPerSecond: Double)? = nil
        /// `journal` texts must be in exactly this many of the window's lines (`times`), not just one or more.
        var journalTimes: Int? = nil
        /// A check of the window against what the plant's 2030.5 server published and received
        /// (`sep2_schedule`, `sep2_responses`; Scenario+Sep2.swift).
        var sep2: Sep2Check? = nil
        /// The recorded reactive response against OpenDER's on the same inputs (`opender`; ScenarioOpenDER.swift).
        var opender: OpenDERCheck? = nil
        var why: String
    }

    /// One frequency event bessd must have assessed (`bessctl events`): text fields that must be
    /// equal (`none` for null) and numbers within bounds.
    struct EventExpectation {
        var fields: [(key: String, value: String)] = []
        var bounds: [(key: String, min: Double?, max: Double?)] = []
    }

    var name: String
    var description: String
    var requiresCAN: Bool
    var duration: Double
    var startHz: Double
    var config: Node
    var actions: [Action]
    var expectations: [Expectation]
    /// The frequency events bessd must have assessed by the end, in order; empty: not judged.
    var events: [EventExpectation] = []
    /// The plant's IEEE 2030.5 server (`sep2:`), nil without one.
    var sep2: Sep2Settings? = nil
    /// What bessd must report of the schedule's blocks at the end (`schedule_blocks`), nil: not judged.
    var scheduleCheck: ScenarioSchedule.Check? = nil

    /// True when the timeline needs bess-aggregator beside bessd (it dispatches, or stops and
    /// starts the aggregator).
    var needsAggregator: Bool {
        actions.contains { action in
            switch action.kind {
            case .dispatch, .aggregator: true
            case .schedule(let order): order.viaAggregator
            default: false
            }
        }
    }

    /// True when the timeline has `pmu` steps: the plant serves a PMU and bessd follows it.
    var needsPMU: Bool {
        actions.contains { if case .pmu = $0.kind { true } else { false } }
    }

    /// True when the timeline commands through IEC 104 (the runner then serves an outstation).
    var needsIEC104: Bool {
        actions.contains { if case .iec104 = $0.kind { true } else { false } }
    }

    static let numericSignals = ["setpoint_kw", "power_kw", "soc_percent", "frequency_hz", "bessd_setpoint_kw",
                                 "allowed_charge_kw", "allowed_discharge_kw", "grid_kw", "site_power_kw", "soc_spread_percent",
                                 "operator_cap_kw", "scada_setpoint_kw", "agc_target_kw", "agc_followed_kw", "bessd_frequency_hz", "voltage_pu",
                                 "reactive_kvar", "unit_reactive_kvar", "reactive_setpoint_kvar"] + sep2Signals
    /// Site-level codes a scenario may expect besides the interlock codes (from `bessctl site`).
    static let siteCodes: Set = ["METER_STALE", "SITE_SHORTFALL"]
    static let flagSignals = ["state", "reverted", "bessd", "agc_following", "agc_signal_lost", "frequency_source"]
    /// What an `events:` entry may compare: text fields, and numbers with `_min` / `_max`.
    static let eventFields = ["direction", "cause", "cause_code", "cause_unit"]
    static let eventNumbers = ["extreme_hz", "pre_event_w", "required_w", "delivered_w", "required_mean_w", "delivered_mean_w",
                               "shortfall_w", "max_shortfall_w", "score"]
    static let codeKinds = ["active", "inactive", "latched", "not_latched"]

    /// Reads and checks a scenario file; every problem is reported as `FILE: path: problem`.
    static func load(_ path: String) throws(ScenarioError) -> Scenario {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
            throw ScenarioError(.unreadable, "\(path): cannot read the file")
        }
        let root: Node
        do {
            guard let node = try Yams.compose(yaml: text), node.mapping != nil else {
                throw ScenarioError(.invalid, "\(path): not a YAML mapping")
            }
            root = node
        } catch let e as ScenarioError { throw e } catch {
            throw ScenarioError(.invalid, "\(path): \(error)")
        }
        var problems: [String] = []
        func fail(_ where_: String, _ message: String) { problems.append("\(path): \(where_): \(message)") }
        let known: Set = ["name", "description", "requires", "duration_s", "start_hz", "rig", "config", "timeline", "expect", "events", "sep2", "schedule_blocks"]
        for key in root.mapping!.keys.compactMap(\.string) where !known.contains(key) {
            fail(key, "unknown key; known: \(known.sorted().joined(separator: ", "))")
        }
        let base = URL(fileURLWithPath: path).deletingLastPathComponent()
        let name = root["name"]?.string ?? URL(fileURLWithPath: path).deletingPathExtension().lastPathComponent
        let duration = root["duration_s"]?.float ?? 0
        if !(duration > 0 && duration <= 3600) { fail("duration_s", "is required, 0 < duration_s ≤ 3600") }
        let requires = root["requires"]?.sequence?.compactMap(\.string) ?? []
        for r in requires where r != "can" { fail("requires", "unknown requirement \(r) (known: can)") }

        // The bessd configuration: the rig file, with `config:` merged over it.
        var config = Node.mapping([:])
        if let rig = root["rig"]?.string {
            let rigPath = rig.hasPrefix("/") ? rig : base.appendingPathComponent(rig).path
            if let rigText = try? String(contentsOfFile: rigPath, encoding: .utf8), let node = try? Yams.compose(yaml: rigText) {
                config = node
            } else {
                fail("rig", "cannot read \(rigPath) as YAML")
            }
        } else {
            fail("rig", "is required (a bessd configuration to start from, e.g. ../rigs/scenario.yaml)")
        }
        if let over = root["config"] { config = ScenarioConfig.resolvingProfileDirectories(merge(config, over), base: base) }
        let sep2 = Sep2ScenarioFile.sep2Settings(root["sep2"], base: base, fail: fail)

        let actions = ScenarioTimeline.actions(Array(root["timeline"]?.sequence ?? []), hasSep2: sep2 != nil, fail: fail)

        var expectations: [Expectation] = []
        for (index, entry) in (root["expect"]?.sequence ?? []).enumerated() {
            let here = "expect[\(index)]"
            guard entry.mapping != nil else { fail(here, "must be a mapping"); continue }
            var window: Window?
            if let at = entry["at_s"]?.float {
                window = .at(at)
            } else if let from = entry["from_s"]?.float, let to = entry["to_s"]?.float, from <= to {
                window = .always(from, to)
            } else if let by = entry["by_s"]?.float {
                window = .eventually(entry["after_s"]?.float ?? 0, by)
            }
            guard let window else { fail(here, "needs at_s, from_s + to_s, or by_s (with optional after_s)"); continue }
            switch window {
            case .at(let t), .always(_, let t), .eventually(_, let t):
                if t > duration { fail(here, "ends at \(t) s, after duration_s \(duration)") }
            }
            var e = Expectation(window: window, why: entry["why"]?.string ?? "")
            let tolerance = entry["tolerance"]?.float
            for signal in numericSignals {
                if let v = entry[signal]?.float {
                    e.numeric.append((signal, v, tolerance ?? (signal.hasSuffix("frequency_hz") ? 0.005 : 0.5)))
                }
                let low = entry["\(signal)_min"]?.float, high = entry["\(signal)_max"]?.float
                if low != nil || high != nil { e.bounds.append((signal, low, high)) }
            }
            for kind in codeKinds {
                guard let node = entry[kind] else { continue }
                let codes = node.sequence?.compactMap(\.string) ?? [node.string].compactMap { $0 }
                for code in codes where TripCode(name: code) == nil && !siteCodes.contains(code) {
                    fail("\(here).\(kind)", "unknown code \(code)")
                }
                e.codes.append((kind, codes))
            }
            for signal in flagSignals {
                if let v = entry[signal]?.string { e.flags.append((signal, v)) }
            }
            for (key, present) in [("journal", true), ("no_journal", false)] {
                guard let node = entry[key] else { continue }
                let texts = node.sequence?.compactMap(\.string) ?? [node.string].compactMap { $0 }
                if texts.isEmpty || texts.contains(where: \.isEmpty) { fail("\(here).\(key)", "a text or a list of texts") }
                e.journal += texts.map { ($0, present) }
            }
            e.reversals = Sep2ScenarioFile.reversals(entry["reversals"], here: here, fail: fail)
            if let node = entry["rate"] {
                if let signal = node["signal"]?.string, numericSignals.contains(signal), let most = node["max_per_s"]?.float, most > 0,
                   Set(node.mapping?.keys.compactMap(\.string) ?? []).isSubset(of: ["signal", "max_per_s"]) {
                    e.rate = (signal, most)
                } else {
                    fail("\(here).rate", "{signal: a numeric signal, max_per_s: > 0}")
                }
            }
            e.sep2 = Sep2ScenarioFile.sep2Check(entry, here: here, window: window, server: sep2 != nil, fail: fail)
            e.opender = OpenDERCheck.parse(entry, here: here, window: window, config: config, actions: actions, base: base, fail: fail)
            if let times = entry["times"] {
                if let n = times.int, n >= 0, !e.journal.isEmpty, e.journal.allSatisfy(\.present) { e.journalTimes = n } else {
                    fail("\(here).times", "a count ≥ 0, with journal")
                }
            }
            if e.reversals != nil || e.rate != nil {
                let alone = e.journal.isEmpty && e.numeric.isEmpty && e.bounds.isEmpty && e.codes.isEmpty && e.flags.isEmpty
                    && (e.reversals == nil || e.rate == nil)
                var span = false
                if case .always = window { span = true }
                let key = e.reversals != nil ? "reversals" : "rate"
                if !alone || !span { fail(here, "\(key) stands alone, over from_s + to_s: it judges the window, not each sample") }
            }
            if e.sep2 != nil, !(e.journal.isEmpty && e.numeric.isEmpty && e.bounds.isEmpty && e.codes.isEmpty && e.flags.isEmpty) {
                fail(here, "sep2_schedule / sep2_responses stand alone: they judge the window against the server's record")
            }
            if !e.journal.isEmpty, !(e.numeric.isEmpty && e.bounds.isEmpty && e.codes.isEmpty && e.flags.isEmpty) {
                fail(here, "journal / no_journal stand alone: they judge the window's log lines, not its samples")
            }
            var allowed: Set = ["at_s", "from_s", "to_s", "by_s", "after_s", "tolerance", "why", "journal", "no_journal", "reversals",
                                "rate", "times", "sep2_schedule", "sep2_responses", "opender"]
            allowed.formUnion(numericSignals); allowed.formUnion(numericSignals.map { "\($0)_min" })
            allowed.formUnion(numericSignals.map { "\($0)_max" }); allowed.formUnion(codeKinds); allowed.formUnion(flagSignals)
            for key in Set(entry.mapping!.keys.compactMap(\.string)).subtracting(allowed) { fail("\(here).\(key)", "unknown key") }
            if e.numeric.isEmpty && e.bounds.isEmpty && e.codes.isEmpty && e.flags.isEmpty && e.journal.isEmpty && e.reversals == nil && e.rate == nil && e.sep2 == nil
                && e.opender == nil { fail(here, "checks nothing") }
            expectations.append(e)
        }
        if expectations.isEmpty { fail("expect", "is required: a scenario must be able to fail") }
        var events: [EventExpectation] = []
        for (index, entry) in (root["events"]?.sequence ?? []).enumerated() {
            let here = "events[\(index)]"
            guard let mapping = entry.mapping else { fail(here, "must be a mapping"); continue }
            var e = EventExpectation()
            for key in eventFields { if let v = entry[key]?.string { e.fields.append((key, v)) } }
            for key in eventNumbers {
                let low = entry["\(key)_min"]?.float, high = entry["\(key)_max"]?.float
                if low != nil || high != nil { e.bounds.append((key, low, high)) }
            }
            let allowed = Set(eventFields + eventNumbers.flatMap { ["\($0)_min", "\($0)_max"] })
            for key in Set(mapping.keys.compactMap(\.string)).subtracting(allowed) { fail("\(here).\(key)", "unknown key") }
            if e.fields.isEmpty && e.bounds.isEmpty { fail(here, "checks nothing") }
            events.append(e)
        }
        let scheduleCheck = root["schedule_blocks"].flatMap { ScenarioSchedule.Check.parse($0, fail: fail) }
        if !problems.isEmpty { throw ScenarioError(.invalid, problems.joined(separator: "\n")) }
        var scenario = Scenario(name: name, description: root["description"]?.string ?? "", requiresCAN: requires.contains("can"),
                                duration: duration, startHz: root["start_hz"]?.float ?? 50, config: config, actions: actions,
                                expectations: expectations, events: events, sep2: sep2)
        scenario.scheduleCheck = scheduleCheck
        return scenario
    }

    /// `over` merged into `base`: mappings key by key, anything else replaced.
    static func merge(_ base: Node, _ over: Node) -> Node {
        guard var a = base.mapping, let b = over.mapping else { return over }
        for (key, value) in b {
            if let existing = a[key] { a[key] = merge(existing, value) } else { a[key] = value }
        }
        return .mapping(a)
    }
}

/// Why a scenario could not be run or judged: a typed code and a sentence. `bess-hil scenario`
/// prints it as `CODE: sentence`.
typealias ScenarioError = CodedError<ScenarioErrorCode>

/// The stable code of a `ScenarioError` (`ScenarioError.Code`): a struct over a private enum,
/// matched by value, printed by its name.
struct ScenarioErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case invalid, unreadable, io, configInvalid, bessdMissing, bessdFailed, aggregatorMissing, aggregatorFailed, plantFailed, plotFailed
        case iec104
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SCENARIO_INVALID`: the scenario file breaks a rule of its format.
    static let invalid = Self(.invalid)
    /// `SCENARIO_UNREADABLE`: the scenario file cannot be read.
    static let unreadable = Self(.unreadable)
    /// `SCENARIO_IO`: a run or result file cannot be written.
    static let io = Self(.io)
    /// `SCENARIO_CONFIG_INVALID`: the scenario's bessd configuration is refused.
    static let configInvalid = Self(.configInvalid)
    /// `SCENARIO_BESSD_MISSING`: the bessd binary is not there.
    static let bessdMissing = Self(.bessdMissing)
    /// `SCENARIO_BESSD_FAILED`: bessd did not start or answer.
    static let bessdFailed = Self(.bessdFailed)
    /// `SCENARIO_AGGREGATOR_MISSING`: the bess-aggregator binary is not there.
    static let aggregatorMissing = Self(.aggregatorMissing)
    /// `SCENARIO_AGGREGATOR_FAILED`: bess-aggregator did not start or answer.
    static let aggregatorFailed = Self(.aggregatorFailed)
    /// `SCENARIO_PLANT_FAILED`: the plant could not serve the rig.
    static let plantFailed = Self(.plantFailed)
    /// `SCENARIO_PLOT_FAILED`: gnuplot could not draw the plot.
    static let plotFailed = Self(.plotFailed)
    /// `SCENARIO_IEC104_FAILED`: the control centre (`ControlCentre`) could not connect, lost the
    /// connection, or got no confirmation in time.
    static let iec104 = Self(.iec104)

    var description: String {
        switch value {
        case .invalid: "SCENARIO_INVALID"
        case .unreadable: "SCENARIO_UNREADABLE"
        case .io: "SCENARIO_IO"
        case .configInvalid: "SCENARIO_CONFIG_INVALID"
        case .bessdMissing: "SCENARIO_BESSD_MISSING"
        case .bessdFailed: "SCENARIO_BESSD_FAILED"
        case .aggregatorMissing: "SCENARIO_AGGREGATOR_MISSING"
        case .aggregatorFailed: "SCENARIO_AGGREGATOR_FAILED"
        case .plantFailed: "SCENARIO_PLANT_FAILED"
        case .plotFailed: "SCENARIO_PLOT_FAILED"
        case .iec104: "SCENARIO_IEC104_FAILED"
        }
    }
}

extension CodedError where StableCode == ScenarioErrorCode {
    /// `ScenarioError(.io, "sentence")`, as every scenario error is written.
    init(_ code: Code, _ message: String) {
        self.init(code, message: message)
    }
}

/// One sample of the run.
struct Sample {
    var t: Double
    var frequency: Double
    var setpointKW: Double
    var powerKW: Double
    var socPercent: Double
    var reverted: Bool
    var bessdUp: Bool
    /// bessd answered the status request for this sample (codes below are its answer).
    var statusOK = false
    var bessdSetpointKW = Double.nan
    var allowedChargeKW = Double.nan
    var allowedDischargeKW = Double.nan
    var state = "-"
    var active: [String] = []
    var latched: [String] = []
    /// The connection point as the plant sees it (+ = import), NaN without a site meter.
    var gridKW = Double.nan
    /// Every unit's measured power together, and the spread of their SOC.
    var sitePowerKW = Double.nan
    var socSpreadPercent = Double.nan
    /// The grid operator's cap on the units' sum in force and SCADA's setpoint (NaN when none).
    var operatorCapKW = Double.nan
    var scadaSetpointKW = Double.nan
    /// The grid operator's AGC (`status`): the target received and the schedule ramped toward it
    /// (NaN when none / not following), following, and `AGC_SIGNAL_LOST` standing.
    var agcTargetKW = Double.nan
    var agcFollowedKW = Double.nan
    var agcFollowing = false
    var agcSignalLost = false
    /// What the plant's PMU sends (NaN: no PMU, or stopped) and its STAT, and the frequency bessd
    /// used with its source (`bessctl status`: `pmu`, `inverter`, …).
    var pmuHz = Double.nan
    /// The plant's voltage at the connection point, p.u. of its nominal (each inverter's 701 `LNV`).
    var voltagePU = Double.nan
    /// Σ the plant inverters' measured reactive power, kvar (+ = injecting), the first unit's, and
    /// Σ the var setpoints bessd wrote (what the inverters were commanded, before their response).
    var reactiveKVAr = Double.nan
    var unitReactiveKVAr = Double.nan
    var reactiveSetpointKVAr = Double.nan
    var pmuStatus = "-"
    /// What the PMU's bad frames (wrong CRC or IDCODE) measure, NaN when it sends none.
    var pmuBadHz = Double.nan
    var bessdFrequencyHz = Double.nan
    var frequencySource = "-"
    /// What bessd says the utility's 2030.5 controls in force are (`sep2_export_limit_kw` …), kW.
    var sep2: [String: Double] = [:]
    /// bessd's log lines written since the previous sample.
    var logLines: [String] = []

    func value(_ signal: String) -> Double {
        switch signal {
        case "grid_kw": gridKW
        case "site_power_kw": sitePowerKW
        case "soc_spread_percent": socSpreadPercent
        case "operator_cap_kw": operatorCapKW
        case "scada_setpoint_kw": scadaSetpointKW
        case "agc_target_kw": agcTargetKW
        case "agc_followed_kw": agcFollowedKW
        case "setpoint_kw": setpointKW
        case "power_kw": powerKW
        case "soc_percent": socPercent
        case "frequency_hz": frequency
        case "bessd_setpoint_kw": bessdSetpointKW
        case "allowed_charge_kw": allowedChargeKW
        case "allowed_discharge_kw": allowedDischargeKW
        case "bessd_frequency_hz": bessdFrequencyHz
        case "voltage_pu": voltagePU
        case "reactive_kvar": reactiveKVAr
        case "unit_reactive_kvar": unitReactiveKVAr
        case "reactive_setpoint_kvar": reactiveSetpointKVAr
        default: sep2[signal] ?? .nan
        }
    }

    func flag(_ signal: String) -> String {
        switch signal {
        case "state": state
        case "reverted": reverted ? "true" : "false"
        case "bessd": bessdUp ? "up" : "down"
        case "agc_following": agcFollowing ? "true" : "false"
        case "agc_signal_lost": agcSignalLost ? "true" : "false"
        case "frequency_source": frequencySource
        default: ""
        }
    }

    /// Whether this sample meets every condition of `e`; otherwise what it saw.
    func check(_ e: Scenario.Expectation) -> String? {
        var misses: [String] = []
        for (signal, target, tolerance) in e.numeric {
            let v = value(signal)
            if !(abs(v - target) <= tolerance) { misses.append("\(signal) \(fmt(v)) (want \(fmt(target)) ± \(fmt(tolerance)))") }
        }
        for (signal, low, high) in e.bounds {
            let v = value(signal)
            if let low, !(v >= low) { misses.append("\(signal) \(fmt(v)) (want ≥ \(fmt(low)))") }
            if let high, !(v <= high) { misses.append("\(signal) \(fmt(v)) (want ≤ \(fmt(high)))") }
        }
        for (kind, codes) in e.codes {
            for code in codes {
                let ok: Bool
                switch kind {
                case "active": ok = active.contains(code)
                case "inactive": ok = statusOK && !active.contains(code)
                case "latched": ok = latched.contains(code)
                default: ok = statusOK && !latched.contains(code)
                }
                if !ok { misses.append("\(kind) \(code) (active: \(active.joined(separator: ",")), latched: \(latched.joined(separator: ",")))") }
            }
        }
        for (signal, want) in e.flags where flag(signal) != want { misses.append("\(signal) \(flag(signal)) (want \(want))") }
        return misses.isEmpty ? nil : misses.joined(separator: "; ")
    }
}

func fmt(_ v: Double) -> String {
    guard v.isFinite else { return "n/a" }
    return String(format: "%.3f", v)
}
