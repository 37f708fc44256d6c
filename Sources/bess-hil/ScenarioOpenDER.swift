import Config
import ControlCore
import Foundation
import GridSupport
import Yams

// The `opender` expectation (issue 59 §3): the reactive (and volt-watt) response the run recorded
// against EPRI OpenDER 2.2.0 (hil/peers/opender_reactive_peer.py) on the same inputs. Parsing here,
// the comparison in ScenarioOpenDERComparison.swift.

/// `opender: {tolerance_pct, p_kw}` over `from_s` + `to_s`: OpenDER run with the unit's law as the
/// scenario configures it at `from_s` (`grid_integration.reactive_power`: mode, curves, response
/// times, volt-watt, reactive priority; the unit's `VAMax` and active rating), on the voltage the
/// unit's inverter reported and the active power bessd set, every control period from the start of
/// the run (or the last `reload` before the window, when OpenDER starts afresh) to `to_s`.
struct OpenDERCheck: Equatable {
    /// `tolerance_pct`: each sample's Q (and P under volt-watt) within this % of `VAMax` of OpenDER's.
    var tolerancePercent: Double
    /// `p_kw`: the active power asked for before volt-watt (the dispatch), kW; nil: the unit's
    /// setpoint on the wire, and P is then not compared (it is the input).
    var demandKW: Double?
    /// The unit's law as configured at `from_s`, its ratings, its nominal voltage (V, line to
    /// neutral), bessd's period (seconds).
    var settings: GridSupportSettings
    var rating: UnitRating
    var nominalV: Double
    var period: Double
    /// Where OpenDER starts: 0, or the last reload at or before `from_s`.
    var start: Double
    /// hil/peers, beside the scenario's directory (or its parent's): where the peer is.
    var peersDirectory: String
}

extension OpenDERCheck {
    /// The `opender:` entry of expectation `entry` (nil without one, or when it is refused through `fail`).
    static func parse(_ entry: Node, here: String, window: Scenario.Window, config: Node, actions: [Scenario.Action],
                      base: URL, fail: (String, String) -> Void) -> OpenDERCheck? {
        guard let node = entry["opender"] else { return nil }
        let keys = Set(node.mapping?.keys.compactMap(\.string) ?? [])
        guard node.mapping != nil, let tolerance = node["tolerance_pct"]?.float, tolerance > 0, tolerance <= 10,
              keys.isSubset(of: ["tolerance_pct", "p_kw"]), node["p_kw"].map({ $0.float?.isFinite == true }) ?? true
        else {
            fail("\(here).opender", "{tolerance_pct: > 0 and ≤ 10 (% of VAMax), p_kw: the power asked for before volt-watt (optional)}")
            return nil
        }
        guard case .always(let from, let to) = window, to > from else {
            fail(here, "opender judges a span: from_s + to_s")
            return nil
        }
        let others = Set(entry.mapping?.keys.compactMap(\.string) ?? []).subtracting(["from_s", "to_s", "why", "opender"])
        if !others.isEmpty {
            fail(here, "opender stands alone (with from_s, to_s, why), not with \(others.sorted().joined(separator: ", "))")
            return nil
        }
        var configured = config, start = 0.0
        for action in actions {
            guard case .reload(let over) = action.kind else { continue }
            if action.at <= from {
                configured = Scenario.merge(configured, over)
                start = action.at
            } else if action.at < to {
                fail(here, "a reload at \(fmt(action.at)) s falls inside the window: opender compares one configuration")
                return nil
            }
        }
        let loaded: BessdConfiguration
        do {
            loaded = try ConfigLoader.parse(try Yams.serialize(node: configured), file: "scenario config at \(fmt(from)) s")
        } catch {
            fail(here, "opender needs the scenario's bessd configuration, which is refused: \(error)")
            return nil
        }
        guard loaded.units.count == 1, let unit = loaded.unitSettings.first, let settings = unit.gridSupport,
              settings.reactive != nil || settings.voltWatt != nil
        else {
            fail(here, "opender compares one unit's law: one unit with grid_integration.reactive_power's mode or volt_watt")
            return nil
        }
        if loaded.site.reactivePower.settings != nil {
            fail(here, "opender compares each unit's law; site.reactive_power's law is the connection point's")
            return nil
        }
        let peers = ["../peers", "../../peers"].map { base.appendingPathComponent($0).standardized.path }
        return OpenDERCheck(tolerancePercent: tolerance, demandKW: node["p_kw"]?.float, settings: settings,
                            rating: UnitRating(apparentPowerVA: unit.apparentPowerRating ?? unit.rating.value, activePowerW: unit.rating.value),
                            nominalV: unit.nominalVoltageV ?? 230, period: Double(loaded.periodMs) / 1000, start: start,
                            peersDirectory: peers.first { FileManager.default.fileExists(atPath: $0 + "/opender_reactive_peer.py") } ?? peers[0])
    }
}

extension ScenarioJudge {
    /// How the run misses an `opender` expectation over `from`–`to` (nil: met); its figures go to the
    /// run's output.
    func openDERMiss(_ check: OpenDERCheck, from: Double, to: Double) -> String? {
        let recorded = samples.filter { $0.t >= check.start && $0.t <= to && $0.bessdUp }.compactMap { OpenDERComparison.Point($0, check) }
        guard recorded.contains(where: { $0.t >= from }) else { return ": no samples in \(fmt(from))–\(fmt(to)) s" }
        let comparison = OpenDERComparison(check: check, recorded: recorded, from: from, to: to)
        let oracle: (p: [Double], q: [Double])
        do { oracle = try OpenDERPeer.run(check, inputs: comparison.inputs) } catch { return ": \(error)" }
        let result = comparison.judge(oracle)
        say("  opender \(fmt(from))–\(fmt(to)) s: " + result.figures)
        return result.misses.isEmpty ? nil
            : " from \(fmt(from)) to \(fmt(to)) s: \(result.misses.count) missed: " + result.misses.prefix(6).joined(separator: "; ")
    }
}

/// hil/peers/opender_reactive_peer.py on one trace: OpenDER's parameters for the unit's law, and its
/// P and Q (W, var) at every control period of the trace.
enum OpenDERPeer {
    /// OpenDER's parameters for `settings` on `rating` (percent → per unit; the names of OpenDER's
    /// DER file). OpenDER's category resets the curves to its defaults, so Category A (Table 7's 25 %
    /// absorbing minimum) is named only then, and its curves given after.
    static func parameters(_ settings: GridSupportSettings, rating: UnitRating) -> [String: Parameter] {
        var out: [String: Parameter] = [
            "NP_P_MAX": .number(rating.activePowerW), "NP_VA_MAX": .number(rating.apparentPowerVA),
            "NP_P_MAX_CHARGE": .number(rating.chargePowerW), "NP_APPARENT_POWER_CHARGE_MAX": .number(rating.apparentPowerVA),
            "NP_Q_MAX_INJ": .number(rating.maxInjectVar), "NP_Q_MAX_ABS": .number(rating.maxAbsorbVar),
            "NP_PRIO_OUTSIDE_MIN_Q_REQ": .text(settings.reactivePriority ? "REACTIVE" : "ACTIVE"),
        ]
        if settings.minimumReactivePercent.absorbing < 44 { out["NP_NORMAL_OP_CAT"] = .text("CAT_A") }
        func curve(_ prefix: String, _ c: GridCurve, x: [String], y: [String], xScale: Double = 1) {
            for (i, point) in c.points.enumerated() where i < x.count {
                out[prefix + x[i]] = .number(point.x * xScale)
                out[prefix + y[i]] = .number(point.y / 100)
            }
        }
        switch settings.reactive {
        case .constantPowerFactor(let s):
            out["CONST_PF_MODE_ENABLE"] = .flag(true)
            out.merge(pfParameters(s.discharging), uniquingKeysWith: { $1 })
            out["CONST_PF_RT"] = .number(s.responseTime.openDERSeconds)
        case .constantVar(let s):
            out["CONST_Q_MODE_ENABLE"] = .flag(true)
            out["CONST_Q"] = .number(s.percent / 100)
            out["CONST_Q_RT"] = .number(s.responseTime.openDERSeconds)
        case .voltVar(let s):
            out["QV_MODE_ENABLE"] = .flag(true)
            curve("QV_CURVE_", s.curve, x: ["V1", "V2", "V3", "V4"], y: ["Q1", "Q2", "Q3", "Q4"])
            out["QV_VREF"] = .number(s.vRef)
            out["QV_VREF_AUTO_MODE"] = .flag(s.autonomousVRef)
            out["QV_VREF_TIME"] = .number(s.vRefTimeConstant.openDERSeconds)
            out["QV_OLRT"] = .number(s.responseTime.openDERSeconds)
        case .wattVar(let s):
            out["QP_MODE_ENABLE"] = .flag(true)
            let names = ["P3_LOAD", "P2_LOAD", "P1_LOAD", "P1_GEN", "P2_GEN", "P3_GEN"]
            curve("QP_CURVE_", s.curve, x: names, y: names.map { "Q" + $0.dropFirst() }, xScale: 0.01)
            out["QP_RT"] = .number(s.responseTime.openDERSeconds)
        case nil: break
        }
        if let s = settings.voltWatt {
            out["PV_MODE_ENABLE"] = .flag(true)
            curve("PV_CURVE_", s.curve, x: ["V1", "V2"], y: ["P1", "P2"])
            out["PV_OLRT"] = .number(s.responseTime.openDERSeconds)
        }
        return out
    }

    /// Constant PF as OpenDER takes it for the side `setting` is bessd's: OpenDER signs Q with P
    /// (Eq. 3.8.1-1), so bessd's charging side (2030.5 opModFixedPFAbsorbW) is OpenDER's setting with
    /// the excitation turned.
    static func pfParameters(_ setting: PowerFactorSetting, charging: Bool = false) -> [String: Parameter] {
        ["CONST_PF": .number(setting.powerFactor), "CONST_PF_EXCITATION": .text((setting.excitation == .injecting) != charging ? "INJ" : "ABS")]
    }

    /// One value of OpenDER's DER file: a number, a flag or a name.
    enum Parameter: Encodable, Equatable {
        case number(Double), flag(Bool), text(String)

        func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .number(let value): try container.encode(value)
            case .flag(let value): try container.encode(value)
            case .text(let value): try container.encode(value)
            }
        }
    }

    /// One step as the peer reads it: `[count, V p.u., P p.u., parameters changed before it]`.
    struct Step: Encodable {
        var v: Double
        var p: Double
        var change: [String: Parameter]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.unkeyedContainer()
            try container.encode(1)
            try container.encode(v)
            try container.encode(p)
            try container.encode(change)
        }
    }

    /// One case of the peer: the unit's parameters, the period and the steps.
    struct Case: Encodable {
        var settings: [String: Parameter]
        var period: Double
        var steps: [Step]
    }

    /// The peer's answer for one case: OpenDER's P and Q at every step, W and var.
    struct Trace: Decodable {
        var p: [Double]
        var q: [Double]
    }

    /// Runs OpenDER over `inputs` (one control period each: V p.u., P demand W); its P and Q, W and var.
    static func run(_ check: OpenDERCheck, inputs: [(t: Double, v: Double, p: Double)]) throws(ScenarioError) -> (p: [Double], q: [Double]) {
        var steps: [Step] = []
        var charging: Bool?
        for input in inputs {
            var change: [String: Parameter] = [:]
            if case .constantPowerFactor(let s) = check.settings.reactive, (input.p < 0) != charging {
                charging = input.p < 0
                if input.p < 0 || steps.count > 0 { change = pfParameters(input.p < 0 ? s.charging : s.discharging, charging: input.p < 0) }
            }
            steps.append(Step(v: input.v, p: input.p / check.rating.activePowerW, change: change))
        }
        let one = Case(settings: parameters(check.settings, rating: check.rating), period: check.period, steps: steps)
        let script = check.peersDirectory + "/opender_reactive_peer.py"
        guard let json = try? JSONEncoder().encode([one]) else {
            throw ScenarioError(.io, "opender: cannot write the trace as JSON")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, "-"]
        let input = Pipe(), output = Pipe(), errors = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = errors
        do { try process.run() } catch { throw ScenarioError(.plantFailed, "opender: cannot run python3 \(script): \(error)") }
        // The peer reads all of stdin before it writes: no deadlock on the pipes.
        input.fileHandleForWriting.write(json)
        try? input.fileHandleForWriting.close()
        let out = output.fileHandleForReading.readDataToEndOfFile()
        let err = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ScenarioError(.plantFailed, "opender: \(script) exit \(process.terminationStatus) (scripts/ensure-python-peers.sh installs opender): "
                                + err.suffix(400))
        }
        guard let trace = try? JSONDecoder().decode(Trace.self, from: out), trace.p.count == inputs.count, trace.q.count == inputs.count
        else { throw ScenarioError(.plantFailed, "opender: \(script) answered \(String(decoding: out.prefix(200), as: UTF8.self))") }
        return (trace.p, trace.q)
    }
}

extension Duration {
    /// Seconds, as OpenDER's response times take them.
    var openDERSeconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) * 1e-18
    }
}
