public import ControlCore

/// A device described as data: a BMS, an inverter or a meter, read from a profile file
/// (`devices/*.yaml`, docs/devices.md). The configuration loader builds it and checks it as strictly as
/// the configuration; the workers compile it into the bounded decoders they run
/// (`ProfiledCANDecoder`, `ProfiledModbusBMS`, `ProfiledInverter`).
public struct DeviceProfile: Sendable, Equatable {
    public enum Kind: String, Sendable, CaseIterable { case bms, inverter, meter }

    /// The name a configuration gives as `profile: NAME` (letters, digits, '-', '_', '.').
    public var name: String
    public var kind: Kind
    public var vendor: String
    /// The products it covers, as the vendor names them.
    public var products: [String]
    /// Where the facts came from (document, version, page), one line each.
    public var sources: [String]
    /// The file it was read from ("" for one built in).
    public var path: String
    public var transport: ProfileTransport
    /// How `bessctl probe` recognises the device; nil when it cannot.
    public var identity: ProfileIdentity?
    public var signals: [ProfileSignal]
    /// BMS only: which signals arrive together, and when a group's absence counts as missing.
    public var groups: [ProfileGroup]
    /// BMS (or inverter) conditions: a bit or value of a signal → a BMS condition with its severity.
    public var alarms: [ProfileAlarm]
    /// What bessd sends unasked: CAN keep-alive or request frames, with their period.
    public var keepAlive: [ProfileFrame]
    /// Inverter only: how power is commanded and how the device falls back without bessd.
    public var commands: ProfileCommands?
    /// BMS only: the pack's cells in series, when the profile fixes it (a configuration's value wins).
    public var cellsInSeries: Int?

    public init(name: String, kind: Kind, vendor: String, products: [String], sources: [String] = [], path: String = "",
                transport: ProfileTransport, identity: ProfileIdentity? = nil, signals: [ProfileSignal],
                groups: [ProfileGroup] = [], alarms: [ProfileAlarm] = [], keepAlive: [ProfileFrame] = [],
                commands: ProfileCommands? = nil, cellsInSeries: Int? = nil) {
        self.name = name
        self.kind = kind
        self.vendor = vendor
        self.products = products
        self.sources = sources
        self.path = path
        self.transport = transport
        self.identity = identity
        self.signals = signals
        self.groups = groups
        self.alarms = alarms
        self.keepAlive = keepAlive
        self.commands = commands
        self.cellsInSeries = cellsInSeries
    }
}

public enum ProfileTransport: Sendable, Equatable {
    case can(CANProfileTransport)
    case modbus(ModbusProfileTransport)
}

public struct CANProfileTransport: Sendable, Equatable {
    public enum Mode: String, Sendable, CaseIterable { case broadcast, request }
    public var bitrate: Int
    /// 29-bit identifiers (CAN 2.0B) when true.
    public var extended: Bool
    /// `broadcast`: the BMS sends unasked; `request`: it answers bessd's `keepAlive` frames.
    public var mode: Mode
    /// The kernel receive filters (id, mask); frames that pass and carry no signal are ignored, not
    /// counted unknown.
    public var filters: [CANFilter]
    public init(bitrate: Int, extended: Bool, mode: Mode, filters: [CANFilter]) {
        self.bitrate = bitrate
        self.extended = extended
        self.mode = mode
        self.filters = filters
    }
}

public struct CANFilter: Sendable, Equatable {
    public var id: UInt32
    public var mask: UInt32
    public init(id: UInt32, mask: UInt32) {
        self.id = id
        self.mask = mask
    }
    public func matches(_ frameID: UInt32) -> Bool { frameID & mask == id & mask }
}

public struct ModbusProfileTransport: Sendable, Equatable {
    public enum Link: String, Sendable, CaseIterable { case tcp, rtu, any }
    public var link: Link
    /// The unit id the vendor defaults to (a configuration's `modbus.unit_id` wins).
    public var defaultUnitID: Int
    /// The most registers one read may ask for (≤ 125).
    public var maxReadRegisters: Int
    /// The least time the device needs between the end of one answer and the next request (BYD's
    /// rack: 300 ms); zero when it takes them back to back.
    public var requestGap: Duration
    /// The default order of 32-bit values: true when the low word is at the lower address.
    public var lowWordFirst: Bool
    public init(link: Link, defaultUnitID: Int, maxReadRegisters: Int = 125, lowWordFirst: Bool = false,
                requestGap: Duration = .zero) {
        self.requestGap = requestGap
        self.link = link
        self.defaultUnitID = defaultUnitID
        self.maxReadRegisters = maxReadRegisters
        self.lowWordFirst = lowWordFirst
    }
}

/// How a device is recognised: a Modbus register whose value is one of `values`, or a CAN frame id seen.
public enum ProfileIdentity: Sendable, Equatable {
    case modbusRegister(table: ModbusTable, address: Int, values: [UInt16])
    case canFrame(id: UInt32)
}

public enum ModbusTable: String, Sendable, CaseIterable { case holding, input }

/// What a signal means to bessd. Signals with no quantity are read and reported only.
public enum ProfileQuantity: String, Sendable, CaseIterable {
    // BMS
    case soc, soh, socFine = "soc_fine"
    case packVoltage = "pack_voltage", packCurrent = "pack_current", temperature
    case chargeVoltageLimit = "charge_voltage_limit", dischargeVoltageLimit = "discharge_voltage_limit"
    case chargeCurrentLimit = "charge_current_limit", dischargeCurrentLimit = "discharge_current_limit"
    case chargePowerLimit = "charge_power_limit", dischargePowerLimit = "discharge_power_limit"
    case minCellVoltage = "min_cell_voltage", maxCellVoltage = "max_cell_voltage"
    case minCellTemperature = "min_cell_temperature", maxCellTemperature = "max_cell_temperature"
    case chargeEnabled = "charge_enabled", dischargeEnabled = "discharge_enabled", forceCharge = "force_charge"
    // inverter
    case activePower = "active_power", frequency, ratedPower = "rated_power", state

    /// A value the BMS snapshot can do without (a voltage limit, SOH, the fine SOC, force charge):
    /// invalid or out of range, it is absent and the frame or read is still used. Any other invalid
    /// value refuses the frame or read.
    public var mayBeAbsent: Bool {
        switch self {
        case .soh, .socFine, .chargeVoltageLimit, .dischargeVoltageLimit, .forceCharge: true
        default: false
        }
    }
}

/// Where a CAN signal sits in its frame, DBC style.
public struct CANSignalLocation: Sendable, Equatable {
    public enum ByteOrder: String, Sendable, CaseIterable { case little, big }
    public var frameID: UInt32
    /// The byte the value starts in (0–7) and, for `little`, the bit in that byte of its least
    /// significant bit (0–7). `big` values are byte-aligned: `bit` is 0 and `bits` a multiple of 8.
    public var byte: Int
    public var bit: Int
    /// 1–64.
    public var bits: Int
    public var order: ByteOrder
    public init(frameID: UInt32, byte: Int, bit: Int = 0, bits: Int, order: ByteOrder) {
        self.frameID = frameID
        self.byte = byte
        self.bit = bit
        self.bits = bits
        self.order = order
    }
}

/// Where a Modbus signal sits.
public struct ModbusSignalLocation: Sendable, Equatable {
    public enum ValueType: String, Sendable, CaseIterable { case int16, uint16, int32, uint32 }
    public var table: ModbusTable
    /// PDU (0-based) address of the first register.
    public var address: Int
    public var type: ValueType
    public var lowWordFirst: Bool
    /// A SunSpec-style scale-factor register (int16 power of ten) read with the value; nil: `scale` alone.
    public var scaleFactorAddress: Int?
    public init(table: ModbusTable, address: Int, type: ValueType, lowWordFirst: Bool = false,
                scaleFactorAddress: Int? = nil) {
        self.table = table
        self.address = address
        self.type = type
        self.lowWordFirst = lowWordFirst
        self.scaleFactorAddress = scaleFactorAddress
    }
    public var count: Int { type == .int16 || type == .uint16 ? 1 : 2 }
}

public enum SignalLocation: Sendable, Equatable {
    case can(CANSignalLocation)
    case modbus(ModbusSignalLocation)
}

/// One value: where it is, how raw becomes engineering (value = raw × scale + offset), what is invalid.
public struct ProfileSignal: Sendable, Equatable {
    public var name: String
    public var quantity: ProfileQuantity?
    public var location: SignalLocation
    public var signed: Bool
    /// Never 0 (check-config refuses it).
    public var scale: Double
    public var offset: Double
    /// Raw values that mean "not available" (e.g. 0xFFFF, -32768): the frame or read is refused, or
    /// the value is absent when it may be (`optional`, `ProfileQuantity.mayBeAbsent`).
    public var invalidRaw: [Int64]
    /// The engineering range outside which the value is refused (`CAN_FRAME_INVALID_VALUE`), checked
    /// after `magnitude` and `clampMinimum`; absent instead when it may be.
    public var valid: ClosedRange<Double>?
    /// Take the magnitude (a discharge limit some BMSs send negative).
    public var magnitude: Bool
    /// Clamp below at this engineering value after scaling (a negative charge limit means 0).
    public var clampMinimum: Double?
    /// For `soc_fine`: used instead of `soc` only within this many percent of it (0 = always).
    public var agreeWithin: Double?
    /// A trailing field some devices leave out (`optional: true`): a CAN frame that ends before it is
    /// not short, and the value is then absent, as it is when invalid or out of range.
    public var optional: Bool
    /// ASCII text up to the first NUL (`text: true`), a name: a byte outside printable ASCII refuses
    /// the frame; a frame may end inside it (its first byte is needed). Read and reported only.
    public var text: Bool
    public init(name: String, quantity: ProfileQuantity?, location: SignalLocation, signed: Bool = false,
                scale: Double = 1, offset: Double = 0, invalidRaw: [Int64] = [], valid: ClosedRange<Double>? = nil,
                magnitude: Bool = false, clampMinimum: Double? = nil, agreeWithin: Double? = nil,
                optional: Bool = false, text: Bool = false) {
        self.name = name
        self.quantity = quantity
        self.location = location
        self.signed = signed
        self.scale = scale
        self.offset = offset
        self.invalidRaw = invalidRaw
        self.valid = valid
        self.magnitude = magnitude
        self.clampMinimum = clampMinimum
        self.agreeWithin = agreeWithin
        self.optional = optional
        self.text = text
    }
}

/// Which part of the BMS snapshot a group fills, and when its absence counts.
public struct ProfileGroup: Sendable, Equatable {
    public enum Part: String, Sendable, CaseIterable { case status, limits, measurements, protection, requests, cells }
    public enum Presence: String, Sendable, CaseIterable {
        /// Expected from the start: absent is missing (`BMS_GROUP_MISSING`).
        case required
        /// Expected only once this link has carried it (an extension some BMSs send).
        case onceSeen = "once_seen"
    }
    public var part: Part
    public var presence: Presence
    /// How often the device sends or bessd reads it.
    public var period: Duration
    public init(part: Part, presence: Presence, period: Duration) {
        self.part = part
        self.presence = presence
        self.period = period
    }
}

/// A signal's bit (or value) → a BMS condition.
public struct ProfileAlarm: Sendable, Equatable {
    public enum Severity: String, Sendable, CaseIterable { case protection, alarm }
    public enum Condition: String, Sendable, CaseIterable {
        case cellOvervoltage = "cell_overvoltage", cellUndervoltage = "cell_undervoltage"
        case overtemperature, undertemperature
        case dischargeOvercurrent = "discharge_overcurrent", chargeOvercurrent = "charge_overcurrent"
        case systemError = "system_error", internalCommunication = "internal_communication"
        public var condition: BMSConditions {
            switch self {
            case .cellOvervoltage: .cellOvervoltage
            case .cellUndervoltage: .cellUndervoltage
            case .overtemperature: .overtemperature
            case .undertemperature: .undertemperature
            case .dischargeOvercurrent: .dischargeOvercurrent
            case .chargeOvercurrent: .chargeOvercurrent
            case .systemError: .systemError
            case .internalCommunication: .internalCommunication
            }
        }
    }
    /// The signal (by name) the condition is read from; its raw value, before scale.
    public var signal: String
    /// Active when this bit of the raw value is set …
    public var bit: Int?
    /// … or when the raw value equals one of these.
    public var equals: [Int64]
    public var condition: Condition
    public var severity: Severity
    public init(signal: String, bit: Int? = nil, equals: [Int64] = [], condition: Condition, severity: Severity) {
        self.signal = signal
        self.bit = bit
        self.equals = equals
        self.condition = condition
        self.severity = severity
    }
}

/// A frame bessd sends on its own: a keep-alive (Pylontech 0x305) or a request (Pylon HV 0x4200).
public struct ProfileFrame: Sendable, Equatable {
    public var id: UInt32
    public var extended: Bool
    public var data: [UInt8]
    public var period: Duration
    public init(id: UInt32, extended: Bool, data: [UInt8], period: Duration) {
        self.id = id
        self.extended = extended
        self.data = data
        self.period = period
    }
}

/// One register write of a sequence.
public struct RegisterWrite: Sendable, Equatable {
    public var address: Int
    public var value: UInt16
    public init(address: Int, value: UInt16) {
        self.address = address
        self.value = value
    }
}

/// How an inverter profile commands active power.
public struct ProfileCommands: Sendable, Equatable {
    public enum Setpoint: Sendable, Equatable {
        /// One signed register (or pair): W = raw × scale, + = discharge (a negative scale flips it).
        case signed(address: Int, type: ModbusSignalLocation.ValueType, scale: Double, lowWordFirst: Bool)
        /// A direction register and a magnitude register (Sungrow: 0xAA charge, 0xBB discharge, 0xCC stop).
        case split(direction: Int, charge: UInt16, discharge: UInt16, stop: UInt16,
                   magnitude: Int, type: ModbusSignalLocation.ValueType, scale: Double)
    }
    /// How the device falls back when bessd stops. A profile that commands power must have one.
    public enum Fallback: Sendable, Equatable {
        /// A revert timer written with every command (seconds × scale into the register).
        case revertTimer(address: Int, scale: Double)
        /// A watchdog register bessd rewrites with `seconds` at least every seconds/2.
        case watchdog(address: Int, seconds: Int)
        /// A communication timeout set once at start; any traffic (bessd's polls included) feeds it,
        /// so the poll period must be under half of it.
        case trafficTimeout(address: Int, seconds: Int)
        /// Commands only through a time slot whose end is its revert (`seconds` from each write).
        case timeSlot(seconds: Int)
    }
    public var setpoint: Setpoint
    /// Written in order before the first command, and again after the device is seen to fall back
    /// (mode selection, start); each write may name a precondition signal and value.
    public var start: [RegisterWrite]
    /// Written in order when bessd stops commanding (stop, back to the device's own mode).
    public var stop: [RegisterWrite]
    public var fallback: Fallback
    /// The register table commands are written to (always holding).
    public init(setpoint: Setpoint, start: [RegisterWrite] = [], stop: [RegisterWrite] = [], fallback: Fallback) {
        self.setpoint = setpoint
        self.start = start
        self.stop = stop
        self.fallback = fallback
    }
}
