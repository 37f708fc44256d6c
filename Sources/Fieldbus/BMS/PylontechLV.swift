public import ControlCore

/// The Pylontech low-voltage CAN profile (the SMA Sunny Island "0x35x" family): CAN 2.0A, 500 kbit/s,
/// little-endian. See ../shared/reference/pylontech-lv-can-v1.2.pdf and REFERENCE.md §3.2.
///
/// | ID | Content |
/// |---|---|
/// | 0x351 | charge voltage limit (U16 0.1 V), charge / discharge current limit (S16 0.1 A), discharge voltage limit (U16 0.1 V, optional) |
/// | 0x355 | SOC (U16 %), SOH (U16 %), high-resolution SOC (U16 0.01 %, optional, used within 1 % of SOC) |
/// | 0x356 | voltage (S16 0.01 V), current (S16 0.1 A, + = charging), temperature (S16 0.1 °C) |
/// | 0x359 | protection bytes 0–1, alarm bytes 2–3, module count, "PN" |
/// | 0x35C | request flags: b7 charge enable, b6 discharge enable, b5/b4 force charge, b3 full charge |
/// | 0x35E | manufacturer name (ASCII) |
/// | 0x373 | Victron extension: min/max cell voltage (U16 mV), min/max cell temperature (U16 K) |
/// | 0x305 | inverter → BMS keep-alive, all zeros, every second |
///
/// 0x373 is not in the specification: `PylontechDecoder` expects it only once the BMS has sent it.
public enum PylontechLV {
    public static let limitsID: UInt32 = 0x351
    public static let statusID: UInt32 = 0x355
    public static let measurementsID: UInt32 = 0x356
    public static let protectionID: UInt32 = 0x359
    public static let requestsID: UInt32 = 0x35C
    public static let nameID: UInt32 = 0x35E
    public static let cellsID: UInt32 = 0x373
    public static let keepAliveID: UInt32 = 0x305
    /// The keep-alive bessd sends every second.
    public static let keepAlive = CANFrame(id: keepAliveID, length: 8, data: 0)

    /// Invalid markers: SMA's "reset to default" values.
    static let invalidUnsigned: UInt16 = 0xFFFF
    static let invalidSigned: Int16 = Int16.min

    /// Decodes one protection (bytes 0–1) or alarm (bytes 2–3) pair into conditions.
    static func conditions(_ first: UInt8, _ second: UInt8) -> BMSConditions {
        var c: BMSConditions = []
        if first & 0x02 != 0 { c.insert(.cellOvervoltage) }
        if first & 0x04 != 0 { c.insert(.cellUndervoltage) }
        if first & 0x08 != 0 { c.insert(.overtemperature) }
        if first & 0x10 != 0 { c.insert(.undertemperature) }
        if first & 0x80 != 0 { c.insert(.dischargeOvercurrent) }
        if second & 0x01 != 0 { c.insert(.chargeOvercurrent) }
        // The V1.2 table puts "system error" at bit 3; several implementations use bit 7: accept both.
        if second & 0x08 != 0 || second & 0x80 != 0 { c.insert(.systemError) }
        return c
    }

    /// Encodes conditions into a protection or alarm byte pair (system error at bit 3, per V1.2).
    public static func encode(_ c: BMSConditions) -> (UInt8, UInt8) {
        var first: UInt8 = 0
        var second: UInt8 = 0
        if c.contains(.cellOvervoltage) { first |= 0x02 }
        if c.contains(.cellUndervoltage) { first |= 0x04 }
        if c.contains(.overtemperature) { first |= 0x08 }
        if c.contains(.undertemperature) { first |= 0x10 }
        if c.contains(.dischargeOvercurrent) { first |= 0x80 }
        if c.contains(.chargeOvercurrent) { second |= 0x01 }
        if c.contains(.systemError) { second |= 0x08 }
        if c.contains(.internalCommunication) { second |= 0x08 }
        return (first, second)
    }

    /// The receive filters bessd installs: 0x350–0x35F and 0x370–0x37F standard data frames.
    public static let receiveFilters: [(id: UInt32, mask: UInt32)] = [(0x350, 0x7F0), (0x370, 0x7F0)]
}

/// Decoder of the Pylontech LV profile.
public struct PylontechDecoder: BMSDecoder {
    /// 0x359 protections and 0x35C requests: both in the V1.2 specification.
    public static let definedGroups: BMSGroups = [.protection, .requests]
    /// 0x373 cell extremes: a Victron extension that a genuine Pylontech never sends.
    public static let extensionGroups: BMSGroups = [.cells]
    /// `definedGroups` and `extensionGroups` of every Pylontech decoder (`BMSDecoder`).
    public var definedGroups: BMSGroups { Self.definedGroups }
    public var extensionGroups: BMSGroups { Self.extensionGroups }

    public private(set) var snapshot = BMSSnapshot(expectedGroups: Self.definedGroups)
    public private(set) var counters = DecoderCounters()
    /// The BMS's name from 0x35E, if sent.
    public private(set) var manufacturer: String?
    /// Module count from 0x359.
    public private(set) var moduleCount: Int?

    public init() {}

    public mutating func ingest(_ frame: CANFrame, at instant: MonotonicInstant) -> FrameRejection? {
        let rejection = decode(frame, at: instant)
        if let rejection { counters.count(rejection) } else { counters.accepted &+= 1 }
        return rejection
    }

    private mutating func decode(_ f: CANFrame, at t: MonotonicInstant) -> FrameRejection? {
        guard !f.isError, !f.isRemote, !f.isExtended else { return .wrongKind }
        switch f.id {
        case PylontechLV.limitsID:
            guard f.length >= 6 else { return .shortFrame }
            let cvl = f.uint16LE(0), ccl = f.int16LE(2), dcl = f.int16LE(4)
            guard ccl != PylontechLV.invalidSigned, dcl != PylontechLV.invalidSigned else { return .invalidValue }
            let dvl: UInt16? = f.length >= 8 ? f.uint16LE(6) : nil
            // Some emulators send the discharge limit negative: it is a magnitude.
            snapshot.limits = Timestamped(BMSLimits(
                chargeVoltageLimit: cvl == PylontechLV.invalidUnsigned ? nil : Volts(Double(cvl) / 10),
                chargeCurrentLimit: Amps(Double(max(ccl, 0)) / 10),
                dischargeCurrentLimit: Amps(Double(abs(Int(dcl))) / 10),
                dischargeVoltageLimit: dvl.flatMap { $0 == PylontechLV.invalidUnsigned || $0 == 0 ? nil : Volts(Double($0) / 10) }),
                at: t)
        case PylontechLV.statusID:
            guard f.length >= 4 else { return .shortFrame }
            let soc = f.uint16LE(0), soh = f.uint16LE(2)
            guard soc <= 100 else { return .invalidValue }
            var socValue = Double(soc)
            // Bytes 4–5 are empty in the Pylontech specification (SMA's high-resolution SOC): a BMS that
            // pads the frame with zeros must not read as empty, so the finer value is used only where
            // it agrees with the whole-percent one.
            if f.length >= 6 {
                let hires = f.uint16LE(4)
                if hires != PylontechLV.invalidUnsigned, hires <= 10_000, abs(Double(hires) / 100 - socValue) <= 1 {
                    socValue = Double(hires) / 100
                }
            }
            snapshot.status = Timestamped(BMSStatus(
                soc: Percent(socValue), soh: soh <= 100 ? Percent(Double(soh)) : nil), at: t)
        case PylontechLV.measurementsID:
            guard f.length >= 6 else { return .shortFrame }
            let v = f.int16LE(0), i = f.int16LE(2), temp = f.int16LE(4)
            guard v != PylontechLV.invalidSigned, i != PylontechLV.invalidSigned, temp != PylontechLV.invalidSigned,
                  v >= 0
            else { return .invalidValue }
            snapshot.measurements = Timestamped(BMSMeasurements(
                packVoltage: Volts(Double(v) / 100), packCurrent: Amps(Double(i) / 10),
                temperature: Celsius(Double(temp) / 10)), at: t)
        case PylontechLV.protectionID:
            guard f.length >= 4 else { return .shortFrame }
            snapshot.protection = Timestamped(BMSProtectionState(
                protections: PylontechLV.conditions(f.byte(0), f.byte(1)),
                alarms: PylontechLV.conditions(f.byte(2), f.byte(3) & ~0x08)
                    .union(f.byte(3) & 0x08 != 0 ? .internalCommunication : [])), at: t)
            if f.length >= 5 { moduleCount = Int(f.byte(4)) }
        case PylontechLV.requestsID:
            guard f.length >= 1 else { return .shortFrame }
            let flags = f.byte(0)
            snapshot.requests = Timestamped(BMSRequests(
                chargeEnabled: flags & 0x80 != 0, dischargeEnabled: flags & 0x40 != 0,
                forceCharge: flags & 0x30 != 0), at: t)
        case PylontechLV.nameID:
            guard f.length >= 1 else { return .shortFrame }
            let bytes = f.bytes.prefix { $0 != 0 }
            guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return .invalidValue }
            manufacturer = String(decoding: bytes, as: UTF8.self).trimmingSpaces()
        case PylontechLV.cellsID:
            // The BMS sends the extension, valid or not: from now on its absence is missing.
            snapshot.expectedGroups.insert(.cells)
            guard f.length >= 8 else { return .shortFrame }
            let vMin = f.uint16LE(0), vMax = f.uint16LE(2), tMin = f.uint16LE(4), tMax = f.uint16LE(6)
            guard vMin <= vMax, vMax < 10_000, tMin <= tMax, tMin > 173, tMax < 473 else { return .invalidValue }
            snapshot.cells = Timestamped(CellStatistics(
                minCellVoltage: Volts(Double(vMin) / 1000), maxCellVoltage: Volts(Double(vMax) / 1000),
                minTemperature: Celsius(Double(tMin) - 273.15), maxTemperature: Celsius(Double(tMax) - 273.15)), at: t)
        case 0x350...0x35F, 0x370...0x37F, PylontechLV.keepAliveID:
            return nil  // other frames of the family carry nothing the control law uses
        default:
            return .unknownID
        }
        return nil
    }
}

/// What a Pylontech-profile BMS sends: the encoder the HIL plant's BMS emulator uses.
public struct PylontechBMSState: Sendable, Equatable {
    public var chargeVoltageLimit: Double
    public var chargeCurrentLimit: Double
    public var dischargeCurrentLimit: Double
    public var dischargeVoltageLimit: Double
    public var soc: Double
    public var soh: Double
    public var voltage: Double
    public var current: Double
    public var temperature: Double
    public var minCellVoltage: Double
    public var maxCellVoltage: Double
    public var minCellTemperature: Double
    public var maxCellTemperature: Double
    public var protections: BMSConditions
    public var alarms: BMSConditions
    public var chargeEnabled: Bool
    public var dischargeEnabled: Bool
    public var moduleCount: UInt8
    public var name: String

    public init(chargeVoltageLimit: Double, chargeCurrentLimit: Double, dischargeCurrentLimit: Double,
                dischargeVoltageLimit: Double, soc: Double, soh: Double, voltage: Double, current: Double,
                temperature: Double, minCellVoltage: Double, maxCellVoltage: Double, minCellTemperature: Double,
                maxCellTemperature: Double, protections: BMSConditions = [], alarms: BMSConditions = [],
                chargeEnabled: Bool = true, dischargeEnabled: Bool = true, moduleCount: UInt8 = 1,
                name: String = "PYLON") {
        self.chargeVoltageLimit = chargeVoltageLimit
        self.chargeCurrentLimit = chargeCurrentLimit
        self.dischargeCurrentLimit = dischargeCurrentLimit
        self.dischargeVoltageLimit = dischargeVoltageLimit
        self.soc = soc
        self.soh = soh
        self.voltage = voltage
        self.current = current
        self.temperature = temperature
        self.minCellVoltage = minCellVoltage
        self.maxCellVoltage = maxCellVoltage
        self.minCellTemperature = minCellTemperature
        self.maxCellTemperature = maxCellTemperature
        self.protections = protections
        self.alarms = alarms
        self.chargeEnabled = chargeEnabled
        self.dischargeEnabled = dischargeEnabled
        self.moduleCount = moduleCount
        self.name = name
    }

    /// The frames of one transmission cycle, in the order a BMS sends them.
    public func frames() -> [CANFrame] {
        func u16(_ v: Double) -> [UInt8] {
            let raw = UInt16(clamping: Int(v.isFinite ? v.rounded() : 0xFFFF))
            return [UInt8(raw & 0xFF), UInt8(raw >> 8)]
        }
        func s16(_ v: Double) -> [UInt8] {
            let raw = UInt16(bitPattern: Int16(clamping: Int(v.isFinite ? v.rounded() : -32768)))
            return [UInt8(raw & 0xFF), UInt8(raw >> 8)]
        }
        let (p0, p1) = PylontechLV.encode(protections)
        let (a0, a1) = PylontechLV.encode(alarms)
        var flags: UInt8 = 0
        if chargeEnabled { flags |= 0x80 }
        if dischargeEnabled { flags |= 0x40 }
        var nameBytes = Array(name.utf8.prefix(8))
        while nameBytes.count < 8 { nameBytes.append(0x20) }
        return [
            CANFrame(id: PylontechLV.limitsID, bytes: u16(chargeVoltageLimit * 10) + s16(chargeCurrentLimit * 10)
                     + s16(dischargeCurrentLimit * 10) + u16(dischargeVoltageLimit * 10)),
            CANFrame(id: PylontechLV.statusID, bytes: u16(soc.rounded()) + u16(soh) + u16(soc * 100)),
            CANFrame(id: PylontechLV.measurementsID, bytes: s16(voltage * 100) + s16(current * 10) + s16(temperature * 10)),
            CANFrame(id: PylontechLV.protectionID, bytes: [p0, p1, a0, a1, moduleCount, 0x50, 0x4E]),
            CANFrame(id: PylontechLV.requestsID, bytes: [flags, 0]),
            CANFrame(id: PylontechLV.nameID, bytes: nameBytes),
            CANFrame(id: PylontechLV.cellsID, bytes: u16(minCellVoltage * 1000) + u16(maxCellVoltage * 1000)
                     + u16(minCellTemperature + 273.15) + u16(maxCellTemperature + 273.15)),
        ]
    }
}

extension String {
    func trimmingSpaces() -> String {
        var s = Substring(self)
        while s.last == " " { s.removeLast() }
        while s.first == " " { s.removeFirst() }
        return String(s)
    }
}
