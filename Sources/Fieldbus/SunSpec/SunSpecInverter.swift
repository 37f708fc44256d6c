public import BessBase
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
    /// Scale factors read at discovery and at each refresh of the static values.
    package let wSetSF: Int
    package let inOutWRteSF: Int
    /// Model 701's `W_SF`, `Hz_SF`, `V_SF` and `Var_SF` (nil: not implemented). They sit at the far
    /// end of the model, so the poll does not read them; models 101–103 carry theirs inside the polled span.
    let measurementSF: MeasurementScale
    /// Model 123 implements `Conn_RvrtTms` (read at discovery; 0xFFFF: not implemented). Without it
    /// an open could not be armed to revert, so the unit is not opened (`ModbusDevice.canOpen`).
    public var connectArmable = false
    /// Model 704's var points (`SunSpecReactiveControl`); nil without them (`REACTIVE_UNAVAILABLE`).
    public var reactiveControl: SunSpecReactiveControl?
    /// Model 702's apparent- and reactive-power ratings, as far as the device states them.
    public var reactiveRatings = SunSpecReactiveRatings()

    /// Model 701's scale factors, read at discovery and at each refresh.
    struct MeasurementScale: Sendable {
        var w: Int?, hz: Int?, v: Int?, reactive: Int?
    }

    /// The measurement registers read every cycle (offsets from the model's `ID`): for 701 `St` to
    /// `Hz` (state, alarms, W, var, V, Hz: 16 registers), for 101–103 `PhVphA` to `Evt1` with their
    /// scale factors (32 registers). One request either way.
    public static func pollSpan(_ id: UInt16) -> ClosedRange<Int> {
        id == Measurement.id ? Measurement.state...(Measurement.hz + 1) : Inverter.phVphA...(Inverter.event1 + 1)
    }
    private typealias Measurement = SunSpec.Measurement
    private typealias Inverter = SunSpec.Inverter

    /// Discovers the device and reads its static values and scale factors. With `map` (a device
    /// already discovered), the model chain is not walked again: only the static values and scale
    /// factors are re-read, as the worker does every minute.
    public static func open(_ device: inout some RegisterAccess, map known: SunSpecMap? = nil) throws(DeviceError)
        -> SunSpecInverter
    {
        let map: SunSpecMap
        if let known { map = known } else { map = try SunSpec.discover(&device) }
        guard let measurement = map.first(SunSpec.Measurement.id) ?? map.first(of: SunSpec.Inverter.ids) else {
            throw DeviceError(.sunspecModelMissing, message: "no measurement model (701, 101, 102 or 103)")
        }
        var rated: Watts?
        do throws(DeviceError) {
            var measurementSF = MeasurementScale()
            if measurement.id == Measurement.id {
                // V_SF through Var_SF are adjacent (114…119): one request.
                let count = Measurement.varSF - Measurement.vSF + 1
                let words = try device.readRegisters(at: measurement.address + Measurement.vSF, count: count)
                let block = SunSpecBlock(model: measurement, words: [UInt16](repeating: 0, count: Measurement.vSF) + words)
                measurementSF = MeasurementScale(w: block.scaleFactor(Measurement.wSF), hz: block.scaleFactor(Measurement.hzSF),
                                                 v: block.scaleFactor(Measurement.vSF), reactive: block.scaleFactor(Measurement.varSF))
            }
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
            var armable = false
            var ratings = SunSpecReactiveRatings()
            if let capacity = map.first(SunSpec.Capacity.id) {
                // Optional: a 702 the device lists but will not read costs the ratings, never the unit
                // (its active power is commanded without them).
                ratings = SunSpecReactiveRatings.read(try? SunSpec.read(capacity, from: &device))
            }
            if let connect = map.first(SunSpec.Controls.id) {
                let words = try device.readRegisters(at: connect.address + SunSpec.Controls.connRvrtTms, count: 1)
                armable = words.count == 1 && words[0] != 0xFFFF
            }
            if let controls = map.first(SunSpec.ACControls.id) {
                let block = try SunSpec.read(controls, from: &device)
                // Without WSet_SF the meaning of WSet is unknown: refuse rather than guess 10^0.
                guard let sf = block.scaleFactor(SunSpec.ACControls.wSetSF) else {
                    throw DeviceError(.sunspecValueInvalid, message: "model 704 WSet_SF is not implemented")
                }
                return SunSpecInverter(
                    map: map, measurement: measurement, commandPath: .acControls704, commandModel: controls,
                    ratedPower: rated, storageRateBase: nil, wSetSF: sf, inOutWRteSF: 0, measurementSF: measurementSF,
                    connectArmable: armable, reactiveControl: SunSpecReactiveControl.discover(block, ratings: ratings),
                    reactiveRatings: ratings)
            }
            if let storage = map.first(SunSpec.Storage.id) {
                typealias S = SunSpec.Storage
                let block = try SunSpec.read(storage, from: &device)
                guard let sf = block.scaleFactor(S.inOutWRteSF) else {
                    throw DeviceError(.sunspecValueInvalid, message: "model 124 InOutWRte_SF is not implemented")
                }
                // OutWRte and InWRte are percent of the maximum charge rate WChaMax (model notes:
                // "% WChaMax"; OutWRte's "% WDisChaMax" names a point 124 does not have), not of WMax.
                guard let base = block.scaled(block.uint16(S.wChaMax).map(Int64.init), sf: S.wChaMaxSF), base > 0 else {
                    throw DeviceError(.sunspecValueInvalid,
                                       message: "model 124 rates are % of WChaMax, but WChaMax or WChaMax_SF is not implemented or 0")
                }
                return SunSpecInverter(
                    map: map, measurement: measurement, commandPath: .storage124, commandModel: storage,
                    ratedPower: rated, storageRateBase: Watts(base), wSetSF: 0, inOutWRteSF: sf, measurementSF: measurementSF,
                    connectArmable: armable, reactiveRatings: ratings)
            }
        } catch {
            throw error
        }
        throw DeviceError(.sunspecModelMissing, message: "no active-power control model (704 or 124)")
    }

    /// Reads power, reactive power, AC voltage, frequency and fault state: one request of `pollSpan`
    /// registers. Reactive power is signed as active power is; the voltage is line to neutral (701
    /// `LNV`; 101–103 the average of the `PhVph*` implemented). Either is nil when not implemented.
    public func readStatus(_ device: inout some RegisterAccess) throws(DeviceError) -> InverterReading {
        let span = Self.pollSpan(measurement.id)
        let block: SunSpecBlock
        do throws(DeviceError) {
            let words = try device.readRegisters(at: measurement.address + span.lowerBound, count: span.count)
            guard words.count == span.count else {
                throw DeviceError(.badResponse,
                                   message: "model \(measurement.id): \(words.count) registers for \(span.count)")
            }
            // Offsets count from ID: pad the registers before the span so the point offsets apply
            // (one array, built to its size).
            var padded = [UInt16]()
            padded.reserveCapacity(span.upperBound + 1)
            padded.append(contentsOf: repeatElement(0, count: span.lowerBound))
            padded.append(contentsOf: words)
            block = SunSpecBlock(model: measurement, words: padded)
        } catch {
            throw error
        }
        let power: Double?
        let frequency: Double?
        let faulted: Bool
        let faultBits: UInt32
        let reactive: Double?
        var voltage: Double?
        let connected: Bool?
        if measurement.id == Measurement.id {
            power = SunSpec.scaled(block.int16(Measurement.w).map(Int64.init), sf: measurementSF.w)
            frequency = SunSpec.scaled(block.uint32(Measurement.hz).map(Int64.init), sf: measurementSF.hz)
            faulted = block.uint16(Measurement.inverterState) == Measurement.inverterStateFault
            faultBits = block.bitfield32(Measurement.alarm) ?? 0
            reactive = SunSpec.scaled(block.int16(Measurement.reactive).map(Int64.init), sf: measurementSF.reactive)
            voltage = SunSpec.scaled(block.uint16(Measurement.lnv).map(Int64.init), sf: measurementSF.v)
            connected = switch block.uint16(Measurement.connectionState) {
            case Measurement.disconnected?: false
            case Measurement.connected?: true
            default: nil
            }
        } else {
            power = block.scaled(block.int16(Inverter.w).map(Int64.init), sf: Inverter.wSF)
            frequency = block.scaled(block.uint16(Inverter.hz).map(Int64.init), sf: Inverter.hzSF)
            faulted = block.uint16(Inverter.state) == Inverter.stateFault
            faultBits = block.bitfield32(Inverter.event1) ?? 0
            reactive = block.scaled(block.int16(Inverter.vAr).map(Int64.init), sf: Inverter.vArSF)
            connected = block.uint16(Inverter.state).map { $0 != Inverter.stateOff }
            var sum = 0.0, phases = 0.0
            for phase in Inverter.phVphA...Inverter.phVphC {
                guard let v = block.scaled(block.uint16(phase).map(Int64.init), sf: Inverter.vSF), v > 0 else { continue }
                sum += v
                phases += 1
            }
            if phases > 0 { voltage = sum / phases }
        }
        guard let power else {
            throw DeviceError(.sunspecValueInvalid, message: "model \(measurement.id) W or W_SF is not implemented")
        }
        return InverterReading(activePower: Watts(power), ratedPower: ratedPower, faulted: faulted, faultBits: faultBits,
                               frequency: frequency.map(Hertz.init), reactivePower: reactive.flatMap { $0.isFinite ? $0 : nil },
                               voltage: voltage.flatMap { $0 > 0 && $0.isFinite ? $0 : nil }, connected: connected)
    }

    /// Model 123 (Immediate controls), where `Conn` opens and closes the unit's contactor; nil when
    /// the device has none (it cannot be opened: bessd keeps it at zero power).
    public var connectControl: SunSpecModelLocation? { map.first(SunSpec.Controls.id) }

    /// The one request that opens or closes the contactor, three adjacent registers from
    /// `Conn_WinTms`: `Conn_WinTms` 0 (at once: a device's own window does not delay it),
    /// `Conn_RvrtTms`, `Conn`. Opening (`connect` false): `Conn_RvrtTms` = `revert` in whole seconds
    /// rounded up, `Conn` 0: always armed, after the timer the inverter returns to connected, so
    /// bessd re-writes it on its own timer. Closing: `Conn_RvrtTms` 0 (a close never reverts), `Conn`
    /// 1. Nil without model 123.
    public func connectionWrite(connect: Bool, revert: Duration) -> (address: Int, values: [UInt16])? {
        guard let model = connectControl else { return nil }
        typealias C = SunSpec.Controls
        if connect { return (model.address + C.connWinTms, [0, 0, C.connect]) }
        let seconds = UInt16(clamping: max(1, revert.wholeSecondsRoundedUp))
        return (model.address + C.connWinTms, [0, seconds, C.disconnect])
    }

    /// Opens or closes the contactor (`connectionWrite`); without model 123 throws
    /// `SUNSPEC_MODEL_MISSING` and writes nothing.
    public func setConnection(connect: Bool, revert: Duration, _ device: inout some RegisterAccess) throws(DeviceError) {
        guard let write = connectionWrite(connect: connect, revert: revert) else {
            throw DeviceError(.sunspecModelMissing, message: "no model 123 (Conn): the contactor cannot be opened")
        }
        try device.writeRegisters(at: write.address, write.values)
    }

    /// Writes an active-power setpoint (+ = discharge). With `rearm` (the first write after discovery,
    /// and every refresh of the revert timer) the revert value and the timer are written before it;
    /// without, only the setpoint (one request): the timer stays armed from the last rearm.
    public func command(_ power: Watts, revert: Duration, rearm: Bool = true, _ device: inout some RegisterAccess)
        throws(DeviceError)
    {
        // `…RvrtTms` is whole seconds on the wire, rounded up: never before bessd's re-arm plans.
        let revertSeconds = UInt32(clamping: max(1, revert.wholeSecondsRoundedUp))
        do throws(DeviceError) {
            switch commandPath {
            case .acControls704:
                typealias C = SunSpec.ACControls
                guard let raw = SunSpec.raw(power.value, sf: wSetSF, range: Int64(Int32.min + 1)...Int64(Int32.max)) else {
                    throw DeviceError(.sunspecValueInvalid, message: "setpoint \(power) does not fit WSet at SF \(wSetSF)")
                }
                let wset = UInt32(bitPattern: Int32(raw))
                // The revert value (0 W) first, then the revert armed (enable, time), then the
                // setpoint: whichever write fails, the device never holds an armed revert to an
                // unknown value, and the timer is armed before the new power takes effect. (One
                // request cannot carry both: WSetPct and WSetPctRvrt sit between them.)
                if rearm {
                    try device.writeRegisters(at: commandModel.address + C.wSetRvrt, SunSpec.words(0))
                    try device.writeRegisters(at: commandModel.address + C.wSetEnaRvrt, [1] + SunSpec.words(revertSeconds))
                }
                try device.writeRegisters(at: commandModel.address + C.wSetEna, [1, C.modeWatts] + SunSpec.words(wset))
            case .storage124:
                typealias S = SunSpec.Storage
                let base = storageRateBase?.value ?? 0
                let percent = base > 0 ? min(max(power.value / base * 100, -100), 100) : 0
                guard let raw = SunSpec.raw(abs(percent), sf: inOutWRteSF, range: 0...Int64(Int16.max)) else {
                    throw DeviceError(.sunspecValueInvalid, message: "rate \(percent) % does not fit at SF \(inOutWRteSF)")
                }
                let positive = UInt16(raw)
                let negative = UInt16(bitPattern: -Int16(raw))
                // Discharge at p %: OutWRte = p, InWRte = −p; charge at p %: InWRte = p, OutWRte = −p.
                let (out, into): (UInt16, UInt16) = percent >= 0 ? (positive, negative) : (negative, positive)
                try device.writeRegisters(at: commandModel.address + S.outWRte, [out, into, 0, UInt16(clamping: revertSeconds)])
                if rearm { try device.writeRegisters(at: commandModel.address + S.storCtlMod, [S.modeCharge | S.modeDischarge]) }
            }
        } catch {
            throw error
        }
    }
}
