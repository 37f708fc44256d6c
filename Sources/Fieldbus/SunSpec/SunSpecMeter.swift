public import BessBase
public import ControlCore

extension SunSpec {
    /// Models 201–204, AC meters (single, split, wye and delta three-phase). Their points share one
    /// layout up to `TotWh_SF`; offsets count from `ID`.
    public enum Meter {
        public static let ids: [UInt16] = [201, 202, 203, 204]
        /// L of every meter model (points after `ID` and `L`).
        public static let length: UInt16 = 105
        public static let a = 2, aSF = 6, phV = 7, ppv = 11, vSF = 15, event = 105
        public static let hz = 16, hzSF = 17, w = 18, wSF = 22, reactive = 28, reactiveSF = 32
        public static let totWhExp = 38, totWhImp = 46, totWhSF = 54
    }
}

/// A discovered SunSpec AC meter (models 201–204) at the grid connection point.
///
/// The poll reads `PhV` through `TotWh_SF` (48 registers, one request), scale factors included, so
/// nothing is read once and kept. `W` and `VAR` are reported as the meter states them (SunSpec
/// meters: + = power taken from the grid); the site's configuration says how to read the sign.
public struct SunSpecMeter: Sendable {
    public let map: SunSpecMap
    public let model: SunSpecModelLocation
    private typealias M = SunSpec.Meter

    /// The registers read every cycle (offsets from the model's `ID`).
    public static let pollSpan = M.phV...M.totWhSF

    /// Discovers the device (or takes a known map) and finds its meter model.
    public static func open(_ device: inout some RegisterAccess, map known: SunSpecMap? = nil) throws(DeviceError) -> SunSpecMeter {
        let map: SunSpecMap
        if let known { map = known } else { map = try SunSpec.discover(&device) }
        guard let model = map.first(of: M.ids) else {
            throw DeviceError(.sunspecModelMissing, message: "no meter model (201, 202, 203 or 204)")
        }
        guard Int(model.length) + 2 > M.totWhSF else {
            throw DeviceError(.sunspecModelMissing, message: "model \(model.id) is \(model.length) registers long; too short for a meter")
        }
        return SunSpecMeter(map: map, model: model)
    }

    /// Reads W, var, V, Hz and the energy registers in one request.
    public func read(_ device: inout some RegisterAccess) throws(DeviceError) -> MeterReading {
        let span = Self.pollSpan
        let words: [UInt16]
        do {
            words = try device.readRegisters(at: model.address + span.lowerBound, count: span.count)
        } catch {
            throw error
        }
        guard words.count == span.count else {
            throw DeviceError(.badResponse, message: "model \(model.id): \(words.count) registers for \(span.count)")
        }
        return try Self.decode(SunSpecBlock(model: model, words: [UInt16](repeating: 0, count: span.lowerBound) + words))
    }

    /// Decodes a block holding the model's registers from `ID` to at least `TotWh_SF`.
    public static func decode(_ block: SunSpecBlock) throws(DeviceError) -> MeterReading {
        guard let power = block.scaled(block.int16(M.w).map(Int64.init), sf: M.wSF), power.isFinite else {
            throw DeviceError(.sunspecValueInvalid, message: "meter model \(block.model.id): W or W_SF is not implemented")
        }
        let hz = block.scaled(block.int16(M.hz).map(Int64.init), sf: M.hzSF).flatMap { $0 > 0 ? Hertz($0) : nil }
        let reactive = block.scaled(block.int16(M.reactive).map(Int64.init), sf: M.reactiveSF).flatMap { $0.isFinite ? $0 : nil }
        // `PhV` (line to neutral, the phases' average). A delta meter (204) that leaves it unimplemented
        // has none: its `PPV` is line to line (~400 V), not what a line-to-neutral reading says, so the
        // DER's voltage stands in.
        let volts = { (offset: Int) in block.scaled(block.int16(offset).map(Int64.init), sf: M.vSF).flatMap { $0 > 0 ? $0 : nil } }
        // acc32: 0 means "not accumulated".
        let exported = block.uint32(M.totWhExp).flatMap { $0 == 0 ? nil : block.scaled(Int64($0), sf: M.totWhSF) }
        let imported = block.uint32(M.totWhImp).flatMap { $0 == 0 ? nil : block.scaled(Int64($0), sf: M.totWhSF) }
        return MeterReading(gridPower: Watts(power), frequency: hz, importedEnergy: imported.map(WattHours.init),
                            exportedEnergy: exported.map(WattHours.init), reactivePower: reactive, voltage: volts(M.phV))
    }
}

/// The registers of a meter that does not speak SunSpec (`site.meter.register_map`).
public struct MeterRegisterMap: Sendable, Equatable {
    /// Active power at the connection point, W after scaling (sign as the meter states it).
    public var power: MappedRegister
    public var frequency: MappedRegister?
    /// Energy registers, Wh after scaling (optional).
    public var importedEnergy: MappedRegister?
    public var exportedEnergy: MappedRegister?

    public init(power: MappedRegister, frequency: MappedRegister? = nil, importedEnergy: MappedRegister? = nil,
                exportedEnergy: MappedRegister? = nil) {
        self.power = power
        self.frequency = frequency
        self.importedEnergy = importedEnergy
        self.exportedEnergy = exportedEnergy
    }

    var registers: [MappedRegister] { [power] + [frequency, importedEnergy, exportedEnergy].compactMap { $0 } }

    /// The registers the poll reads when they fit one request; nil when they lie too far apart.
    public var pollSpan: ClosedRange<Int>? {
        let low = registers.map(\.address).min()!
        let high = registers.map { $0.address + $0.count - 1 }.max()!
        return high - low < 125 ? low...high : nil
    }

    /// Reads the meter: one request when the registers fit one.
    public func read(_ device: inout some RegisterAccess) throws(DeviceError) -> MeterReading {
        do throws(DeviceError) {
            let block = try MappedRegisters(span: pollSpan, &device)
            func value(_ register: MappedRegister?, _ device: inout some RegisterAccess) throws(DeviceError) -> Double? {
                guard let register else { return nil }
                return try block.value(register, &device)
            }
            guard let power = try value(power, &device), power.isFinite else {
                throw DeviceError(.sunspecValueInvalid, message: "meter power register \(self.power.address) unreadable")
            }
            let hz = try value(frequency, &device).flatMap { $0 > 0 && $0.isFinite ? Hertz($0) : nil }
            let imported = try value(importedEnergy, &device).map(WattHours.init)
            let exported = try value(exportedEnergy, &device).map(WattHours.init)
            return MeterReading(gridPower: Watts(power), frequency: hz, importedEnergy: imported, exportedEnergy: exported)
        } catch {
            throw error
        }
    }
}
