public import ControlCore

/// `ConnectStatusType` bits (`genConnectStatus`, `storConnectStatus`).
public struct ConnectStatus: OptionSet, Hashable, Sendable {
    /// The bits as the document writes them.
    public let rawValue: UInt8
    /// The set of `rawValue`'s bits.
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Bit 0: connected to the grid (contactors closed).
    public static let connected = Self(rawValue: 1 << 0)
    /// Bit 1: available (nothing stops the site from running).
    public static let available = Self(rawValue: 1 << 1)
    /// Bit 2: operating (energized, exchanging power or ready to).
    public static let operating = Self(rawValue: 1 << 2)
    /// Bit 3: test mode.
    public static let test = Self(rawValue: 1 << 3)
    /// Bit 4: fault or error.
    public static let fault = Self(rawValue: 1 << 4)
}

/// `InverterStatusType`.
public enum InverterStatus: UInt8, Hashable, Sendable {
    /// 0: not applicable.
    case notApplicable = 0
    /// 1: off.
    case off = 1
    /// 2: sleeping (auto-shutdown) or at low output.
    case sleeping = 2
    /// 3: starting up, or on and not producing power.
    case starting = 3
    /// 4: tracking the maximum power point.
    case trackingMPPT = 4
    /// 5: forced power reduction or derating.
    case forcedPowerReduction = 5
    /// 6: shutting down.
    case shuttingDown = 6
    /// 7: one or more faults.
    case faults = 7
    /// 8: standby (service on unit).
    case standby = 8
    /// 9: test mode.
    case test = 9
    /// 10: as the manufacturer status says.
    case manufacturerStatus = 10
}

/// `OperationalModeStatusType`.
public enum OperationalModeStatus: UInt8, Hashable, Sendable {
    /// 0: not applicable.
    case notApplicable = 0
    /// 1: off.
    case off = 1
    /// 2: operational.
    case operational = 2
    /// 3: test mode.
    case test = 3
}

/// `StorageModeStatusType`.
public enum StorageModeStatus: UInt8, Hashable, Sendable {
    /// 0: charging.
    case charging = 0
    /// 1: discharging.
    case discharging = 1
    /// 2: holding (neither).
    case holding = 2

    /// The mode of a site whose DER power is `dischargeW` (+ = discharge, bessd's convention): holding
    /// within ±`deadbandW`.
    public init(dischargeW: Double, deadbandW: Double) {
        self = dischargeW > deadbandW ? .discharging : dischargeW < -deadbandW ? .charging : .holding
    }
}

/// `AlarmStatusType` bits (`DERStatus.alarmStatus`, HexBinary32).
public struct DERAlarms: OptionSet, Hashable, Sendable {
    /// The bits as the document writes them.
    public let rawValue: UInt32
    /// The set of `rawValue`'s bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Bit 0: over current.
    public static let overCurrent = Self(rawValue: 1 << 0)
    /// Bit 1: over voltage.
    public static let overVoltage = Self(rawValue: 1 << 1)
    /// Bit 2: under voltage.
    public static let underVoltage = Self(rawValue: 1 << 2)
    /// Bit 3: over frequency.
    public static let overFrequency = Self(rawValue: 1 << 3)
    /// Bit 4: under frequency.
    public static let underFrequency = Self(rawValue: 1 << 4)
    /// Bit 5: voltage imbalance.
    public static let voltageImbalance = Self(rawValue: 1 << 5)
    /// Bit 6: current imbalance.
    public static let currentImbalance = Self(rawValue: 1 << 6)
    /// Bit 7: local emergency.
    public static let emergencyLocal = Self(rawValue: 1 << 7)
    /// Bit 8: remote emergency.
    public static let emergencyRemote = Self(rawValue: 1 << 8)
    /// Bit 9: low input power.
    public static let lowPowerInput = Self(rawValue: 1 << 9)
    /// Bit 10: phase rotation.
    public static let phaseRotation = Self(rawValue: 1 << 10)

    /// The alarms of one trip code. The table (docs/ieee2030-5.md): a current or voltage protection
    /// (the battery is part of the DER) to its bit; the grid's frequency trips to theirs; every trip that
    /// shuts a unit down until an operator resets it to the local emergency as well. Derates, state-of-charge
    /// bounds, warnings and lost communication set no alarm (they show in `inverterStatus` and
    /// `genConnectStatus` instead); RoCoF has no bit of its own.
    public static func of(_ code: TripCode) -> Self {
        switch code {
        case .chargeOvercurrent, .dischargeOvercurrent: .overCurrent
        case .cellOvervoltage, .packOvervoltage, .acOvervoltage, .gridOvervoltage: .overVoltage
        case .cellOvervoltageCritical: [.overVoltage, .emergencyLocal]
        case .cellUndervoltage, .packUndervoltage, .acUndervoltage, .gridUndervoltage: .underVoltage
        case .cellUndervoltageCritical: [.underVoltage, .emergencyLocal]
        case .gridOverfrequency: .overFrequency
        case .gridUnderfrequency: .underFrequency
        case .overtemperatureCritical, .thermalRunaway, .bmsCritical, .latchStateCorrupt: .emergencyLocal
        case .cellVoltageHighDerate, .cellVoltageLowDerate, .cellImbalance, .temperatureHighDerate, .overtemperature,
             .undertemperatureCharge, .undertemperatureDischarge, .socHigh, .socLow, .bmsProtection, .bmsAlarm,
             .bmsChargeDisabled, .bmsDischargeDisabled, .inverterFault, .gridRocof, .bmsCommLost, .inverterCommLost,
             .frequencyLost, .bmsGroupMissing: []
        }
    }

    /// The alarms of every code in `trips` (the site's units together).
    public init(_ trips: TripCodeSet) {
        var alarms: Self = []
        for code in trips { alarms.formUnion(Self.of(code)) }
        self = alarms
    }
}

/// A status value and the time it took effect (`dateTime`), seconds since the Unix epoch (server time).
public struct StatusValue<Value: Hashable & Sendable>: Hashable, Sendable {
    /// The value.
    public var value: Value
    /// When it took effect.
    public var since: Int64
    /// `value`, in effect since `since`.
    public init(_ value: Value, since: Int64) {
        self.value = value
        self.since = since
    }
}

/// `DERStatus` of the site's one aggregated DER.
public struct DERStatusReport: Hashable, Sendable {
    /// `readingTime`: seconds since the Unix epoch (server time).
    public var readingTime: Int64
    /// Written as both `genConnectStatus` and `storConnectStatus` (a battery site generates and stores
    /// through the same contactors); nil omits both.
    public var connect: StatusValue<ConnectStatus>?
    /// `inverterStatus`; nil omits it.
    public var inverter: StatusValue<InverterStatus>?
    /// `operationalModeStatus`; nil omits it.
    public var operationalMode: StatusValue<OperationalModeStatus>?
    /// `stateOfChargeStatus`: usable energy stored, percent of `rtgMaxWh` (0…100); nil omits it.
    public var stateOfChargePercent: StatusValue<Double>?
    /// `storageModeStatus`; nil omits it.
    public var storageMode: StatusValue<StorageModeStatus>?
    /// The trip codes standing on any unit, written as `alarmStatus` through `DERAlarms.of` (always written,
    /// `00000000` when none maps to an alarm).
    public var trips: TripCodeSet
    /// The `href` attribute, nil for none.
    public var href: String?

    /// A status read at `readingTime`; every value nil, no trips.
    public init(readingTime: Int64) {
        self.readingTime = readingTime
        trips = TripCodeSet()
    }

    /// The `DERStatus` document (2030.5 namespace only).
    public func xml(maximumBytes: Int = XMLWriter.defaultMaximumBytes) throws(SEP2Error) -> [UInt8] {
        var writer = XMLWriter(root: "DERStatus", attributes: href.map { [(name: "href", value: $0)] } ?? [], maximumBytes: maximumBytes)
        writer.hexElement("alarmStatus", UInt64(DERAlarms(trips).rawValue), bytes: 4)
        if let connect { writer.stamped("genConnectStatus", connect.since, XMLWriter.hex(UInt64(connect.value.rawValue), bytes: 1)) }
        if let inverter { writer.stamped("inverterStatus", inverter.since, String(inverter.value.rawValue)) }
        if let operationalMode { writer.stamped("operationalModeStatus", operationalMode.since, String(operationalMode.value.rawValue)) }
        writer.element("readingTime", readingTime)
        if let stateOfChargePercent {
            let hundredths = try PowerScale.hundredthsPercent(stateOfChargePercent.value, "stateOfChargeStatus")
            writer.stamped("stateOfChargeStatus", stateOfChargePercent.since, String(hundredths))
        }
        if let storageMode { writer.stamped("storageModeStatus", storageMode.since, String(storageMode.value.rawValue)) }
        if let connect { writer.stamped("storConnectStatus", connect.since, XMLWriter.hex(UInt64(connect.value.rawValue), bytes: 1)) }
        return try writer.finish()
    }
}

extension XMLWriter {
    /// `<name><dateTime>since</dateTime><value>value</value></name>`.
    mutating func stamped(_ name: String, _ since: Int64, _ value: String) {
        start(name)
        element("dateTime", since)
        element("value", value)
        close()
    }
}
