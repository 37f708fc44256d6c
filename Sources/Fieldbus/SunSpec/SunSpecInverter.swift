public import ControlCore

/// How bessd commands active power on a SunSpec inverter.
public enum SunSpecCommandPath: String, Sendable {
    /// Model 704 `WSet` in watts with `WSetRvrtTms` (preferred).
    case acControls704
    /// Model 124 `OutWRte`/`InWRte` in % of `WChaMax` with `InOutWRte_RvrtTms` (docs/sunspec.md).
    case storage124
}

/// A discovered SunSpec inverter: where its models are and the static values read once.
public struct SunSpecInverter: Sendable {
    public let map: SunSpecMap
    public let measurement: SunSpecModelLocation
    public let commandPath: SunSpecCommandPath
    public let commandModel: SunSpecModelLocation
    /// The device's maximum active power (120 `WRtg`, else 121 `WMax`), if it states one.
    public let ratedPower: Watts?
    /// Model 124's base for `OutWRte`/`InWRte`: `WChaMax` × 10^`WChaMax_SF`.
    public let storageRateBase: Watts?
    /// Scale factors read once after discovery.
    let wSetSF: Int
    let inOutWRteSF: Int

    /// Discovers the device and reads its static values and scale factors.
    public static func open(_ device: inout some RegisterAccess) throws(SunSpecError) -> SunSpecInverter {
        let map = try SunSpec.discover(&device)
        guard let measurement = map.first(SunSpec.Measurement.id) ?? map.first(of: SunSpec.Inverter.ids) else {
            throw SunSpecError(code: "SUNSPEC_MODEL_MISSING", message: "no measurement model (701, 101, 102 or 103)")
        }
        var rated: Watts?
        do {
            if let nameplate = map.first(SunSpec.Nameplate.id) {
                let block = try SunSpec.read(nameplate, from: &device)
                rated = block.scaled(block.uint16(SunSpec.Nameplate.wRtg).map(Int64.init), sf: SunSpec.Nameplate.wRtgSF)
                    .map(Watts.init)
            }
            if rated == nil, let settings = map.first(SunSpec.Settings.id) {
                let block = try SunSpec.read(settings, from: &device)
                rated = block.scaled(block.uint16(SunSpec.Settings.wMax).map(Int64.init), sf: SunSpec.Settings.wMaxSF)
                    .map(Watts.init)
            }
            if let controls = map.first(SunSpec.ACControls.id) {
                let block = try SunSpec.read(controls, from: &device)
                // Without WSet_SF the meaning of WSet is unknown: refuse rather than guess 10^0.
                guard let sf = block.scaleFactor(SunSpec.ACControls.wSetSF) else {
                    throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "model 704 WSet_SF is not implemented")
                }
                return SunSpecInverter(
                    map: map, measurement: measurement, commandPath: .acControls704, commandModel: controls,
                    ratedPower: rated, storageRateBase: nil, wSetSF: sf, inOutWRteSF: 0)
            }
            if let storage = map.first(SunSpec.Storage.id) {
                typealias S = SunSpec.Storage
                let block = try SunSpec.read(storage, from: &device)
                guard let sf = block.scaleFactor(S.inOutWRteSF) else {
                    throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "model 124 InOutWRte_SF is not implemented")
                }
                // OutWRte and InWRte are percent of the maximum charge rate WChaMax (model notes:
                // "% WChaMax"; OutWRte's "% WDisChaMax" names a point 124 does not have), not of WMax.
                guard let base = block.scaled(block.uint16(S.wChaMax).map(Int64.init), sf: S.wChaMaxSF), base > 0 else {
                    throw SunSpecError(code: "SUNSPEC_VALUE_INVALID",
                                       message: "model 124 rates are % of WChaMax, but WChaMax or WChaMax_SF is not implemented or 0")
                }
                return SunSpecInverter(
                    map: map, measurement: measurement, commandPath: .storage124, commandModel: storage,
                    ratedPower: rated, storageRateBase: Watts(base), wSetSF: 0, inOutWRteSF: sf)
            }
        } catch let error as ModbusError {
            throw SunSpecError(code: error.code, message: error.message)
        } catch let error as SunSpecError {
            throw error
        } catch {
            throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "\(error)")
        }
        throw SunSpecError(code: "SUNSPEC_MODEL_MISSING", message: "no active-power control model (704 or 124)")
    }

    /// Reads the measurement model: power, frequency and fault state.
    public func readStatus(_ device: inout some RegisterAccess) throws(SunSpecError) -> InverterReading {
        let block: SunSpecBlock
        do {
            block = try SunSpec.read(measurement, from: &device)
        } catch {
            throw SunSpecError(code: error.code, message: error.message)
        }
        let power: Double?
        let frequency: Double?
        let faulted: Bool
        let faultBits: UInt32
        if measurement.id == SunSpec.Measurement.id {
            typealias M = SunSpec.Measurement
            power = block.scaled(block.int16(M.w).map(Int64.init), sf: M.wSF)
            frequency = block.scaled(block.uint32(M.hz).map(Int64.init), sf: M.hzSF)
            faulted = block.uint16(M.inverterState) == M.inverterStateFault
            faultBits = block.bitfield32(M.alarm) ?? 0
        } else {
            typealias M = SunSpec.Inverter
            power = block.scaled(block.int16(M.w).map(Int64.init), sf: M.wSF)
            frequency = block.scaled(block.uint16(M.hz).map(Int64.init), sf: M.hzSF)
            faulted = block.uint16(M.state) == M.stateFault
            faultBits = block.bitfield32(M.event1) ?? 0
        }
        guard let power else {
            throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "model \(measurement.id) W is not implemented")
        }
        return InverterReading(activePower: Watts(power), ratedPower: ratedPower, faulted: faulted, faultBits: faultBits,
                               frequency: frequency.map(Hertz.init))
    }

    /// Writes an active-power setpoint (+ = discharge) with the revert timer armed.
    public func command(_ power: Watts, revertSeconds: Int, _ device: inout some RegisterAccess) throws(SunSpecError) {
        let revert = UInt32(clamping: max(1, revertSeconds))
        do {
            switch commandPath {
            case .acControls704:
                typealias C = SunSpec.ACControls
                guard let raw = SunSpec.raw(power.value, sf: wSetSF, range: Int64(Int32.min + 1)...Int64(Int32.max)) else {
                    throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "setpoint \(power) does not fit WSet at SF \(wSetSF)")
                }
                let wset = UInt32(bitPattern: Int32(raw))
                // The revert value (0 W) first, then the revert armed (enable, time), then the
                // setpoint: whichever write fails, the device never holds an armed revert to an
                // unknown value, and the timer is armed before the new power takes effect. (One
                // request cannot carry both: WSetPct and WSetPctRvrt sit between them.)
                try device.writeRegisters(at: commandModel.address + C.wSetRvrt, SunSpec.words(0))
                try device.writeRegisters(at: commandModel.address + C.wSetEnaRvrt, [1] + SunSpec.words(revert))
                try device.writeRegisters(at: commandModel.address + C.wSetEna, [1, C.modeWatts] + SunSpec.words(wset))
            case .storage124:
                typealias S = SunSpec.Storage
                let base = storageRateBase?.value ?? 0
                let percent = base > 0 ? min(max(power.value / base * 100, -100), 100) : 0
                guard let raw = SunSpec.raw(abs(percent), sf: inOutWRteSF, range: 0...Int64(Int16.max)) else {
                    throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "rate \(percent) % does not fit at SF \(inOutWRteSF)")
                }
                let positive = UInt16(raw)
                let negative = UInt16(bitPattern: -Int16(raw))
                // Discharge at p %: OutWRte = p, InWRte = −p; charge at p %: InWRte = p, OutWRte = −p.
                let (out, into): (UInt16, UInt16) = percent >= 0 ? (positive, negative) : (negative, positive)
                try device.writeRegisters(at: commandModel.address + S.outWRte, [out, into, 0, UInt16(clamping: revert)])
                try device.writeRegisters(at: commandModel.address + S.storCtlMod, [S.modeCharge | S.modeDischarge])
            }
        } catch let error as ModbusError {
            throw SunSpecError(code: error.code, message: error.message)
        } catch let error as SunSpecError {
            throw error
        } catch {
            throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "\(error)")
        }
    }
}
