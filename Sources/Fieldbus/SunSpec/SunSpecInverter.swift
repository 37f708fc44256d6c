public import ControlCore

/// How bessd commands active power on a SunSpec inverter.
public enum SunSpecCommandPath: String, Sendable {
    /// Model 704 `WSet` in watts with `WSetRvrtTms` (preferred).
    case acControls704
    /// Model 124 `OutWRte`/`InWRte` in % of `WMax` with `InOutWRte_RvrtTms` (docs/sunspec.md).
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
                return SunSpecInverter(
                    map: map, measurement: measurement, commandPath: .acControls704, commandModel: controls,
                    ratedPower: rated, wSetSF: block.scaleFactor(SunSpec.ACControls.wSetSF) ?? 0, inOutWRteSF: 0)
            }
            if let storage = map.first(SunSpec.Storage.id) {
                let block = try SunSpec.read(storage, from: &device)
                guard let sf = block.scaleFactor(SunSpec.Storage.inOutWRteSF) else {
                    throw SunSpecError(code: "SUNSPEC_VALUE_INVALID", message: "model 124 InOutWRte_SF is not implemented")
                }
                guard rated != nil else {
                    throw SunSpecError(code: "SUNSPEC_VALUE_INVALID",
                                       message: "model 124 rates are % of WMax, but the device states no WRtg or WMax")
                }
                return SunSpecInverter(
                    map: map, measurement: measurement, commandPath: .storage124, commandModel: storage,
                    ratedPower: rated, wSetSF: 0, inOutWRteSF: sf)
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
                // Revert first (time, value 0 W, stay enabled), then the setpoint: the timer is armed
                // before the new power takes effect.
                try device.writeRegisters(at: commandModel.address + C.wSetEnaRvrt, [1] + SunSpec.words(revert))
                try device.writeRegisters(at: commandModel.address + C.wSetEna,
                                          [1, C.modeWatts] + SunSpec.words(wset) + SunSpec.words(0))
            case .storage124:
                typealias S = SunSpec.Storage
                let rating = ratedPower?.value ?? 0
                let percent = rating > 0 ? min(max(power.value / rating * 100, -100), 100) : 0
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
