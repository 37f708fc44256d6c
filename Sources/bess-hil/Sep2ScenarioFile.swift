import Foundation
import Yams

/// A scenario file's 2030.5 parts read and checked: the `sep2:` section, the `sep2` steps and the
/// `sep2_schedule`, `sep2_responses` and `reversals` expectations (`Scenario.load` calls them).
enum Sep2ScenarioFile {
    typealias Sep2Settings = Scenario.Sep2Settings
    typealias Sep2Order = Scenario.Sep2Order
    typealias Sep2Check = Scenario.Sep2Check
    typealias Sep2ServerState = Scenario.Sep2ServerState
    typealias Window = Scenario.Window
    typealias Reversals = Scenario.Reversals
    static var sep2Limits: [String] { Scenario.sep2Limits }
    static var sep2Signals: [String] { Scenario.sep2Signals }
    static var numericSignals: [String] { Scenario.numericSignals }

    /// The `sep2:` section, or nil when the file has none.
    static func sep2Settings(_ node: Node?, base: URL, fail: (String, String) -> Void) -> Sep2Settings? {
        guard let node else { return nil }
        guard let mapping = node.mapping else {
            fail("sep2", "a mapping (poll_s, default)")
            return nil
        }
        let peers = ["../peers", "../../peers"].map { base.appendingPathComponent($0).standardized.path }
        var settings = Sep2Settings(peersDirectory: peers.first { FileManager.default.fileExists(atPath: $0 + "/sep2_server.py") } ?? peers[0])
        if let poll = mapping[Node("poll_s")] {
            if let seconds = poll.int, (1...300).contains(seconds) { settings.pollSeconds = seconds } else { fail("sep2.poll_s", "whole seconds, 1–300") }
        }
        if let given = mapping[Node("default")] { settings.defaultLimits = sep2Limits(given, here: "sep2.default", fail: fail) ?? [:] }
        if let responses = mapping[Node("responses")] {
            if let on = responses.bool { settings.responses = on } else { fail("sep2.responses", "true or false") }
        }
        for key in mapping.keys.compactMap(\.string) where !["poll_s", "default", "responses"].contains(key) {
            fail("sep2.\(key)", "unknown key; known: poll_s, default, responses")
        }
        return settings
    }

    /// A `sep2` step: `{control: MRID, start_s, duration_s, opModExpLimW: W, …}`, `{cancel: MRID}`,
    /// `{default: {opModExpLimW: W}}` or `{server: stop | silent | start}`.
    static func sep2Order(_ node: Node, here: String, fail: (String, String) -> Void) -> (Sep2Order, String)? {
        guard let mapping = node.mapping else {
            fail(here, "a mapping: control, cancel, default or server")
            return nil
        }
        let keys = Set(mapping.keys.compactMap(\.string))
        let commands = keys.intersection(["control", "cancel", "default", "server", "series"])
        guard commands.count == 1, let command = commands.first else {
            fail(here, "names one of control, cancel, default, server, series")
            return nil
        }
        if command == "series" { return sep2Series(mapping, here: here, fail: fail) }
        let allowed: Set = command == "control" ? Set(["control", "start_s", "duration_s"] + sep2Limits + sep2Reactive) : [command]
        for key in keys.subtracting(allowed).sorted() { fail("\(here).\(key)", "unknown key with \(command)") }
        switch command {
        case "control", "cancel":
            guard let mrid = mapping[Node(command)]?.string, isMRID(mrid) else {
                fail("\(here).\(command)", "an mRID: 1–32 hex digits")
                return nil
            }
            if command == "cancel" { return (.cancel(mrid), "2030.5 cancel \(mrid)") }
            let start = mapping[Node("start_s")]?.float
            if mapping[Node("start_s")] != nil, !(start.map { $0 >= 0 } ?? false) { fail("\(here).start_s", "seconds ≥ 0") }
            guard let duration = mapping[Node("duration_s")]?.float, duration >= 1 else {
                fail("\(here).duration_s", "is required, ≥ 1 s")
                return nil
            }
            var given = Node.Mapping()
            for key in sep2Limits { if let v = mapping[Node(key)] { given[Node(key)] = v } }
            let reactive = sep2Reactive(mapping, here: here, fail: fail)
            var limits: [String: Double] = [:]
            if !given.isEmpty || reactive.isEmpty {  // a control sets a limit, a reactive control, or both
                guard let read = sep2Limits(.mapping(given), here: here, fail: fail) else { return nil }
                limits = read
            }
            let text = [describe(limits), describe(reactive)].filter { !$0.isEmpty }.joined(separator: ", ")
            return (.control(mrid: mrid, start: start, duration: duration, limits: limits, reactive: reactive),
                    "2030.5 \(mrid): \(text)" + (start.map { " from \($0.formatted(.number.grouping(.never))) s" } ?? ""))
        case "default":
            guard let limits = sep2Limits(mapping[Node("default")]!, here: "\(here).default", fail: fail) else { return nil }
            return (.defaultControl(limits), "2030.5 default: \(describe(limits))")
        default:
            guard let name = mapping[Node("server")]?.string, let state = Sep2ServerState(rawValue: name) else {
                fail("\(here).server", "stop, silent or start")
                return nil
            }
            let label = switch state {
            case .start: "2030.5 server answers"
            case .stop: "2030.5 server outage"
            case .silent: "2030.5 server silent"
            }
            return (.answering(state), label)
        }
    }

    /// `{series: C, start_s: 10, each_s: 60, of_w: 100000, percent: [30, 60, …], limits: [opModExpLimW, …]}`:
    /// back-to-back controls C01, C02, … (the prefix and a two-digit count: hex), the n-th from
    /// start_s + n × each_s for each_s, each limit named at its percent of `of_w` (whole watts).
    static func sep2Series(_ mapping: Node.Mapping, here: String, fail: (String, String) -> Void) -> (Sep2Order, String)? {
        for key in Set(mapping.keys.compactMap(\.string)).subtracting(["series", "start_s", "each_s", "of_w", "percent", "limits"]).sorted() {
            fail("\(here).\(key)", "unknown key with series")
        }
        guard let prefix = mapping[Node("series")]?.string, isMRID(prefix + "00"),
              let start = mapping[Node("start_s")]?.float, start >= 0,
              let each = mapping[Node("each_s")]?.float, each >= 1, each == each.rounded(),
              let rating = mapping[Node("of_w")]?.float, rating > 0,
              let percents = mapping[Node("percent")]?.sequence?.compactMap(\.float), (1...99).contains(percents.count),
              percents.allSatisfy({ (0...100).contains($0) && (rating * $0 / 100) == (rating * $0 / 100).rounded() }),
              let names = mapping[Node("limits")]?.sequence?.compactMap(\.string), !names.isEmpty, names.allSatisfy(sep2Limits.contains)
        else {
            fail(here, "series: an mRID prefix (hex, ≤ 30 digits), start_s ≥ 0, each_s whole seconds ≥ 1, of_w > 0 W, "
                 + "percent: 1–99 values 0–100 (whole watts of of_w), limits: names of \(sep2Limits.joined(separator: ", "))")
            return nil
        }
        let orders = percents.enumerated().map { n, percent in
            Sep2Order.control(mrid: prefix + String(format: "%02d", n + 1), start: start + Double(n) * each, duration: each,
                              limits: Dictionary(uniqueKeysWithValues: names.map { ($0, rating * percent / 100) }))
        }
        let words = describe(Dictionary(uniqueKeysWithValues: names.map { ($0, 0) })).replacingOccurrences(of: " 0 kW", with: "")
        let shown = percents.prefix(4).map { $0.formatted(.number.grouping(.never)) }.joined(separator: ", ")
        return (.batch(orders), "2030.5 \(prefix)01–\(prefix)\(String(format: "%02d", percents.count)): \(percents.count) × "
                + "\(Int(each)) s from \(start.formatted(.number.grouping(.never))) s, \(words) at \(shown)\(percents.count > 4 ? ", …" : "") %")
    }

    /// An expectation's `sep2_schedule: {settle_s, grid_settle_s, grid_tolerance, surplus_kw}` or
    /// `sep2_responses: {statuses: [1, 2, 3], within_s}` (nil when it has neither).
    static func sep2Check(_ entry: Node, here: String, window: Window, server: Bool, fail: (String, String) -> Void) -> Sep2Check? {
        let schedule = entry["sep2_schedule"], responses = entry["sep2_responses"]
        guard schedule != nil || responses != nil else { return nil }
        var span = false
        if case .always = window { span = true }
        if !span || (schedule != nil && responses != nil) { fail(here, "sep2_schedule or sep2_responses, one, over from_s + to_s") }
        if !server { fail(here, "sep2_schedule / sep2_responses need the scenario's sep2: section") }
        if let node = schedule {
            let keys = Set(node.mapping?.keys.compactMap(\.string) ?? [])
            guard node.mapping != nil, keys.isSubset(of: ["settle_s", "grid_settle_s", "grid_rise_s", "grid_tolerance", "surplus_kw"]),
                  let settle = node["settle_s"]?.float, settle >= 0 else {
                fail("\(here).sep2_schedule", "{settle_s: ≥ 0, optional grid_settle_s, grid_rise_s, grid_tolerance (kW, default 1), surplus_kw}")
                return nil
            }
            let gridSettle = node["grid_settle_s"]?.float
            if gridSettle == nil, keys.contains("grid_tolerance") || keys.contains("surplus_kw") || keys.contains("grid_rise_s") {
                fail("\(here).sep2_schedule", "grid_rise_s, grid_tolerance and surplus_kw go with grid_settle_s")
            }
            return .schedule(settle: settle, gridSettle: gridSettle, gridRise: node["grid_rise_s"]?.float ?? gridSettle,
                             gridTolerance: node["grid_tolerance"]?.float ?? 1, surplusKW: node["surplus_kw"]?.float)
        }
        guard let node = responses, let statuses = node["statuses"]?.sequence?.compactMap(\.int), !statuses.isEmpty,
              statuses.allSatisfy({ (1...3).contains($0) }), let within = node["within_s"]?.float, within > 0,
              Set(node.mapping?.keys.compactMap(\.string) ?? []).isSubset(of: ["statuses", "within_s"]) else {
            fail("\(here).sep2_responses", "{statuses: some of 1 (received), 2 (started), 3 (completed), within_s: > 0}")
            return nil
        }
        return .responses(statuses: statuses, within: within)
    }

    /// `{opModExpLimW: 1500, …}`: at least one limit, each a whole number of watts ≥ 0.
    static func sep2Limits(_ node: Node, here: String, fail: (String, String) -> Void) -> [String: Double]? {
        guard let mapping = node.mapping, !mapping.isEmpty else {
            fail(here, "names no limit (\(sep2Limits.joined(separator: ", ")), W)")
            return nil
        }
        var limits: [String: Double] = [:]
        for (key, value) in mapping {
            guard let name = key.string, sep2Limits.contains(name) else {
                fail("\(here).\(key.string ?? "?")", "unknown limit; known: \(sep2Limits.joined(separator: ", "))")
                continue
            }
            guard let watts = value.float, watts >= 0, watts <= 1e9, watts == watts.rounded() else {
                fail("\(here).\(name)", "whole watts, 0–1e9")
                continue
            }
            limits[name] = watts
        }
        return limits.isEmpty ? nil : limits
    }

    /// The reactive controls a `sep2` control may carry.
    static let sep2Reactive = ["opModFixedVar", "opModTargetVar"] + Sep2Curve.kinds.map(\.element)

    /// A control's `opModFixedVar: {refType: 1, value: 3000}` (`DERUnitRefType` 0–7; `value` hundredths
    /// of a percent of it, −10000…10000, as 2030.5's `SignedPerCent`) and `opModTargetVar: −10000`
    /// (whole var, + = injecting); each absent is nil.
    static func sep2Reactive(_ mapping: Node.Mapping, here: String, fail: (String, String) -> Void) -> Scenario.Sep2Reactive {
        var reactive = Scenario.Sep2Reactive()
        if let node = mapping[Node("opModFixedVar")] {
            if Set(node.mapping?.keys.compactMap(\.string) ?? []) == ["refType", "value"], let refType = node["refType"]?.int,
               (0...7).contains(refType), let value = node["value"]?.int, (-10_000...10_000).contains(value) {
                reactive.fixedVar = .init(refType: refType, hundredthsPercent: value)
            } else {
                fail("\(here).opModFixedVar", "{refType: 0–7 (1 setMaxW, 2 setMaxVar, 3 statVarAvail), value: hundredths of a percent, −10000–10000}")
            }
        }
        if let node = mapping[Node("opModTargetVar")] {
            if let vars = node.float, vars == vars.rounded(), abs(vars) <= 1e9 { reactive.targetVar = vars } else {
                fail("\(here).opModTargetVar", "whole var, −1e9–1e9 (+ = injecting)")
            }
        }
        for (element, _, axes) in Sep2Curve.kinds {
            guard let node = mapping[Node(element)] else { continue }
            // `{points: [[92, 44], …], openLoopTms: 100}`: sent as the server gives it; bessd judges it.
            let points = node["points"]?.sequence?.compactMap { $0.sequence?.compactMap(\.int) } ?? []
            if (1...10).contains(points.count), points.allSatisfy({ $0.count == 2 }), case let olrt = node["openLoopTms"]?.int ?? 500,
               (0...65_535).contains(olrt) {
                reactive.curves[element] = Sep2Curve(points: points, openLoopTms: olrt)
            } else {
                fail("\(here).\(element)", "{points: \(axes) (1–10), openLoopTms: hundredths of a second}")
            }
        }
        return reactive
    }

    /// `fixed var 30 % of setMaxW, target var −10 kvar`.
    static func describe(_ reactive: Scenario.Sep2Reactive) -> String {
        let references = [1: "setMaxW", 2: "setMaxVar", 3: "statVarAvail"]
        let fixed = reactive.fixedVar.map {
            "fixed var \((Double($0.hundredthsPercent) / 100).formatted(.number.grouping(.never))) % of "
                + (references[$0.refType] ?? "refType \($0.refType)")
        }
        let target = reactive.targetVar.map { "target var \(($0 / 1000).formatted(.number.grouping(.never))) kvar" }
        let curves = Sep2Curve.kinds.compactMap { kind in
            reactive.curves[kind.element].map { "\(kind.name) " + $0.points.map { "\($0[0])/\($0[1])" }.joined(separator: " ") }
        }
        return ([fixed, target].compactMap { $0 } + curves).joined(separator: ", ")
    }

    /// 2030.5 mRIDs are hexBinary128: 1–32 hex digits here.
    static func isMRID(_ text: String) -> Bool {
        (1...32).contains(text.utf8.count) && text.allSatisfy(\.isHexDigit)
    }

    /// `export 1.5 kW, load 3 kW`.
    static func describe(_ limits: [String: Double]) -> String {
        zip(sep2Limits, ["export", "import", "generation", "load"]).compactMap { key, word in
            limits[key].map { "\(word) \(($0 / 1000).formatted(.number.grouping(.never))) kW" }
        }.joined(separator: ", ")
    }

    /// An expectation's `reversals: {signal, max, deadband}` (nil when absent).
    static func reversals(_ node: Node?, here: String, fail: (String, String) -> Void) -> Reversals? {
        guard let node else { return nil }
        guard let signal = node["signal"]?.string, numericSignals.contains(signal) || sep2Signals.contains(signal),
              let max = node["max"]?.int, max >= 0, let deadband = node["deadband"]?.float, deadband > 0,
              Set(node.mapping?.keys.compactMap(\.string) ?? []).isSubset(of: ["signal", "max", "deadband"])
        else {
            fail("\(here).reversals", "{signal: a numeric signal, max: a count ≥ 0, deadband: > 0 in the signal's unit}")
            return nil
        }
        return Reversals(signal: signal, max: max, deadband: deadband)
    }
}
