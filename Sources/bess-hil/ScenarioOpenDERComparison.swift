import Foundation
import GridSupport

/// The recorded response of one unit against OpenDER's on the same inputs (the `opender`
/// expectation, `OpenDERCheck`); pure, so a synthetic trace tests it.
///
/// Inputs. OpenDER steps once per bessd period (`check.period`) from the first recorded sample to
/// the window's end. Its voltage is what the unit's inverter reported (701 `LNV`): the plant's
/// connection-point voltage raised 0.5 % at rated export, as `SimulatedUnit.inverterReading` makes
/// it, in the register's tenths of a volt. Its active power is `p_kw` when the file gives one (the
/// power asked for before volt-watt), else the setpoint bessd wrote (the P its law ran on).
///
/// Alignment. bessd reads the inverter's voltage one poll after the plant served it and writes the
/// var setpoint its law computed from it in that same cycle; the sample reads the setpoint off the
/// wire. The plant serves a voltage every 50 ms and the run samples every 100 ms, so the voltage
/// that poll read is the one served between the previous sample and this one: the runs show it
/// (volt-var-step: V0 stepped at 3.0 s, and the 3.1 s sample holds both V 1.06 and bessd's first
/// period's −6.0 kvar, 20.6 % of the way as its lag's first 100 ms). So OpenDER's step at t gets
/// `voltageRead`: the sample's voltage after a step, else the midpoint of it and the previous
/// sample's (the voltage moving as Q moves it); its output at t is compared with the setpoint
/// recorded at t. P is not shifted: bessd's law runs on the P of its own cycle, written with the Q.
/// The shift is fixed, not fitted, so a late bessd is not aligned away; what a poll's phase adds
/// (up to one period) is inside the judgement's one period. OpenDER starts in the steady state of
/// its first inputs, bessd from 0 var: a window begins once bessd's start-up response is over.
///
/// Judgement. (1) Every sample in the window: its Q within `tolerance_pct` of `VAMax` of OpenDER's
/// within one period of the sample: in steady state simply ± tolerance; on a ramp, a trace within one
/// period of OpenDER's in time (OpenDER's Tustin lag runs half to one period behind bessd's at
/// 100 ms, GridSupportOpenDERTests). With volt-watt and `p_kw`, P likewise where volt-watt acts
/// (OpenDER's P below `p_kw`), except that while OpenDER's limit rises bessd's P is only held below
/// it: bessd ramps every rising limit (`limits.ramp_percent_per_s`), OpenDER has no such ramp.
/// (2) For each step of the inputs Q answers to (V by ≥ 0.01 p.u. for volt-var and volt-watt, P by
/// ≥ 5 % of the rating for constant PF and watt-var, between two periods) that moves OpenDER's Q by
/// ≥ 2 % of `VAMax` within 3 response times (or before the next step): the instant bessd's Q
/// crosses 90 % of its change within one period of OpenDER's (each interpolated between points).
struct OpenDERComparison {
    /// One recorded sample: the voltage the inverter reported (p.u.), the active and the reactive
    /// setpoint on the wire (W, var).
    struct Point: Equatable {
        var t: Double
        var v: Double
        var p: Double
        var q: Double
    }

    /// What the comparison found: each miss, and the figures for the run's output.
    struct Result {
        var misses: [String]
        var figures: String
    }

    let check: OpenDERCheck
    let recorded: [Point]
    let from: Double
    let to: Double
    /// OpenDER's inputs, one per period: time, V p.u., P demand W.
    let inputs: [(t: Double, v: Double, p: Double)]

    /// A step must move the voltage this much (p.u.) or P this share of the rating between periods.
    static let voltageStep = 0.01
    static let powerStep = 0.05
    /// The run's sample interval, s (ScenarioRun: every other 50 ms tick of the plant).
    static let sampleInterval = 0.1
    /// A step moving OpenDER's Q less than this share of `VAMax` has no response to time.
    static let responseFloor = 0.02

    init(check: OpenDERCheck, recorded: [Point], from: Double, to: Double) {
        self.check = check
        self.recorded = recorded
        self.from = from
        self.to = to
        var inputs: [(t: Double, v: Double, p: Double)] = []
        if let first = recorded.first {
            var t = first.t
            while t <= to + 1e-9 {
                let v = Self.voltageRead(recorded, at: t)
                inputs.append((t, v, check.demandKW.map { $0 * 1000 } ?? Self.nearest(recorded, to: t).p))
                t = first.t + Double(inputs.count) * check.period
            }
        }
        self.inputs = inputs
    }

    /// The voltage bessd's setpoint recorded at `t` answers to: the plant serves a voltage every
    /// 50 ms and the run samples every 100 ms, so bessd's poll in the period before the sample read
    /// the one served between the two samples: a step (≥ `voltageStep`) already at its new level,
    /// else halfway between them.
    static func voltageRead(_ points: [Point], at t: Double) -> Double {
        let now = nearest(points, to: t), before = nearest(points, to: now.t - sampleInterval)
        guard before.t < now.t, abs(now.v - before.v) < voltageStep else { return now.v }
        return (now.v + before.v) / 2
    }

    /// The recorded point nearest `t` (`points` sorted by time, not empty).
    static func nearest(_ points: [Point], to t: Double) -> Point {
        var low = 0, high = points.count - 1
        while low < high {
            let mid = (low + high) / 2
            if points[mid].t < t { low = mid + 1 } else { high = mid }
        }
        if low > 0, abs(points[low - 1].t - t) <= abs(points[low].t - t) { return points[low - 1] }
        return points[low]
    }

    /// The index of the input period nearest `t`.
    func period(at t: Double) -> Int {
        guard let first = inputs.first else { return 0 }
        return min(max(0, Int(((t - first.t) / check.period).rounded())), inputs.count - 1)
    }

    /// Judges the recorded trace against OpenDER's (`oracle`: P and Q per input period, W and var).
    func judge(_ oracle: (p: [Double], q: [Double])) -> Result {
        let va = check.rating.apparentPowerVA
        let comparesP = check.demandKW != nil && check.settings.voltWatt != nil
        var misses: [String] = []
        var worstQ = (off: 0.0, t: from), worstP = (off: 0.0, t: from)
        var judged = 0, moving = 0
        for point in recorded where point.t >= from && point.t <= to {
            judged += 1
            let k = period(at: point.t)
            let near = max(0, k - 1)...min(oracle.q.count - 1, k + 1)
            func off(_ have: Double, _ trace: [Double]) -> Double {
                let lowest = trace[near].min()!, highest = trace[near].max()!
                let distance = have < lowest ? lowest - have : have > highest ? have - highest : 0
                return distance.isFinite ? distance / va * 100 : .infinity
            }
            // Q is judged where OpenDER's is steady (it moves less than the tolerance over ±3 periods);
            // a response under way is judged by its 90 % instant (`timings`), which allows for late
            // samples: on a loaded host a sample's instant can be off by more than a period, and a
            // fast response moves more than 1 % of VAMax in 50 ms.
            let wide = max(0, k - 3)...min(oracle.q.count - 1, k + 3)
            if oracle.q[wide].max()! - oracle.q[wide].min()! > check.tolerancePercent / 100 * va {
                moving += 1
            } else {
                let q = off(point.q, oracle.q)
                if q > worstQ.off { worstQ = (q, point.t) }
                if q > check.tolerancePercent {
                    misses.append("at \(fmt(point.t)) s Q \(fmt(point.q / 1000)) kvar (OpenDER \(fmt(oracle.q[k] / 1000)), \(fmt(q)) % of VAMax off)")
                }
            }
            // P where volt-watt acts (OpenDER's below the power asked for); while OpenDER's limit rises
            // bessd may lag it (`limits.ramp_percent_per_s` ramps every rising limit), never exceed it.
            let demand = (check.demandKW ?? 0) * 1000, tolerance = check.tolerancePercent / 100 * va
            guard comparesP, oracle.p[near].min()! < demand - tolerance else { continue }
            let rising = oracle.p[near.upperBound] > oracle.p[near.lowerBound] + tolerance
            let p = rising ? max(0, point.p - oracle.p[near].max()!) / va * 100 : off(point.p, oracle.p)
            if p > worstP.off { worstP = (p, point.t) }
            if p > check.tolerancePercent {
                misses.append("at \(fmt(point.t)) s P \(fmt(point.p / 1000)) kW (OpenDER \(fmt(oracle.p[k] / 1000)), \(fmt(p)) % of VAMax off)")
            }
        }
        let (timing, timingMisses) = timings(oracle.q)
        misses += timingMisses
        let worstGap = timing.compactMap(\.gap).map(abs).max()
        let figures = "\(judged) samples on \(inputs.count) periods (\(moving) while OpenDER's Q moved, judged by timing); "
            + "worst steady Q \(fmt(worstQ.off)) % of VAMax at \(fmt(worstQ.t)) s"
            + (comparesP ? ", worst P \(fmt(worstP.off)) % at \(fmt(worstP.t)) s" : "")
            + " (want ≤ \(fmt(check.tolerancePercent)) %); "
            + (timing.isEmpty ? "no step moved Q by 2 % or more: no timing judged"
                : "90 % of each step's change (bessd / OpenDER): "
                + timing.map { "step \(fmt($0.at)) s at \($0.bessd.map(fmt) ?? "never") / \($0.opender.map(fmt) ?? "never") s" }
                    .joined(separator: ", ")
                + "; worst gap \(worstGap.map(fmt) ?? "n/a") s (want ≤ \(fmt(check.period)) s)")
        return Result(misses: misses, figures: figures)
    }

    /// A step of the inputs (its period's instant) and the instants bessd's and OpenDER's Q crossed
    /// 90 % of their change (nil: never).
    struct Timing {
        var at: Double
        var bessd: Double?
        var opender: Double?
        var gap: Double? { bessd.flatMap { b in opender.map { b - $0 } } }
    }

    /// The steps in the inputs inside the window that move OpenDER's Q by `responseFloor` or more
    /// within 3 response times (or before the next step), each with its 90 % instants; the misses.
    func timings(_ oracleQ: [Double]) -> (steps: [Timing], misses: [String]) {
        let va = check.rating.apparentPowerVA
        // The inputs Q answers to: V for volt-var (and through volt-watt's P), P for constant PF and watt-var.
        let readsV = check.settings.reactive?.readsVoltage == true || check.settings.voltWatt != nil
        var readsP = false
        switch check.settings.reactive {
        case .constantPowerFactor, .wattVar: readsP = true
        default: break
        }
        let moves = inputs.indices.dropFirst().filter { k in
            inputs[k].t >= from && inputs[k].t <= to
                && (readsV && abs(inputs[k].v - inputs[k - 1].v) >= Self.voltageStep
                    || readsP && abs(inputs[k].p - inputs[k - 1].p) >= Self.powerStep * check.rating.activePowerW)
        }
        // A response is over after 3 response times (99.9 % of a lag's way), 1 s at least.
        let response = max(1, 3 * (check.settings.reactive?.responseTime.openDERSeconds ?? 0))
        let span = Int((response / check.period).rounded(.up))
        // Moves in consecutive periods (a step spread over two samples, a fast ramp) are one step.
        let starts = moves.enumerated().filter { $0.offset == 0 || moves[$0.offset - 1] != $0.element - 1 }.map(\.element)
        var steps: [Timing] = [], misses: [String] = []
        for (n, k) in starts.enumerated() {
            let end = min(n + 1 < starts.count ? starts[n + 1] - 1 : inputs.count - 1, k + span)
            let change = oracleQ[end] - oracleQ[k - 1]
            guard abs(change) >= Self.responseFloor * va else { continue }
            let opender = Self.crossing(inputs[(k - 1)...end].indices.map { (inputs[$0].t, oracleQ[$0]) }, from: oracleQ[k - 1], to: oracleQ[end])
            let mine = recorded.filter { $0.t >= inputs[k - 1].t - check.period / 2 && $0.t <= inputs[end].t + check.period / 2 }
            let bessd = mine.count < 2 ? nil : Self.crossing(mine.map { ($0.t, $0.q) }, from: mine[0].q, to: mine[mine.count - 1].q)
            let at = inputs[k].t
            steps.append(Timing(at: at, bessd: bessd, opender: opender))
            guard let opender, let bessd else {
                misses.append("step at \(fmt(at)) s: \(bessd == nil ? "bessd's" : "OpenDER's") Q never crossed 90 % of its change")
                continue
            }
            // A late sample (a loaded host) widens what the trace can say of an instant: beyond one
            // period, the widest gap between bessd's samples around the two crossings is allowed on
            // top, up to 0.3 s, and named.
            let slack = min(0.3, max(0, Self.widestGap(mine.map(\.t), around: min(bessd, opender) - check.period,
                                                       max(bessd, opender) + check.period) - check.period))
            if abs(bessd - opender) > check.period + slack + 1e-6 {
                misses.append("step at \(fmt(at)) s: bessd's Q at 90 % at \(fmt(bessd)) s, OpenDER's at \(fmt(opender)) s "
                              + "(want within \(fmt(check.period)) s" + (slack > 0 ? " + \(fmt(slack)) s of late samples)" : ")"))
            }
        }
        return (steps, misses)
    }

    /// The widest gap between consecutive instants of `times` (ascending) whose span meets
    /// `low…high`, s; 0 with fewer than two.
    static func widestGap(_ times: [Double], around low: Double, _ high: Double) -> Double {
        var widest = 0.0
        for i in times.indices.dropFirst() where times[i] >= low && times[i - 1] <= high {
            widest = max(widest, times[i] - times[i - 1])
        }
        return widest
    }

    /// The first instant `trace` crosses 90 % of the way from `start` to `end` (linear between its
    /// points), nil when it never does or there is no change.
    static func crossing(_ trace: [(t: Double, value: Double)], from start: Double, to end: Double) -> Double? {
        let change = end - start
        guard change != 0, change.isFinite else { return nil }
        func share(_ value: Double) -> Double { (value - start) / change }
        for i in trace.indices.dropFirst() where share(trace[i].value) >= 0.9 {
            let (a, b) = (share(trace[i - 1].value), share(trace[i].value))
            guard a < 0.9, b > a else { return trace[i].t }
            return trace[i - 1].t + (0.9 - a) / (b - a) * (trace[i].t - trace[i - 1].t)
        }
        return nil
    }
}

extension OpenDERComparison.Point {
    /// The sample as the comparison reads it (nil when a value is missing): the inverter's reported
    /// voltage from the plant's connection-point voltage and the unit's measured power, the setpoints
    /// on the wire.
    init?(_ s: Sample, _ check: OpenDERCheck) {
        let raised = s.voltagePU * (1 + 0.005 * s.powerKW * 1000 / check.rating.activePowerW)
        let v = (raised * check.nominalV * 10).rounded() / 10 / check.nominalV
        let p = s.setpointKW * 1000, q = s.reactiveSetpointKVAr * 1000
        guard v.isFinite, p.isFinite, q.isFinite else { return nil }
        self.init(t: s.t, v: v, p: p, q: q)
    }
}
