import Foundation
public import GridSupport

/// EPRI OpenDER 2.2.0 (PyPI `opender`) run by hil/peers/opender_reactive_peer.py: the independent
/// oracle for the grid-support law, on the unit `rating` describes (100 kW = 100 kVA, reactive
/// capability the whole VA, charging as far as discharging). Shared by GridSupportTests (the law) and
/// ControlCoreTests (the law in the cycle).
public enum OpenDER {
    /// One case: OpenDER's parameters and its inputs, `count` steps of `period` at each (V p.u., P p.u.).
    public struct Case {
        public var settings: [String: Any]
        public var period: Double
        /// (count, V p.u., P demand p.u., parameters changed before these steps).
        public var steps: [(count: Int, v: Double, p: Double, change: [String: Any])]

        public init(settings: [String: Any], period: Double, steps: [(count: Int, v: Double, p: Double, change: [String: Any])]) {
            self.settings = settings
            self.period = period
            self.steps = steps
        }
    }

    /// OpenDER's command (after capability and priority) at every step: W and var.
    public struct Trace {
        public var p: [Double]
        public var q: [Double]
    }

    /// The nameplate every case shares, `reactivePriority` as NP_PRIO_OUTSIDE_MIN_Q_REQ, the normal
    /// performance category (its Table 7 minimum) as NP_NORMAL_OP_CAT. OpenDER's category also resets
    /// the curves to the category's defaults, so it is given only for Category A (the default is B),
    /// whose cases use those defaults.
    public static func nameplate(reactivePriority: Bool = true, category: String = "CAT_B") -> [String: Any] {
        var out: [String: Any] = [
            "NP_P_MAX": 1e5, "NP_VA_MAX": 1e5, "NP_P_MAX_CHARGE": 1e5, "NP_APPARENT_POWER_CHARGE_MAX": 1e5,
            "NP_Q_MAX_INJ": 1e5, "NP_Q_MAX_ABS": 1e5, "NP_PRIO_OUTSIDE_MIN_Q_REQ": reactivePriority ? "REACTIVE" : "ACTIVE",
        ]
        if category != "CAT_B" { out["NP_NORMAL_OP_CAT"] = category }
        return out
    }

    /// OpenDER's parameters for `settings` (percent → per unit).
    public static func parameters(_ settings: GridSupportSettings, category: String = "CAT_B") -> [String: Any] {
        var out = nameplate(reactivePriority: settings.reactivePriority, category: category)
        switch settings.reactive {
        case .constantPowerFactor(let s):
            // OpenDER signs Q with P (Eq. 3.8.1-1): INJ injects while discharging and absorbs while
            // charging. bessd takes the charging side's own setting (2030.5 opModFixedPFAbsorbW), so the
            // cases give `charging` the same PF with the opposite excitation.
            out["CONST_PF_MODE_ENABLE"] = true
            out["CONST_PF"] = s.discharging.powerFactor
            out["CONST_PF_EXCITATION"] = s.discharging.excitation == .injecting ? "INJ" : "ABS"
            out["CONST_PF_RT"] = s.responseTime.seconds
        case .constantVar(let s):
            out["CONST_Q_MODE_ENABLE"] = true
            out["CONST_Q"] = s.percent / 100
            out["CONST_Q_RT"] = s.responseTime.seconds
        case .voltVar(let s):
            out["QV_MODE_ENABLE"] = true
            for i in 0..<4 {
                out["QV_CURVE_V\(i + 1)"] = s.curve[i].x
                out["QV_CURVE_Q\(i + 1)"] = s.curve[i].y / 100
            }
            out["QV_VREF"] = s.vRef
            out["QV_VREF_AUTO_MODE"] = s.autonomousVRef
            out["QV_VREF_TIME"] = s.vRefTimeConstant.seconds
            out["QV_OLRT"] = s.responseTime.seconds
        case .wattVar(let s):
            // Six points: P′3, P′2, P′1 (LOAD) then P1, P2, P3 (GEN).
            out["QP_MODE_ENABLE"] = true
            for (i, name) in ["P3_LOAD", "P2_LOAD", "P1_LOAD", "P1_GEN", "P2_GEN", "P3_GEN"].enumerated() {
                out["QP_CURVE_\(name)"] = s.curve[i].x / 100
                out["QP_CURVE_Q\(name.dropFirst())"] = s.curve[i].y / 100
            }
            out["QP_RT"] = s.responseTime.seconds
        case nil: break
        }
        if let s = settings.voltWatt {
            out["PV_MODE_ENABLE"] = true
            out["PV_CURVE_V1"] = s.curve[0].x
            out["PV_CURVE_P1"] = s.curve[0].y / 100
            out["PV_CURVE_V2"] = s.curve[1].x
            out["PV_CURVE_P2"] = s.curve[1].y / 100
            out["PV_OLRT"] = s.responseTime.seconds
        }
        return out
    }

    /// Runs the cases; one trace each.
    public static func run(_ cases: [Case]) throws -> [Trace] {
        let json: [[String: Any]] = cases.map { c in
            ["settings": c.settings, "period": c.period, "steps": c.steps.map { [$0.count, $0.v, $0.p, $0.change] as [Any] }]
        }
        let argument = String(decoding: try JSONSerialization.data(withJSONObject: json), as: UTF8.self)
        let run = try Package.tool(["python3", "hil/peers/opender_reactive_peer.py", argument])
        guard run.status == 0 else {
            throw Package.RunFailure(message: "opender_reactive_peer.py failed (scripts/ensure-python-peers.sh installs opender): \(run.err)")
        }
        let traces = try run.out.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: [Double]],
                  let p = object["p"], let q = object["q"]
            else { throw Package.RunFailure(message: "opender_reactive_peer.py answered \(line.prefix(200))") }
            return Trace(p: p, q: q)
        }
        guard traces.count == cases.count else {
            throw Package.RunFailure(message: "opender_reactive_peer.py answered \(traces.count) traces for \(cases.count) cases")
        }
        return traces
    }
}

private extension Duration {
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) * 1e-18
    }
}
