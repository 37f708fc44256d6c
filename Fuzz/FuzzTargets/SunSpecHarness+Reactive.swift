import ControlCore
import Fieldbus
import HILPlant

/// The reactive side of a SunSpec inverter (issue 59): what 701 and 702 say, and model 704's var
/// setpoint written back. Invariants: a voltage read is finite and above 0 or absent (a nonsense
/// one is no reading), reactive power is finite or absent, 702's ratings are finite and above 0 or
/// absent; a var setpoint goes out with its revert armed first (0, enabled, a timer of at least
/// 1 s); VARS writes the var asked for held inside 702's `VarMaxInj` / `VarMaxAbs` (within one step
/// of `VarSet_SF`, or the register's bound, never of the other sign, never the "not implemented"
/// value); VAR_MAX_PCT writes at most ±100 % of the side's maximum, never of the other sign; a
/// NaN or ∞ asks nothing (0 var).
extension SunSpecHarness {
    /// What is asked of the var setpoint: small, at the ratings' scale, beyond any register, nonsense.
    static let reactiveRequests: [Double] = [0, 1, -1, 1_000, -1_000, 30_000, -30_000, 1e12, -1e12, .nan, .infinity, -.infinity]

    static func checkReactive(_ inverter: SunSpecInverter, _ reading: InverterReading?, into violations: inout Violations) {
        if let reading {
            violations.check(reading.voltage.map { $0.isFinite && $0 > 0 } ?? true, "inverter voltage \(String(describing: reading.voltage))")
            violations.check(reading.reactivePower.map(\.isFinite) ?? true, "inverter reactive power not finite")
        }
        let ratings = inverter.reactiveRatings
        for (name, value) in [("VAMax", ratings.apparentPower), ("VarMaxInj", ratings.maxInjecting), ("VarMaxAbs", ratings.maxAbsorbing)] {
            violations.check(value.map { $0.isFinite && $0 > 0 } ?? true, "702 \(name) read as \(String(describing: value))")
        }
        guard let control = inverter.reactiveControl else { return }
        typealias C = SunSpec.ACControls
        let model = control.model.address
        for request in reactiveRequests {
            let writes = control.writes(request, reactivePriority: true, revert: .seconds(30), rearm: true)
            let asked = request.isFinite ? request : 0
            guard writes.count == 3 || writes.count == 4,
                  let arm = writes.firstIndex(where: { $0.address == model + C.varSetEnaRvrt }),
                  let enable = writes.firstIndex(where: { $0.address == model + C.varSetEna }) else {
                violations.check(false, "704: \(request) var written as \(writes)")
                continue
            }
            let armed = writes[arm].values
            let timer = armed.count == 3 ? UInt32(armed[1]) << 16 | UInt32(armed[2]) : 0
            violations.check(armed.first == 1 && timer >= 1, "704: var revert written as \(armed), not enabled with a timer ≥ 1 s")
            violations.check(arm < enable && arm > 0 && writes[0].values.allSatisfy { $0 == 0 },
                             "704: the var setpoint went out before its revert (0) was set and armed: \(writes)")
            switch control.mode {
            case .vars(let sf):
                let values = writes[enable].values
                guard values.count == 5, values[0] == 1, values[1] == C.varModeVars else {
                    violations.check(false, "704: VARS setpoint written as \(values)")
                    continue
                }
                let raw = Int32(bitPattern: UInt32(values[3]) << 16 | UInt32(values[4]))
                violations.check(raw != .min, "704: VarSet written as the \"not implemented\" value")
                let step = SunSpec.powerOfTen(sf)
                let held = min(max(asked, -(control.maxAbsorbing ?? .infinity)), control.maxInjecting ?? .infinity)
                let written = Double(raw) * step
                let bound = (raw == .max || raw == -.max) && abs(held) >= Double(Int32.max) * step
                violations.check(bound || abs(written - held) <= step / 2 + abs(held) * 1e-9,
                                 "704: asked \(request) var (held \(held)), wrote \(written) var (VarSet_SF \(sf))")
                violations.check(written * held >= 0, "704: asked \(request) var, wrote \(written) var of the other sign")
            case .maxPercent(let sf, _, _):
                guard let set = writes.first(where: { $0.address == model + C.varSetPct }), set.values.count == 1 else {
                    violations.check(false, "704: VAR_MAX_PCT setpoint without VarSetPct (writes \(writes))")
                    continue
                }
                let raw = Int16(bitPattern: set.values[0])
                violations.check(raw != .min, "704: VarSetPct written as the \"not implemented\" value")
                let step = SunSpec.powerOfTen(sf)
                let percent = Double(raw) * step
                violations.check(abs(percent) <= 100 + step / 2 || raw == .max || raw == -.max, "704: VarSetPct \(percent) % beyond ±100 %")
                violations.check(percent * asked >= 0, "704: asked \(request) var, wrote \(percent) % of the other sign")
                violations.check(writes[enable].values == [1, C.varModeMaxPercent, C.priorityReactive],
                                 "704: VAR_MAX_PCT enabled as \(writes[enable].values)")
            }
        }
    }
}

extension SunSpecHarness {
    /// The HIL inverter (701, 704) with model 702 appended (120 kVA, 60 kvar injecting, 50
    /// absorbing at VA_SF and Var_SF 2), and variations: VARS at `VarSet_SF` 1; VAR_MAX_PCT only
    /// (`VarSet`, `VarSetRvrt`, `VarSet_SF` not implemented, `VarSetPct_SF` −1); a voltage of 0 V;
    /// a `V_SF` that is not implemented (the voltage's scale factor is no number).
    static func reactiveSeeds() -> [[UInt8]] {
        let image = SunSpecImage(profile: SunSpecDeviceProfile(measurementModel: 701, controlModel: 704, ratingW: 100_000))
        guard let controls = image.model(SunSpec.ACControls.id), let measurement = image.model(SunSpec.Measurement.id) else { return [] }
        typealias C = SunSpec.ACControls
        typealias R = SunSpec.Capacity
        typealias M = SunSpec.Measurement
        var capacity = [UInt16](repeating: 0, count: Int(R.length) + 2)
        capacity[0] = R.id
        capacity[1] = R.length
        (capacity[R.vaMax], capacity[R.varMaxInj], capacity[R.varMaxAbs], capacity[R.vaSF], capacity[R.varSF]) = (1_200, 600, 500, 2, 2)
        let rated = Array(image.words.dropLast(2)) + capacity + [0xFFFF, 0]
        func edited(_ changes: [(model: SunSpecModelLocation, offset: Int, values: [UInt16])]) -> [UInt8] {
            var words = rated
            for change in changes {
                let at = change.model.address - 40000 + change.offset
                guard at >= 0, at + change.values.count <= words.count else { continue }
                words.replaceSubrange(at..<(at + change.values.count), with: change.values)
            }
            return bytes(of: words)
        }
        return [
            edited([(controls, C.varSetSF, [1])]),
            edited([(controls, C.varSet, [0x8000, 0]), (controls, C.varSetRvrt, [0x8000, 0]), (controls, C.varSetSF, [0x8000]),
                    (controls, C.varSetPctSF, [0xFFFF])]),
            edited([(measurement, M.lnv, [0]), (measurement, M.vSF, [0xFFFF])]),
            edited([(measurement, M.lnv, [2_300]), (measurement, M.vSF, [0x8000])]),
        ]
    }
}
