public import Simulation
import ControlCore
import Fieldbus

/// Ties a simulated unit's inverter to the SunSpec register image a `SunSpecServer` serves: applies
/// what clients wrote (setpoints, revert timers) and publishes what the plant measures.
public struct SunSpecPlantLink: Sendable {
    public let server: SunSpecServer

    public init(server: SunSpecServer) { self.server = server }

    /// Applies register writes to the inverter, then publishes its state. Call once per plant step,
    /// after `unit.step`. `gridVoltage`: the grid's voltage at the site (the inverter's AC voltage
    /// is the simulated unit's reading of it); NaN publishes it as not implemented.
    public func exchange(_ unit: inout SimulatedUnit, frequencyHz: Double, gridVoltage: Double = 230) {
        let profile = server.profile
        server.withImage { image, written in
            if !written.isEmpty {
                applyWrites(&unit, image: image, written: written, profile: profile)
                written.removeAll(keepingCapacity: true)
            }
            publish(unit, into: &image, frequencyHz: frequencyHz, gridVoltage: gridVoltage, profile: profile)
        }
    }

    private func applyWrites(_ unit: inout SimulatedUnit, image: SunSpecImage, written: Set<Int>,
                             profile: SunSpecDeviceProfile) {
        // Model 123 `Conn`: 0 opens the contactor, armed with `Conn_RvrtTms` (0: no revert), 1 closes it.
        if let model = image.model(SunSpec.Controls.id),
           written.contains(where: { ((model.address + SunSpec.Controls.connRvrtTms)...(model.address + SunSpec.Controls.conn)).contains($0) }) {
            let revert = image[SunSpec.Controls.id, SunSpec.Controls.connRvrtTms]
            unit.inverter.setConnected(image[SunSpec.Controls.id, SunSpec.Controls.conn] != SunSpec.Controls.disconnect,
                                       revert: revert > 0 ? .seconds(Int64(revert)) : nil)
        }
        if profile.controlModel == SunSpec.ACControls.id {
            typealias C = SunSpec.ACControls
            guard let model = image.model(C.id) else { return }
            // 704's var block: a write reaching `VarSetEna` … `VarSetRvrtTms` commands it and
            // restarts its revert timer (`VarSetRvrtTms`, 0: none), as `WSet`'s.
            let varArea = (model.address + C.varSetEna)...(model.address + C.varSetRvrtTms + 1)
            if written.contains(where: { varArea.contains($0) }) {
                let revert = image.get32(C.id, C.varSetRvrtTms)
                let reverted = Self.commandedVar(image, enabled: image[C.id, C.varSetEnaRvrt] == 1, revert: true, profile: profile)
                unit.inverter.command(reactiveVar: Self.commandedVar(image, profile: profile) ?? 0,
                                      revert: revert > 0 && revert != 0xFFFF_FFFF ? .seconds(Int64(revert)) : nil, revertVar: reverted ?? 0)
            }
            let setpointArea = (model.address + C.wSetEna)...(model.address + C.wSet + 1)
            guard written.contains(where: { setpointArea.contains($0) }) else { return }
            let revert = image.get32(C.id, C.wSetRvrtTms)
            unit.inverter.revertTimeout = revert > 0 ? .seconds(Int64(revert)) : nil
            unit.inverter.command(setpointW: Self.commandedWatts(image, profile: profile) ?? 0)
        } else {
            typealias S = SunSpec.Storage
            guard let model = image.model(S.id) else { return }
            let area = (model.address + S.storCtlMod)...(model.address + S.inOutWRteRvrtTms)
            guard written.contains(where: { area.contains($0) }) else { return }
            let revert = image[S.id, S.inOutWRteRvrtTms]
            unit.inverter.revertTimeout = revert > 0 ? .seconds(Int64(revert)) : nil
            unit.inverter.command(setpointW: Self.commandedWatts(image, profile: profile) ?? 0)
        }
    }

    /// The reactive power a client commanded in 704's var points (+ = injecting), as the inverter
    /// would apply it: `VarSetMod` VARS `VarSet` × 10^`VarSet_SF`, VAR_MAX_PCT `VarSetPct` % of the
    /// rating (the plant's `VarMaxInj`/`VarMaxAbs`); 0 while `VarSetEna` is not 1 (the inverter's
    /// own mode, which holds 0 var). `revert`: the revert values (`VarSetRvrt`, `VarSetPctRvrt`).
    public static func commandedVar(_ image: SunSpecImage, enabled: Bool? = nil, revert: Bool = false,
                                    profile: SunSpecDeviceProfile) -> Double? {
        typealias C = SunSpec.ACControls
        guard profile.controlModel == C.id, image.model(C.id) != nil else { return nil }
        guard enabled ?? (image[C.id, C.varSetEna] == 1) else { return 0 }
        switch image[C.id, C.varSetMod] {
        case C.varModeVars:
            let sf = Int(Int16(bitPattern: image[C.id, C.varSetSF]))
            guard (-10...10).contains(sf) else { return 0 }
            return Double(Int32(bitPattern: image.get32(C.id, revert ? C.varSetRvrt : C.varSet))) * SunSpec.powerOfTen(sf)
        case C.varModeMaxPercent:
            let sf = Int(Int16(bitPattern: image[C.id, C.varSetPctSF]))
            guard (-10...10).contains(sf) else { return 0 }
            return Double(Int16(bitPattern: image[C.id, revert ? C.varSetPctRvrt : C.varSetPct])) * SunSpec.powerOfTen(sf) / 100 * profile.ratingW
        default:
            return 0
        }
    }

    /// The power a client commanded in `image` (+ = discharge), as the inverter would apply it.
    public static func commandedWatts(_ image: SunSpecImage, profile: SunSpecDeviceProfile) -> Double? {
        if profile.controlModel == SunSpec.ACControls.id {
            typealias C = SunSpec.ACControls
            guard image.model(C.id) != nil else { return nil }
            let sf = Int(Int16(bitPattern: image[C.id, C.wSetSF]))
            let raw = Int32(bitPattern: image.get32(C.id, C.wSet))
            return image[C.id, C.wSetEna] == 1 ? Double(raw) * SunSpec.powerOfTen(sf) : 0
        }
        typealias S = SunSpec.Storage
        guard image.model(S.id) != nil else { return nil }
        let sf = Int(Int16(bitPattern: image[S.id, S.inOutWRteSF]))
        let out = Double(Int16(bitPattern: image[S.id, S.outWRte])) * SunSpec.powerOfTen(sf)
        let into = Double(Int16(bitPattern: image[S.id, S.inWRte])) * SunSpec.powerOfTen(sf)
        let mode = image[S.id, S.storCtlMod]
        var percent = 0.0
        if mode & S.modeDischarge != 0, out > 0 { percent = out }
        if mode & S.modeCharge != 0, into > 0 { percent = -into }
        // Both rates are percent of WChaMax (model 124's notes), as the device holds it now.
        let wChaMax = Double(image[S.id, S.wChaMax]) * SunSpec.powerOfTen(Int(Int16(bitPattern: image[S.id, S.wChaMaxSF])))
        return percent / 100 * wChaMax
    }

    private func publish(_ unit: SimulatedUnit, into image: inout SunSpecImage, frequencyHz: Double, gridVoltage: Double,
                         profile: SunSpecDeviceProfile) {
        let w = Int16(clamping: Int((unit.inverter.powerW / SunSpec.powerOfTen(image.wSF)).rounded()))
        // Var as the unit's reading gives it (0: bessd commands none), at W's scale; V in tenths.
        let reading = unit.inverterReading(at: MonotonicInstant(nanoseconds: 0), frequency: nil,
                                           gridVoltage: gridVoltage.isFinite ? gridVoltage : nil)
        let reactive = Int16(clamping: Int(((reading.reactivePower ?? 0) / SunSpec.powerOfTen(image.wSF)).rounded()))
        let volts: UInt16 = reading.voltage.map { UInt16(clamping: Int(($0 * 10).rounded())) } ?? 0xFFFF
        if profile.measurementModel == SunSpec.Measurement.id {
            typealias M = SunSpec.Measurement
            image[M.id, M.w] = UInt16(bitPattern: w)
            image[M.id, M.reactive] = UInt16(bitPattern: reactive)
            image[M.id, M.lnv] = volts
            // No measurement: SunSpec's "not implemented" value.
            image.set32(M.id, M.hz, frequencyHz.isFinite ? UInt32(clamping: Int((frequencyHz * 1000).rounded())) : 0xFFFF_FFFF)
            image[M.id, M.inverterState] = unit.inverter.faulted ? M.inverterStateFault : 3
            image[M.id, M.connectionState] = unit.inverter.connected ? M.connected : M.disconnected
        } else {
            let id = profile.measurementModel
            image[id, SunSpec.Inverter.w] = UInt16(bitPattern: w)
            image[id, SunSpec.Inverter.vAr] = UInt16(bitPattern: reactive)
            image[id, SunSpec.Inverter.phVphA] = volts
            image[id, SunSpec.Inverter.hz] = frequencyHz.isFinite ? UInt16(clamping: Int((frequencyHz * 100).rounded())) : 0xFFFF
            image[id, SunSpec.Inverter.state] = unit.inverter.faulted ? SunSpec.Inverter.stateFault
                : unit.inverter.connected ? 4 : SunSpec.Inverter.stateOff
        }
        // `Conn` as the inverter holds it now (1 again once its revert timer has run out).
        if image.model(SunSpec.Controls.id) != nil {
            image[SunSpec.Controls.id, SunSpec.Controls.conn] = unit.inverter.connected ? SunSpec.Controls.connect : SunSpec.Controls.disconnect
        }
        // Whole seconds left on the revert timer, rounded up; 0 with no timer or no setpoint yet.
        var remaining: UInt32 = 0
        if let timeout = unit.inverter.revertTimeout, let since = unit.inverter.sinceSetpoint, timeout > since {
            remaining = UInt32(clamping: Int64((timeout - since).secondsDouble.rounded(.up)))
        }
        if profile.controlModel == SunSpec.ACControls.id {
            typealias C = SunSpec.ACControls
            image.set32(C.id, C.wSetRvrtRem, remaining)
            if unit.inverter.reverted {
                // The revert values take over, as a real device shows them.
                image.set32(C.id, C.wSet, image.get32(C.id, C.wSetRvrt))
                image[C.id, C.wSetEna] = image[C.id, C.wSetEnaRvrt]
            }
            var varRemaining: UInt32 = 0
            if let timeout = unit.inverter.reactiveRevertTimeout, let since = unit.inverter.sinceReactiveSetpoint, timeout > since {
                varRemaining = UInt32(clamping: Int64((timeout - since).secondsDouble.rounded(.up)))
            }
            image.set32(C.id, C.varSetRvrtRem, varRemaining)
            if unit.inverter.reactiveReverted {
                image.set32(C.id, C.varSet, image.get32(C.id, C.varSetRvrt))
                image[C.id, C.varSetPct] = image[C.id, C.varSetPctRvrt]
                image[C.id, C.varSetEna] = image[C.id, C.varSetEnaRvrt]
            }
        } else {
            typealias S = SunSpec.Storage
            image[S.id, S.chaState] = UInt16(clamping: Int((unit.battery.soc * 1000).rounded()))
            if unit.inverter.reverted {
                image[S.id, S.outWRte] = 0
                image[S.id, S.inWRte] = 0
            }
        }
    }
}
