import BessBase
import Config
import ControlCore
import Foundation
import Scada
import Yams

/// A scenario file's `timeline:`: each entry read into one `Scenario.Action` (what the plant, bessd,
/// the aggregator, SCADA, the control centre, the PMU or the utility's 2030.5 server is told and when).
enum ScenarioTimeline {
    typealias Action = Scenario.Action

    /// The `timeline:` entries as actions in time order; each problem given to `fail` as (where, what).
    /// `hasSep2`: the scenario has a `sep2:` section (a `sep2` step needs it).
    static func actions(_ timeline: [Node], hasSep2: Bool, fail: (String, String) -> Void) -> [Action] {
        var actions: [Action] = []
        for (index, entry) in timeline.enumerated() {
            let here = "timeline[\(index)]"
            guard entry.mapping != nil, let at = entry["at_s"]?.float, at >= 0 else {
                fail(here, "needs at_s ≥ 0"); continue
            }
            let keys = Set(entry.mapping!.keys.compactMap(\.string))
            let forS = entry["for_s"]?.float
            var kind: Action.Kind?
            var label = ""
            if let hz = entry["frequency_hz"]?.float {
                kind = .frequency(hz); label = "f→\(hz) Hz"
            } else if let pu = entry["voltage_pu"]?.float {
                guard pu >= 0.5 && pu <= 1.5 else { fail("\(here).voltage_pu", "a voltage, 0.5–1.5 p.u."); continue }
                kind = .voltage(pu); label = "V0→\(pu) pu"
            } else if let hz = entry["ramp_to_hz"]?.float {
                guard let over = entry["over_s"]?.float, over > 0 else { fail(here, "ramp_to_hz needs over_s > 0"); continue }
                kind = .ramp(toHz: hz, over: over); label = "ramp→\(hz) Hz"
            } else if let fault = entry["fault"]?.string {
                guard FaultInjection.Kind(rawValue: fault) != nil else {
                    fail(here, "unknown fault \(fault); known: \(FaultInjection.Kind.allCases.map(\.rawValue).joined(separator: ", "))")
                    continue
                }
                var f: Node.Mapping = [Node("kind"): Node(fault), Node("at_s"): Node(String(at))]
                if let forS { f[Node("duration_s")] = Node(String(forS)) }
                for key in ["delay_s", "bms", "unit", "group"] { if let v = entry[key] { f[Node(key)] = v } }
                kind = .fault(.mapping(f)); label = fault
            } else if entry["reset"]?.bool == true {
                kind = .reset; label = "bessctl reset"
            } else if let mode = entry["mode"]?.string {
                kind = .mode(mode); label = "mode \(mode)"
            } else if let kw = entry["override_kw"]?.float {
                guard let forS else { fail(here, "override_kw needs for_s"); continue }
                kind = .override(kw: kw, seconds: forS); label = "override \(kw) kW"
            } else if entry["clear_override"]?.bool == true {
                kind = .clearOverride; label = "override cleared"
            } else if let kw = entry["dispatch_kw"]?.float {
                guard let forS else { fail(here, "dispatch_kw needs for_s"); continue }
                let unit = entry["unit"]?.string
                let kvar = entry["dispatch_kvar"]?.float
                if entry["dispatch_kvar"] != nil, !(kvar?.isFinite ?? false) { fail("\(here).dispatch_kvar", "a number (kvar)"); continue }
                kind = .dispatch(kw: kw, seconds: forS, unit: unit, kvar: kvar)
                label = "dispatch \(kw) kW" + (kvar.map { ", \($0) kvar" } ?? "") + (unit == "site" ? " (site)" : "")
            } else if entry["kill_bessd"]?.bool == true {
                kind = .kill; label = "SIGKILL bessd"
            } else if entry["start_bessd"]?.bool == true {
                kind = .start; label = "bessd started"
            } else if let reload = entry["reload"], reload.mapping != nil {
                kind = .reload(reload); label = "reload"
            } else if let state = entry["aggregator"]?.string {
                guard state == "stop" || state == "start" else { fail("\(here).aggregator", "stop or start"); continue }
                kind = .aggregator(running: state == "start"); label = "bess-aggregator \(state == "start" ? "started" : "stopped")"
            } else if let write = entry["scada_write"]?.mapping {
                var points: [(point: String, value: Double)] = []
                for (key, value) in write {
                    guard let name = key.string, SunSpecTables.M704.points.contains(where: { $0.name == name }),
                          let number = value.float else {
                        fail("\(here).scada_write", "\(key.string ?? "?"): must be a model 704 point with a number")
                        continue
                    }
                    points.append((name, number))
                }
                kind = .scada(points)
                label = "SCADA " + points.filter { !$0.point.hasSuffix("Ena") && $0.point != "WSetMod" && !$0.point.hasSuffix("Tms") }
                    .map { "\($0.point) \($0.value.formatted(.number.grouping(.never)))" }.joined(separator: ", ")
            } else if let orders = entry["iec104"]?.mapping {
                guard let list = Scenario.IEC104Order.parse(orders, here: "\(here).iec104", fail: fail) else { continue }
                kind = .iec104(list)
                label = list.map(\.label).joined(separator: ", ")
            } else if let pmu = entry["pmu"]?.mapping {
                let hz = pmu[Node("frequency_hz")]?.float
                if pmu[Node("frequency_hz")] != nil, !(hz.map { $0 > 40 && $0 < 70 } ?? false) {
                    fail("\(here).pmu.frequency_hz", "a frequency, 40–70 Hz"); continue
                }
                var status: PMUSender.Status?
                if let text = pmu[Node("stat")]?.string {
                    guard let known = PMUSender.Status(rawValue: text) else {
                        fail("\(here).pmu.stat", "unknown; known: \(PMUSender.Status.allCases.map(\.rawValue).joined(separator: ", "))"); continue
                    }
                    status = known
                }
                var bad: PMUSender.BadFrames??
                if let text = pmu[Node("bad_frames")]?.string {
                    guard text == "none" || PMUSender.BadFrames(rawValue: text) != nil else {
                        fail("\(here).pmu.bad_frames", "unknown; known: crc, idcode, none"); continue
                    }
                    bad = .some(PMUSender.BadFrames(rawValue: text))
                }
                for key in pmu.keys.compactMap(\.string) where !["frequency_hz", "stat", "bad_frames"].contains(key) {
                    fail("\(here).pmu.\(key)", "unknown key; known: frequency_hz, stat, bad_frames")
                }
                kind = .pmu(hz: hz, status: status, badFrames: bad)
                let parts = [hz.map { "\($0) Hz" }, status.map { $0 == .stopped ? "stopped" : "STAT \($0.rawValue)" },
                             bad.map { "bad frames: \($0?.rawValue ?? "none")" }].compactMap { $0 }
                label = (["PMU"] + parts).joined(separator: " ")
            } else if let node = entry["forecast"] {
                guard let load = node["load_kw"]?.float, let pv = node["pv_kw"]?.float, load >= 0, pv >= 0 else {
                    fail("\(here).forecast", "needs load_kw and pv_kw, each ≥ 0"); continue
                }
                kind = .forecast(loadKW: load, pvKW: pv); label = "forecast: load \(load) kW, PV \(pv) kW"
            } else if let node = entry["schedule"] {
                guard let order = ScenarioSchedule.Order.parse(node, here: "\(here).schedule", fail: fail) else { continue }
                kind = .schedule(order); label = order.label
            } else if let node = entry["sep2"] {
                guard let (order, text) = Sep2ScenarioFile.sep2Order(node, here: "\(here).sep2", fail: fail) else { continue }
                if !hasSep2 { fail("\(here).sep2", "needs the scenario's sep2: section (the plant's 2030.5 server)") }
                kind = .sep2(order); label = text
            }
            let knownKeys: Set = ["at_s", "for_s", "over_s", "delay_s", "bms", "unit", "group", "frequency_hz", "voltage_pu", "ramp_to_hz", "fault",
                                  "reset", "mode", "override_kw", "clear_override", "dispatch_kw", "dispatch_kvar", "kill_bessd", "start_bessd",
                                  "reload", "scada_write", "aggregator", "label", "iec104", "confirm", "pmu", "sep2", "schedule", "forecast"]
            for key in keys.subtracting(knownKeys) { fail("\(here).\(key)", "unknown key") }
            guard let kind else {
                fail(here, "names no action (frequency_hz, voltage_pu, ramp_to_hz, fault, reset, mode, override_kw, clear_override, "
                     + "dispatch_kw, kill_bessd, start_bessd, reload, scada_write, aggregator, iec104, pmu, sep2, schedule, forecast)")
                continue
            }
            var action = Action(at: at, kind: kind, label: entry["label"]?.string ?? label)
            if let confirm = entry["confirm"]?.string {
                guard case .iec104 = kind, confirm == "positive" || confirm == "negative" else {
                    fail("\(here).confirm", "positive or negative, on an iec104 action"); continue
                }
                action.wantPositive = confirm == "positive"
            }
            actions.append(action)
        }
        return actions.sorted { $0.at < $1.at }
    }
}
