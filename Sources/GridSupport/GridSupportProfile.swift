public import BessBase

/// A named set of grid-support defaults whose numbers come from a verified source
/// (`grid_integration.reactive_power.profile`); every number may be overridden after.
public enum GridSupportProfile: String, Sendable, CaseIterable {
    /// IEEE 1547-2018 Category B, as EPRI's OpenDER 2.2.0 encodes the standard's defaults
    /// (../shared/reference/reactive-power.md §2): volt-var 0.92/+44, 0.98/0, 1.02/0, 1.08/−44 %,
    /// VRef 1.00, OLRT 5 s; watt-var −100/+44, −50/0, −20/0, 20/0, 50/0, 100/−44 %; volt-watt
    /// 1.06/100, 1.10/0 % (P′2 = 0: storage stops discharging), OLRT 10 s; reactive priority; Table 7's
    /// 44 % / 44 %. Constant power factor (unity), constant var (0 %) and watt-var respond in 10 s,
    /// the standard's maximum for them (OpenDER's own default is 5 s).
    case ieee1547_2018_cat_b
    /// IEEE 1547-2018 Category A, as OpenDER 2.2.0 encodes it: Category B's but volt-var 0.90/+25,
    /// 1.00/0, 1.00/0, 1.10/−25 % (no deadband), OLRT 10 s; watt-var to ∓25 %; Table 7's 44 %
    /// injecting / 25 % absorbing.
    case ieee1547_2018_cat_a

    /// Table 7's reactive capability at rated active power, % of VAMax, that keeps priority over
    /// active power (`GridSupportSettings.minimumReactivePercent`).
    public var minimumReactivePercent: (injecting: Double, absorbing: Double) {
        self == .ieee1547_2018_cat_a ? (44, 25) : (44, 44)
    }

    /// Volt-var's defaults.
    public var voltVar: VoltVarSettings {
        switch self {
        case .ieee1547_2018_cat_b:
            VoltVarSettings(curve: GridCurve(unchecked: [(0.92, 44), (0.98, 0), (1.02, 0), (1.08, -44)]), responseTime: .seconds(5))
        case .ieee1547_2018_cat_a:
            VoltVarSettings(curve: GridCurve(unchecked: [(0.90, 25), (1.00, 0), (1.00, 0), (1.10, -25)]), responseTime: .seconds(10))
        }
    }

    /// Watt-var's defaults (P′1 at −20 % as OpenDER's sample file, mirroring P1).
    public var wattVar: WattVarSettings {
        let q = self == .ieee1547_2018_cat_a ? 25.0 : 44
        return WattVarSettings(
            curve: GridCurve(unchecked: [(-100, q), (-50, 0), (-20, 0), (20, 0), (50, 0), (100, -q)]), responseTime: .seconds(10))
    }

    /// Volt-watt's defaults.
    public var voltWatt: VoltWattSettings {
        VoltWattSettings(curve: GridCurve(unchecked: [(1.06, 100), (1.10, 0)]), responseTime: .seconds(10))
    }

    /// Constant power factor's defaults: unity both ways.
    public var constantPowerFactor: ConstantPowerFactorSettings {
        ConstantPowerFactorSettings(discharging: .unity, charging: .unity, responseTime: .seconds(10))
    }

    /// Constant var's defaults: 0 %.
    public var constantVar: ConstantVarSettings { ConstantVarSettings(percent: 0, responseTime: .seconds(10)) }

    /// The profile's settings with `reactive` as the mode and volt-watt on or off.
    public func settings(reactive: ReactivePowerMode?, voltWatt: Bool) -> GridSupportSettings {
        GridSupportSettings(reactive: reactive, voltWatt: voltWatt ? self.voltWatt : nil, reactivePriority: true,
                            minimumReactivePercent: minimumReactivePercent)
    }
}

// MARK: - Validation against IEEE 1547-2018's ranges of adjustability

extension VoltVarSettings {
    /// Throws unless the settings lie in Table 8's ranges (points for VRef = 1.00): V2 0.97…1.00,
    /// V3 1.00…1.03, V1 0.82…V2 − 0.02, V4 V3 + 0.02…1.18; Q1 0…100 %, Q4 −100…0 %, Q2 and Q3 ±100 %;
    /// VRef 0.95…1.05; the adjustment's time constant 300…5000 s and its limits 0.88…0.98 / 1.02…1.10;
    /// OLRT 1…90 s.
    public func validate() throws(GridSupportError) {
        guard curve.count == 4 else {
            throw GridSupportError(.curvePoints, message: "volt-var has 4 points, not \(curve.count)")
        }
        let (v1, q1) = curve[0], (v2, q2) = curve[1], (v3, q3) = curve[2], (v4, q4) = curve[3]
        try require(v2, in: 0.97...1.00, "volt-var V2", .voltVarRange)
        try require(v3, in: 1.00...1.03, "volt-var V3", .voltVarRange)
        try require(v1, in: 0.82...max(0.82, v2 - 0.02), "volt-var V1", .voltVarRange)
        try require(v4, in: min(1.18, v3 + 0.02)...1.18, "volt-var V4", .voltVarRange)
        try require(q1, in: 0...100, "volt-var Q1 %", .voltVarRange)
        try require(q2, in: -100...100, "volt-var Q2 %", .voltVarRange)
        try require(q3, in: -100...100, "volt-var Q3 %", .voltVarRange)
        try require(q4, in: -100...0, "volt-var Q4 %", .voltVarRange)
        try require(vRef, in: 0.95...1.05, "volt-var VRef", .voltVarRange)
        try require(vRefTimeConstant.seconds, in: 300...5000, "volt-var VRef time constant s", .voltVarRange)
        try require(vRefLimits.lowerBound, in: 0.88...0.98, "volt-var VRef minimum", .voltVarRange)
        try require(vRefLimits.upperBound, in: 1.02...1.10, "volt-var VRef maximum", .voltVarRange)
        try require(responseTime.seconds, in: 1...90, "volt-var open-loop response time s", .responseTimeRange)
    }
}

extension WattVarSettings {
    /// Throws unless the curve has 2…6 points within ±100 % both ways and, where a side has the
    /// standard's three points, they lie in Table 9's ranges: P2 40…80 %, P1 ≤ P2 − 10, P3 ≥ P2 + 10
    /// (and the mirror for P′1…P′3); response time 0…10 s.
    public func validate() throws(GridSupportError) {
        guard curve.count >= 2 else {
            throw GridSupportError(.curvePoints, message: "watt-var has 2 to 6 points, not \(curve.count)")
        }
        var generating = 0
        for i in 0..<curve.count {
            try require(curve[i].x, in: -100...100, "watt-var P\(i + 1) %", .wattVarRange)
            try require(curve[i].y, in: -100...100, "watt-var Q\(i + 1) %", .wattVarRange)
            if curve[i].x > 0 { generating += 1 }
        }
        let charging = curve.count - generating
        if generating == 3 {
            let (p1, p2, p3) = (curve[charging].x, curve[charging + 1].x, curve[charging + 2].x)
            try require(p2, in: 40...80, "watt-var P2 %", .wattVarRange)
            try require(p1, in: 0...(p2 - 10), "watt-var P1 %", .wattVarRange)
            try require(p3, in: (p2 + 10)...100, "watt-var P3 %", .wattVarRange)
        }
        if charging == 3 {
            let (p3, p2, p1) = (curve[0].x, curve[1].x, curve[2].x)
            try require(p2, in: -80 ... -40, "watt-var P'2 %", .wattVarRange)
            try require(p1, in: (p2 + 10)...0, "watt-var P'1 %", .wattVarRange)
            try require(p3, in: -100...(p2 - 10), "watt-var P'3 %", .wattVarRange)
        }
        try require(responseTime.seconds, in: 0...10, "watt-var response time s", .responseTimeRange)
    }
}

extension VoltWattSettings {
    /// Throws unless the curve has 2…4 points in Table 10's ranges: V1 1.05…1.09, the last V
    /// V1 + 0.01…1.10, limits within ±100 % and not rising with voltage; OLRT 0.5…60 s.
    public func validate() throws(GridSupportError) {
        guard (2...4).contains(curve.count) else {
            throw GridSupportError(.curvePoints, message: "volt-watt has 2 to 4 points, not \(curve.count)")
        }
        let first = curve[0].x, last = curve[curve.count - 1].x
        try require(first, in: 1.05...1.09, "volt-watt V1", .voltWattRange)
        try require(last, in: (first + 0.01)...1.10, "volt-watt V\(curve.count)", .voltWattRange)
        for i in 0..<curve.count {
            let ceiling = i == 0 ? 100 : curve[i - 1].y
            try require(curve[i].y, in: -100...ceiling, "volt-watt P\(i + 1) %", .voltWattRange)
        }
        try require(responseTime.seconds, in: 0.5...60, "volt-watt open-loop response time s", .responseTimeRange)
    }
}

extension ConstantPowerFactorSettings {
    /// Throws unless both power factors are in (0, 1] and the response time is 0…10 s.
    public func validate() throws(GridSupportError) {
        try discharging.validate("pf")
        try charging.validate("pf_absorb")
        try require(responseTime.seconds, in: 0...10, "constant power factor response time s", .responseTimeRange)
    }
}

extension ConstantVarSettings {
    /// Throws unless the reactive power is within ±100 % and the response time 0…10 s.
    public func validate() throws(GridSupportError) {
        try require(percent, in: -100...100, "constant var %", .varRange)
        try require(responseTime.seconds, in: 0...10, "constant var response time s", .responseTimeRange)
    }
}

extension GridSupportSettings {
    /// Throws the first setting outside its range.
    public func validate() throws(GridSupportError) {
        switch reactive {
        case .constantPowerFactor(let s): try s.validate()
        case .constantVar(let s): try s.validate()
        case .voltVar(let s): try s.validate()
        case .wattVar(let s): try s.validate()
        case nil: break
        }
        try voltWatt?.validate()
        try require(minimumReactivePercent.injecting, in: 0...100, "minimum injecting %", .varRange)
        try require(minimumReactivePercent.absorbing, in: 0...100, "minimum absorbing %", .varRange)
        try require(plausibleVoltage.lowerBound, in: 0.01...1, "plausible voltage minimum", .voltVarRange)
        try require(plausibleVoltage.upperBound, in: 1...3, "plausible voltage maximum", .voltVarRange)
    }
}

extension Duration {
    /// The duration in seconds.
    var seconds: Double {
        let (whole, attoseconds) = components
        return Double(whole) + Double(attoseconds) * 1e-18
    }
}
