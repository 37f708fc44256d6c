/// The energy the site keeps for frequency response (issue 47 §2; docs/frequency-response.md).
///
/// Judged per unit, since the droop response is shared per unit. Full response must be deliverable for `DroopSettings.sustain`: each unit keeps its full response
/// power × sustain time as energy, above its low-SOC trip for under-frequency (discharge) and below
/// its high-SOC trip for over-frequency (charge). Dispatch, AGC, SCADA setpoints and the site
/// application may not use it; the frequency response itself may. Computed once from the settings.
public struct ResponseReserve: Sendable, Equatable {
    /// One unit's reserve.
    public struct Unit: Sendable, Equatable {
        /// Usable energy, Wh.
        public var capacityWh: Double
        /// The SOC at which the unit's interlocks stop discharge (`SOC_LOW`) and charge (`SOC_HIGH`), %.
        public var floorPercent: Double
        public var ceilingPercent: Double
        /// Full response power, W: discharge (under-frequency) and charge (over-frequency).
        public var dischargePowerW: Double
        public var chargePowerW: Double
        /// The energy kept, Wh, each way.
        public var dischargeWh: Double
        public var chargeWh: Double

        /// The SOC band the schedule may use: it stops discharging at `low` and charging at `high`.
        public var low: Double { capacityWh > 0 ? min(100, floorPercent + 100 * dischargeWh / capacityWh) : floorPercent }
        public var high: Double { capacityWh > 0 ? max(0, ceilingPercent - 100 * chargeWh / capacityWh) : ceilingPercent }

        /// Energy above the reserve at `soc` (negative: the reserve is being used), Wh.
        public func dischargeHeadroomWh(soc: Double) -> Double { (soc - floorPercent) / 100 * capacityWh - dischargeWh }
        /// Room below the reserve at `soc`, Wh.
        public func chargeHeadroomWh(soc: Double) -> Double { (ceilingPercent - soc) / 100 * capacityWh - chargeWh }

        /// Whether dispatch must stop on this unit, each way: its SOC is at its own reserve (`low`,
        /// `high`), or was (`was`) and has not come back by `resumeMarginPercent`. An unknown SOC
        /// counts as at the reserve. A direction with no reserve is never reached.
        public func reached(soc: Double?, was: (discharge: Bool, charge: Bool)) -> (discharge: Bool, charge: Bool) {
            guard let soc, soc.isFinite else { return (dischargeWh > 0, chargeWh > 0) }
            let margin = ResponseReserve.resumeMarginPercent / 100 * capacityWh
            let above = dischargeHeadroomWh(soc: soc), below = chargeHeadroomWh(soc: soc)
            return (dischargeWh > 0 && (above <= 0 || (was.discharge && above < margin)),
                    chargeWh > 0 && (below <= 0 || (was.charge && below < margin)))
        }
    }

    /// The sustain time, seconds.
    public let sustainSeconds: Double
    /// Per unit, in configuration order.
    public let units: [Unit]

    /// The reserve `droop` asks of `units`.
    public init(droop: DroopSettings, units: [UnitSettings]) {
        let seconds = droop.sustain.secondsDouble
        sustainSeconds = seconds.isFinite ? max(0, seconds) : 0
        let curve = DroopCurve(droop)
        let hours = sustainSeconds / 3600
        self.units = units.map { unit in
            let rating = unit.rating.value.isFinite ? max(0, unit.rating.value) : 0
            let capacity = unit.capacity.value.isFinite ? max(0, unit.capacity.value) : 0
            var under = 0.0, over = 0.0
            if hours > 0, droop.enabled {
                if let percent = droop.responsePowerPercent {
                    under = ControlMath.clamp(percent / 100, 0, 1)
                    over = under
                } else {
                    // The deepest deviation the response can be asked for: where the unit's grid
                    // frequency trips stop it, else anywhere (full power).
                    let nominal = droop.nominal.value
                    let low = Self.tripDeviation(unit.rules, below: true).map { Hertz(nominal + $0) }
                    let high = Self.tripDeviation(unit.rules, below: false).map { Hertz(nominal + $0) }
                    under = low.map { min(1, max(0, curve.perUnitChange(at: $0))) } ?? 1
                    over = high.map { min(1, max(0, -curve.perUnitChange(at: $0))) } ?? 1
                }
            }
            return Unit(capacityWh: capacity, floorPercent: Self.socBound(unit.rules, code: .socLow) ?? 0,
                        ceilingPercent: Self.socBound(unit.rules, code: .socHigh) ?? 100,
                        dischargePowerW: under * rating, chargePowerW: over * rating,
                        dischargeWh: under * rating * hours, chargeWh: over * rating * hours)
        }
    }

    /// True when no energy is kept either way.
    public var isEmpty: Bool { units.allSatisfy { $0.dischargeWh <= 0 && $0.chargeWh <= 0 } }
    /// The site's reserve, Wh, each way.
    public var dischargeWh: Double { units.reduce(0) { $0 + $1.dischargeWh } }
    public var chargeWh: Double { units.reduce(0) { $0 + $1.chargeWh } }
    /// The site's full response power, W, each way.
    public var dischargePowerW: Double { units.reduce(0) { $0 + $1.dischargePowerW } }
    public var chargePowerW: Double { units.reduce(0) { $0 + $1.chargePowerW } }
    /// The site's SOC band (capacity-weighted over the units): the schedule stops discharging at
    /// `low` and charging at `high`.
    public var socBand: (low: Double, high: Double) {
        let capacity = units.reduce(0) { $0 + $1.capacityWh }
        guard capacity > 0 else { return (0, 100) }
        return (units.reduce(0) { $0 + $1.low * $1.capacityWh } / capacity,
                units.reduce(0) { $0 + $1.high * $1.capacityWh } / capacity)
    }

    /// How far past its reserve SOC a unit must come back before dispatch may use that direction
    /// again, % SOC: once a unit has reached its discharge reserve, dispatch discharges it again only
    /// above `low + 0.5`; once at its charge reserve, charges it again only below `high − 0.5`. Keeps
    /// SOC jitter at the threshold from toggling dispatch every cycle.
    public static let resumeMarginPercent = 0.5

    /// Whether any unit has reached its own reserve, each way, given each unit's SOC (`soc(i)`, nil
    /// when unknown: that unit counts as at its reserve). Judged per unit without hysteresis (a
    /// snapshot for `bessctl site`); the cycle keeps each unit's state with `update`. Allocates nothing.
    public func reached(soc: (Int) -> Double?) -> (discharge: Bool, charge: Bool) {
        var any = (discharge: false, charge: false)
        for index in units.indices {
            let unit = units[index].reached(soc: soc(index), was: (false, false))
            any = (any.discharge || unit.discharge, any.charge || unit.charge)
        }
        return any
    }

    /// Each unit's reserve state after this cycle's SOC (`soc(i)`), with the hysteresis of
    /// `resumeMarginPercent`; `state` has one entry per unit (missing entries are left alone).
    public func update(_ state: inout [(discharge: Bool, charge: Bool)], soc: (Int) -> Double?) {
        for index in units.indices where index < state.count {
            state[index] = units[index].reached(soc: soc(index), was: state[index])
        }
    }

    /// As `update`, and reports each change of a unit's state as an event (`responseReserveReached`,
    /// `responseReserveCleared`, once each way per unit and direction) judged on a known SOC: a unit
    /// whose SOC is unknown is held at its reserve but not reported (its stale BMS data is, as
    /// `BMS_COMM_LOST`), so a start before the first BMS reading logs nothing. `reported` holds the
    /// state last reported, one entry per unit. Allocates nothing.
    public func update(
        _ state: inout [(discharge: Bool, charge: Bool)], reported: inout [(discharge: Bool, charge: Bool)],
        events: inout EventRing, at now: MonotonicInstant, soc: (Int) -> Double?
    ) {
        for index in units.indices where index < state.count && index < reported.count {
            let level = soc(index)
            let unit = units[index]
            state[index] = unit.reached(soc: level, was: state[index])
            guard let level, level.isFinite else { continue }
            func report(_ held: Bool, _ was: inout Bool, _ direction: ReserveDirection, edge: Double) {
                guard held != was else { return }
                was = held
                events.push(ControlEvent(kind: held ? .responseReserveReached : .responseReserveCleared, unit: index, metric: .soc,
                                         value: level, threshold: edge, reserve: direction, at: now))
            }
            report(state[index].discharge, &reported[index].discharge, .discharge, edge: unit.low)
            report(state[index].charge, &reported[index].charge, .charge, edge: unit.high)
        }
    }

    /// The threshold of the rule that stops the unit on low (`below`) or high frequency, as a
    /// deviation from nominal, Hz; the nearest when several do.
    static func tripDeviation(_ rules: [InterlockRule], below: Bool) -> Double? {
        var found: Double?
        for rule in rules where rule.metric == .frequencyDeviation && rule.severity != .warn
            && rule.comparison == (below ? .below : .above)
        {
            found = found.map { below ? max($0, rule.threshold) : min($0, rule.threshold) } ?? rule.threshold
        }
        return found
    }

    /// The SOC threshold of `code` when the unit's table has it.
    static func socBound(_ rules: [InterlockRule], code: TripCode) -> Double? {
        rules.first { $0.code == code && $0.metric == .soc }?.threshold
    }
}

/// Which way a response reserve holds: the energy kept for under-frequency response (`discharge`,
/// above `SOC_LOW`) or for over-frequency response (`charge`, below `SOC_HIGH`).
public enum ReserveDirection: UInt8, Sendable, CaseIterable {
    case discharge, charge

    /// `discharge` or `charge`, as the journal and /metrics name it.
    public var name: String { self == .discharge ? "discharge" : "charge" }
}

extension UnitController {
    /// Keeps the unit's schedule (dispatch, AGC or SCADA setpoint) out of its response reserve once
    /// the unit has reached it: a command that would go further in a reached direction is cut to
    /// zero, and so are the ramped schedule and the latched pre-event power, at once. The droop
    /// response acts on top as before, with the whole allowed power as its room. Not for an operator
    /// override (the caller skips those).
    mutating func keepOutOfReserve(_ reached: (discharge: Bool, charge: Bool), dispatch: inout PowerCommand?) {
        guard reached.discharge || reached.charge else { return }
        if var command = dispatch, command.power.value.isFinite {
            command.power = Watts(Self.outOfReserve(command.power.value, reached))
            dispatch = command
        }
        running.schedule = Self.outOfReserve(running.schedule, reached)
        if let base = droop.latchedBase { droop.latchedBase = Watts(Self.outOfReserve(base.value, reached)) }
    }

    /// `power` (+ = discharge) with the reached directions cut to zero.
    static func outOfReserve(_ power: Double, _ reached: (discharge: Bool, charge: Bool)) -> Double {
        (reached.discharge && power > 0) || (reached.charge && power < 0) ? 0 : power
    }
}
