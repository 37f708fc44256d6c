public import BessBase
import ControlCore

/// SunSpec model identifiers and point offsets bessd uses, from the official model definitions
/// (sunspec/models JSON). Offsets count from the model's `ID` register (`ID` at 0, `L` at 1).
public enum SunSpec {
    /// Where discovery looks for the "SunS" marker, in order (0-based protocol addresses).
    public static let baseAddresses = [40000, 0, 50000]
    /// "SunS".
    public static let marker: (UInt16, UInt16) = (0x5375, 0x6E53)
    /// The end model's ID.
    public static let endModelID: UInt16 = 0xFFFF

    /// Model 1, Common (L = 66).
    public enum Common {
        public static let id: UInt16 = 1
        public static let length: UInt16 = 66
        public static let manufacturer = 2, model = 18, options = 34, version = 42, serial = 50, deviceAddress = 66
    }

    /// Models 101/102/103, single/split/three-phase inverter, integer + scale factor (L = 50).
    public enum Inverter {
        public static let ids: [UInt16] = [101, 102, 103]
        public static let length: UInt16 = 50
        public static let phVphA = 10, phVphB = 11, phVphC = 12, vSF = 13
        public static let w = 14, wSF = 15, hz = 16, hzSF = 17, vAr = 20, vArSF = 21, state = 38, event1 = 40
        /// `St` value meaning FAULT.
        public static let stateFault: UInt16 = 7
        /// `St` value meaning OFF (disconnected from the grid).
        public static let stateOff: UInt16 = 1
    }

    /// Model 120, Nameplate (L = 26).
    public enum Nameplate {
        public static let id: UInt16 = 120
        public static let length: UInt16 = 26
        public static let derType = 2, wRtg = 3, wRtgSF = 4, whRtg = 19, whRtgSF = 20
        public static let maxChaRte = 23, maxChaRteSF = 24, maxDisChaRte = 25, maxDisChaRteSF = 26
    }

    /// Model 121, Basic settings (L = 30).
    public enum Settings {
        public static let id: UInt16 = 121
        public static let length: UInt16 = 30
        public static let wMax = 2, wMaxSF = 22
    }

    /// Model 123, Immediate controls (L = 24).
    public enum Controls {
        public static let id: UInt16 = 123
        public static let length: UInt16 = 24
        public static let connWinTms = 2, connRvrtTms = 3, conn = 4, wMaxLimPct = 5, wMaxLimPctRvrtTms = 7, wMaxLimEna = 9
        public static let wMaxLimPctSF = 23
        /// `Conn`: 0 disconnect (open), 1 connect. After `Conn_RvrtTms` the inverter returns to connected.
        public static let disconnect: UInt16 = 0, connect: UInt16 = 1
    }

    /// Model 124, Storage (L = 24).
    public enum Storage {
        public static let id: UInt16 = 124
        public static let length: UInt16 = 24
        public static let wChaMax = 2, storCtlMod = 5, chaState = 8, chaSt = 11, outWRte = 12, inWRte = 13
        public static let inOutWRteRvrtTms = 15, wChaMaxSF = 18, chaStateSF = 22, inOutWRteSF = 25
        /// `StorCtl_Mod` bits: charge limit active, discharge limit active.
        public static let modeCharge: UInt16 = 1, modeDischarge: UInt16 = 2
    }

    /// Model 701, DER AC measurement (L = 153).
    public enum Measurement {
        public static let id: UInt16 = 701
        public static let length: UInt16 = 153
        public static let state = 3, inverterState = 4, connectionState = 5, alarm = 6, w = 10, reactive = 12, lnv = 16, hz = 17
        public static let vSF = 114, hzSF = 115, wSF = 116, varSF = 119
        /// `InvSt` value meaning FAULT.
        public static let inverterStateFault: UInt16 = 6
        /// `ConnSt` values: DISCONNECTED, CONNECTED.
        public static let disconnected: UInt16 = 0, connected: UInt16 = 1
    }

    /// Model 704, DER AC controls (L = 65).
    public enum ACControls {
        public static let id: UInt16 = 704
        public static let length: UInt16 = 65
        public static let wSetEna = 22, wSetMod = 23, wSet = 24, wSetRvrt = 26, wSetEnaRvrt = 30
        public static let wSetRvrtTms = 31, wSetRvrtRem = 33, antiIslEna = 52, wSetSF = 55
        /// `WSetMod`: setpoint in watts.
        public static let modeWatts: UInt16 = 1
        /// The reactive-power setpoint's points (`VarSetEna` … `VarSetRvrtRem`) and scale factors.
        public static let varSetEna = 35, varSetMod = 36, varSetPri = 37, varSet = 38, varSetRvrt = 40
        public static let varSetPct = 42, varSetPctRvrt = 43, varSetEnaRvrt = 44, varSetRvrtTms = 45, varSetRvrtRem = 47
        public static let varSetSF = 57, varSetPctSF = 58
        /// `VarSetMod`: % of `VarMaxInj`/`VarMaxAbs` (VAR_MAX_PCT), or var (VARS).
        public static let varModeMaxPercent: UInt16 = 1, varModeVars: UInt16 = 4
        /// `VarSetPri`: active power has priority (ACTIVE), or reactive (REACTIVE).
        public static let priorityActive: UInt16 = 0, priorityReactive: UInt16 = 1
    }

    /// Model 702, DER capacity (L = 50): the apparent- and reactive-power ratings.
    public enum Capacity {
        public static let id: UInt16 = 702
        public static let length: UInt16 = 50
        public static let vaMaxRtg = 7, varMaxInjRtg = 8, varMaxAbsRtg = 9, vaMax = 31, varMaxInj = 32, varMaxAbs = 33
        public static let vaSF = 47, varSF = 48
    }
}

/// One model found on the device.
public struct SunSpecModelLocation: Sendable, Equatable {
    public var id: UInt16
    /// Registers after `ID` and `L`.
    public var length: UInt16
    /// Address of the model's `ID` register.
    public var address: Int
    public init(id: UInt16, length: UInt16, address: Int) {
        self.id = id
        self.length = length
        self.address = address
    }
}

/// A device's model chain.
public struct SunSpecMap: Sendable, Equatable {
    /// Address of "SunS".
    public var base: Int
    public var models: [SunSpecModelLocation]
    public func first(_ id: UInt16) -> SunSpecModelLocation? { models.first { $0.id == id } }
    public func first(of ids: [UInt16]) -> SunSpecModelLocation? { models.first { ids.contains($0.id) } }
}

/// Reads and writes holding registers: a Modbus connection, or a fake in tests.
public protocol RegisterAccess {
    /// Reads `count` (≤ 125) holding registers from `address`.
    mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16]
    /// Writes `values` (≤ 123) to holding registers from `address`.
    mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError)
}

extension SunSpec {
    /// Finds "SunS" at 40000, 0 or 50000 and walks the model chain by each model's length.
    public static func discover(_ device: inout some RegisterAccess) throws(DeviceError) -> SunSpecMap {
        var base: Int?
        var lastError: DeviceError?
        var answered = false
        for candidate in baseAddresses {
            do {
                let words = try device.readRegisters(at: candidate, count: 2)
                answered = true
                if words.count == 2, words[0] == marker.0, words[1] == marker.1 {
                    base = candidate
                    break
                }
            } catch {
                lastError = error
                // "Illegal data address" is an answer: nothing at that address.
                if error.code == .exception(2) { answered = true }
                // No answer at all: asking at other addresses only costs more timeouts on the bus.
                if error.isConnectionLost || error.code == .timeout { break }
            }
        }
        guard let base else {
            // Nothing but failures (a dead unit, or one that answers every request with an exception):
            // report the bus's own code, not "no SunSpec here".
            if let lastError, lastError.isConnectionLost || !answered {
                throw lastError
            }
            throw DeviceError(.sunspecNotFound, message: "no SunS marker at 40000, 0 or 50000")
        }
        var models: [SunSpecModelLocation] = []
        var address = base + 2
        while models.count < 64 {
            // ID and L are read separately from the data: some devices omit L on the end model.
            let id: UInt16
            do {
                id = try device.readRegisters(at: address, count: 1).first ?? endModelID
            } catch {
                throw DeviceError(error.code, message: "reading model ID at \(address): \(error.message)")
            }
            if id == endModelID || id == 0 { return SunSpecMap(base: base, models: models) }
            let length: UInt16
            do {
                length = try device.readRegisters(at: address + 1, count: 1).first ?? 0
            } catch {
                throw DeviceError(error.code, message: "reading model \(id) length at \(address + 1): \(error.message)")
            }
            guard address + 2 + Int(length) <= 65535 else {
                throw DeviceError(.sunspecChainBroken,
                                   message: "model \(id) at \(address) with length \(length) runs past the register space")
            }
            models.append(SunSpecModelLocation(id: id, length: length, address: address))
            address += 2 + Int(length)
        }
        throw DeviceError(.sunspecChainBroken, message: "more than 64 models without an end model")
    }

    /// Reads a whole model (ID and L included) in blocks of at most 125 registers.
    public static func read(_ model: SunSpecModelLocation, from device: inout some RegisterAccess)
        throws(DeviceError) -> SunSpecBlock
    {
        var words: [UInt16] = []
        let total = Int(model.length) + 2
        words.reserveCapacity(total)
        var offset = 0
        while offset < total {
            let count = min(125, total - offset)
            words += try device.readRegisters(at: model.address + offset, count: count)
            offset += count
        }
        return SunSpecBlock(model: model, words: words)
    }
}

/// The registers of one model, with typed point access that applies scale factors and treats the
/// "not implemented" sentinels as absent.
public struct SunSpecBlock: Sendable, Equatable {
    public var model: SunSpecModelLocation
    /// Registers from the model's `ID` register on.
    public var words: [UInt16]

    public init(model: SunSpecModelLocation, words: [UInt16]) {
        self.model = model
        self.words = words
    }

    public func uint16(_ offset: Int) -> UInt16? {
        guard offset >= 0, offset < words.count, words[offset] != 0xFFFF else { return nil }
        return words[offset]
    }

    public func int16(_ offset: Int) -> Int16? {
        guard offset >= 0, offset < words.count else { return nil }
        let value = Int16(bitPattern: words[offset])
        return value == Int16.min ? nil : value
    }

    public func uint32(_ offset: Int) -> UInt32? {
        guard offset >= 0, offset + 1 < words.count else { return nil }
        let value = UInt32(words[offset]) << 16 | UInt32(words[offset + 1])
        return value == 0xFFFF_FFFF ? nil : value
    }

    public func int32(_ offset: Int) -> Int32? {
        guard let raw = uint32Raw(offset) else { return nil }
        let value = Int32(bitPattern: raw)
        return value == Int32.min ? nil : value
    }

    func uint32Raw(_ offset: Int) -> UInt32? {
        guard offset >= 0, offset + 1 < words.count else { return nil }
        return UInt32(words[offset]) << 16 | UInt32(words[offset + 1])
    }

    /// A bitfield32 (no sentinel handling beyond all-ones).
    public func bitfield32(_ offset: Int) -> UInt32? { uint32(offset) }

    /// A scale factor: −10…10; `nil` for 0x8000 (not implemented) or out of range.
    public func scaleFactor(_ offset: Int) -> Int? {
        guard let sf = int16(offset), (-10...10).contains(sf) else { return nil }
        return Int(sf)
    }

    /// value × 10^sf, or nil when either is absent.
    public func scaled(_ raw: Int64?, sf offset: Int) -> Double? {
        guard let raw, let sf = scaleFactor(offset) else { return nil }
        return SunSpec.scaled(raw, sf: sf)
    }
}

extension SunSpec {
    /// 10^exponent for −10…10, exact for the positive powers.
    public static func powerOfTen(_ exponent: Int) -> Double {
        var result = 1.0
        for _ in 0..<abs(exponent) { result *= 10 }
        return exponent >= 0 ? result : 1 / result
    }

    /// The raw register value that represents `value` at scale factor `sf` (round(value / 10^sf)),
    /// or nil when it does not fit `range`.
    public static func raw(_ value: Double, sf: Int, range: ClosedRange<Int64>) -> Int64? {
        guard value.isFinite else { return nil }
        let raw = (value / powerOfTen(sf)).rounded()
        guard raw >= Double(range.lowerBound), raw <= Double(range.upperBound) else { return nil }
        return Int64(raw)
    }

    /// raw × 10^sf, or nil when either is absent (a scale factor read earlier and kept).
    public static func scaled(_ raw: Int64?, sf: Int?) -> Double? {
        guard let raw, let sf else { return nil }
        // Divide for a negative factor: 4998 / 100 is 49.98 exactly rounded; 4998 × 0.01 is not.
        return sf >= 0 ? Double(raw) * powerOfTen(sf) : Double(raw) / powerOfTen(-sf)
    }

    /// Splits a 32-bit value into two registers, high word first.
    public static func words(_ value: UInt32) -> [UInt16] { [UInt16(value >> 16), UInt16(value & 0xFFFF)] }
}
