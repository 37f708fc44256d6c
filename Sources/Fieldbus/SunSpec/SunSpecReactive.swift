import ControlCore

/// The apparent- and reactive-power ratings of a SunSpec inverter, from model 702 (each setting,
/// else its rating: `VAMax` else `VAMaxRtg`, …), read at discovery and at each refresh. Nil where
/// the device does not state one (no 702, not implemented, 0).
public struct SunSpecReactiveRatings: Sendable, Equatable {
    /// Maximum apparent power, VA.
    public var apparentPower: Double?
    /// Maximum reactive power injected (over-excited) and absorbed (under-excited), var, both positive.
    public var maxInjecting: Double?
    public var maxAbsorbing: Double?

    public init(apparentPower: Double? = nil, maxInjecting: Double? = nil, maxAbsorbing: Double? = nil) {
        self.apparentPower = apparentPower
        self.maxInjecting = maxInjecting
        self.maxAbsorbing = maxAbsorbing
    }

    /// The ratings in model 702's block; none without it.
    static func read(_ block: SunSpecBlock?) -> SunSpecReactiveRatings {
        guard let block else { return SunSpecReactiveRatings() }
        typealias R = SunSpec.Capacity
        func rating(_ setting: Int, _ rated: Int, sf: Int) -> Double? {
            let value = block.uint16(setting).flatMap { $0 > 0 ? $0 : nil } ?? block.uint16(rated)
            return block.scaled(value.map(Int64.init), sf: sf).flatMap { $0 > 0 && $0.isFinite ? $0 : nil }
        }
        return SunSpecReactiveRatings(apparentPower: rating(R.vaMax, R.vaMaxRtg, sf: R.vaSF),
                                      maxInjecting: rating(R.varMaxInj, R.varMaxInjRtg, sf: R.varSF),
                                      maxAbsorbing: rating(R.varMaxAbs, R.varMaxAbsRtg, sf: R.varSF))
    }
}

/// How bessd commands reactive power on a SunSpec inverter: model 704's var points, found at
/// discovery (docs/design/0010-reactive-power.md, "the wire"). An inverter without them (no
/// `VarSetEna`, `VarSetMod`, `VarSetEnaRvrt`, `VarSetRvrtTms`, or neither setpoint usable), a
/// 124-only or a register-map inverter has none: `REACTIVE_UNAVAILABLE`.
public struct SunSpecReactiveControl: Sendable, Equatable {
    /// The setpoint's form.
    public enum Mode: Sendable, Equatable {
        /// `VarSetMod` VARS (4): `VarSet` in var at `VarSet_SF`.
        case vars(scaleFactor: Int)
        /// `VarSetMod` VAR_MAX_PCT (1): `VarSetPct` in % of `VarMaxInj` (+) or `VarMaxAbs` (−) at
        /// `VarSetPct_SF` (704 does not say which; 2030.5-2023's %setMaxVar rule), with the two maxima.
        case maxPercent(scaleFactor: Int, maxInjecting: Double, maxAbsorbing: Double)
    }

    /// Model 704, where the var points are.
    public let model: SunSpecModelLocation
    public let mode: Mode
    /// 702's `VarMaxInj` / `VarMaxAbs`, var, where the device states them: a VARS setpoint is held
    /// inside them, so the device is never asked for a var it would refuse (a refused request
    /// fails the unit's whole round, its active power with it).
    public private(set) var maxInjecting: Double? = nil
    public private(set) var maxAbsorbing: Double? = nil

    /// The var points in 704's block (`controls`), with 702's ratings for VAR_MAX_PCT; nil when the
    /// device cannot take a reactive setpoint with its revert armed.
    static func discover(_ controls: SunSpecBlock, ratings: SunSpecReactiveRatings) -> SunSpecReactiveControl? {
        typealias C = SunSpec.ACControls
        guard controls.uint16(C.varSetEna) != nil, controls.uint16(C.varSetMod) != nil, controls.uint16(C.varSetEnaRvrt) != nil,
              controls.uint32(C.varSetRvrtTms) != nil else { return nil }
        if controls.int32(C.varSet) != nil, controls.int32(C.varSetRvrt) != nil, let sf = controls.scaleFactor(C.varSetSF) {
            return SunSpecReactiveControl(model: controls.model, mode: .vars(scaleFactor: sf),
                                          maxInjecting: ratings.maxInjecting, maxAbsorbing: ratings.maxAbsorbing)
        }
        if controls.int16(C.varSetPct) != nil, controls.int16(C.varSetPctRvrt) != nil, let sf = controls.scaleFactor(C.varSetPctSF),
           let injecting = ratings.maxInjecting, let absorbing = ratings.maxAbsorbing {
            return SunSpecReactiveControl(model: controls.model,
                                          mode: .maxPercent(scaleFactor: sf, maxInjecting: injecting, maxAbsorbing: absorbing))
        }
        return nil
    }

    /// The requests that command `reactive` var (+ = injecting), in order. With `rearm` (the first
    /// write after discovery and every half revert) the revert value (0 var) and the revert armed
    /// (`VarSetEnaRvrt` 1 and `VarSetRvrtTms`, one request) go first, as for `WSet`; then the
    /// setpoint: VARS `VarSetEna` 1, `VarSetMod`, `VarSetPri`, `VarSet` in one request; VAR_MAX_PCT
    /// `VarSetPct`, then `VarSetEna` 1, `VarSetMod`, `VarSetPri` (the unimplemented `VarSet` lies
    /// between them). A value beyond the register is clamped, never refused: a var the device cannot
    /// hold must not zero its active power. `reactivePriority`: `VarSetPri` REACTIVE, else ACTIVE.
    public func writes(_ reactive: Double, reactivePriority: Bool, revert: Duration, rearm: Bool) -> [(address: Int, values: [UInt16])] {
        typealias C = SunSpec.ACControls
        let q = reactive.isFinite ? reactive : 0
        let seconds = UInt32(clamping: max(1, revert.wholeSecondsRoundedUp))
        let priority = reactivePriority ? C.priorityReactive : C.priorityActive
        var writes: [(address: Int, values: [UInt16])] = []
        writes.reserveCapacity(4)
        switch mode {
        case .vars(let sf):
            if rearm {
                writes.append((model.address + C.varSetRvrt, SunSpec.words(0)))
                writes.append((model.address + C.varSetEnaRvrt, [1] + SunSpec.words(seconds)))
            }
            let held = min(max(q, -(maxAbsorbing ?? .infinity)), maxInjecting ?? .infinity)
            let raw = Int32(clamping: Self.clampedRaw(held, sf: sf, bound: Int64(Int32.max)))
            writes.append((model.address + C.varSetEna, [1, C.varModeVars, priority] + SunSpec.words(UInt32(bitPattern: raw))))
        case .maxPercent(let sf, let injecting, let absorbing):
            if rearm {
                writes.append((model.address + C.varSetPctRvrt, [0]))
                writes.append((model.address + C.varSetEnaRvrt, [1] + SunSpec.words(seconds)))
            }
            let base = q >= 0 ? injecting : absorbing
            let percent = base > 0 ? min(max(q / base * 100, -100), 100) : 0
            let raw = Int16(clamping: Self.clampedRaw(percent, sf: sf, bound: Int64(Int16.max)))
            writes.append((model.address + C.varSetPct, [UInt16(bitPattern: raw)]))
            writes.append((model.address + C.varSetEna, [1, C.varModeMaxPercent, priority]))
        }
        return writes
    }

    /// The requests that hand reactive power back to the inverter once bessd no longer commands it:
    /// `VarSetEnaRvrt` 0 first, so that the armed revert cannot enable the var setpoint again, then
    /// `VarSetEna` 0.
    public var release: [(address: Int, values: [UInt16])] {
        [(model.address + SunSpec.ACControls.varSetEnaRvrt, [0]), (model.address + SunSpec.ACControls.varSetEna, [0])]
    }

    /// round(value / 10^sf) inside ±`bound` (the sentinel −bound−1 never written).
    static func clampedRaw(_ value: Double, sf: Int, bound: Int64) -> Int64 {
        let raw = (value / SunSpec.powerOfTen(sf)).rounded()
        guard raw.isFinite else { return 0 }
        return Int64(min(max(raw, -Double(bound)), Double(bound)))
    }
}

/// Whether a device takes a reactive setpoint, and its ratings (`DeviceSlot.reactiveCapability`).
public struct SunSpecReactiveCapability: Sendable, Equatable {
    /// True with 704's var points (`SunSpecReactiveControl`); false for any other inverter.
    public var available: Bool
    public var ratings: SunSpecReactiveRatings

    public init(available: Bool, ratings: SunSpecReactiveRatings) {
        self.available = available
        self.ratings = ratings
    }
}

extension ModbusDevice {
    /// What the device offers for reactive power: 704's var points and 702's ratings.
    public var reactiveCapability: SunSpecReactiveCapability {
        if case .sunspec(let inverter) = self {
            return SunSpecReactiveCapability(available: inverter.reactiveControl != nil, ratings: inverter.reactiveRatings)
        }
        return SunSpecReactiveCapability(available: false, ratings: SunSpecReactiveRatings())
    }

    /// The device's reactive-power control (SunSpec 704's var points); nil for any other device.
    public var reactiveControl: SunSpecReactiveControl? {
        if case .sunspec(let inverter) = self { return inverter.reactiveControl }
        return nil
    }
}
