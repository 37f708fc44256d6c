/// Charge and discharge limits the BMS declares (Pylontech/SMA frame 0x351).
public struct BMSLimits: Sendable, Equatable {
    /// Charge voltage limit (CVL), if the BMS sends one.
    public var chargeVoltageLimit: Volts?
    /// Charge current limit (CCL), a magnitude.
    public var chargeCurrentLimit: Amps
    /// Discharge current limit (DCL), a magnitude.
    public var dischargeCurrentLimit: Amps
    /// Discharge voltage limit (DVL), if the BMS sends one.
    public var dischargeVoltageLimit: Volts?

    public init(
        chargeVoltageLimit: Volts? = nil, chargeCurrentLimit: Amps, dischargeCurrentLimit: Amps,
        dischargeVoltageLimit: Volts? = nil
    ) {
        self.chargeVoltageLimit = chargeVoltageLimit
        self.chargeCurrentLimit = chargeCurrentLimit
        self.dischargeCurrentLimit = dischargeCurrentLimit
        self.dischargeVoltageLimit = dischargeVoltageLimit
    }
}

/// State of charge and health (frame 0x355).
public struct BMSStatus: Sendable, Equatable {
    /// State of charge, 0–100 %.
    public var soc: Percent
    /// State of health, 0–100 %, if known.
    public var soh: Percent?
    public init(soc: Percent, soh: Percent? = nil) {
        self.soc = soc
        self.soh = soh
    }
}

/// Pack measurements (frame 0x356).
public struct BMSMeasurements: Sendable, Equatable {
    /// Pack terminal voltage.
    public var packVoltage: Volts
    /// Pack current, **positive while charging** (the BMS convention, opposite to power's).
    public var packCurrent: Amps
    /// Pack (average cell) temperature.
    public var temperature: Celsius
    public init(packVoltage: Volts, packCurrent: Amps, temperature: Celsius) {
        self.packVoltage = packVoltage
        self.packCurrent = packCurrent
        self.temperature = temperature
    }
}

/// Cell extremes (Victron-extension frame 0x373, or a BMS that reports cells).
public struct CellStatistics: Sendable, Equatable {
    public var minCellVoltage: Volts
    public var maxCellVoltage: Volts
    public var minTemperature: Celsius
    public var maxTemperature: Celsius
    public init(minCellVoltage: Volts, maxCellVoltage: Volts, minTemperature: Celsius, maxTemperature: Celsius) {
        self.minCellVoltage = minCellVoltage
        self.maxCellVoltage = maxCellVoltage
        self.minTemperature = minTemperature
        self.maxTemperature = maxTemperature
    }
}

/// Protection (trip) and alarm (warning) conditions a BMS reports (frame 0x359).
public struct BMSConditions: OptionSet, Sendable, Hashable {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    public static let cellOvervoltage = BMSConditions(rawValue: 1 << 0)
    public static let cellUndervoltage = BMSConditions(rawValue: 1 << 1)
    public static let overtemperature = BMSConditions(rawValue: 1 << 2)
    public static let undertemperature = BMSConditions(rawValue: 1 << 3)
    public static let dischargeOvercurrent = BMSConditions(rawValue: 1 << 4)
    public static let chargeOvercurrent = BMSConditions(rawValue: 1 << 5)
    public static let systemError = BMSConditions(rawValue: 1 << 6)
    public static let internalCommunication = BMSConditions(rawValue: 1 << 7)
}

/// What the BMS's protection and alarm tables say.
public struct BMSProtectionState: Sendable, Equatable {
    /// Active protections: the BMS has stopped (or will stop) the current.
    public var protections: BMSConditions
    /// Active alarms: warnings ahead of a protection.
    public var alarms: BMSConditions
    public init(protections: BMSConditions = [], alarms: BMSConditions = []) {
        self.protections = protections
        self.alarms = alarms
    }
}

/// The BMS's request flags (frame 0x35C).
public struct BMSRequests: Sendable, Equatable {
    public var chargeEnabled: Bool
    public var dischargeEnabled: Bool
    public var forceCharge: Bool
    public init(chargeEnabled: Bool, dischargeEnabled: Bool, forceCharge: Bool = false) {
        self.chargeEnabled = chargeEnabled
        self.dischargeEnabled = dischargeEnabled
        self.forceCharge = forceCharge
    }
}

/// The BMS frame groups the control law can live without, yet whose rules are inert without them:
/// a bit mask (the value of the `bmsGroupsMissing` metric).
///
/// Which of them a BMS is expected to send is `BMSSnapshot.expectedGroups`: the groups its protocol
/// defines, and any extension it has been seen to send.
public struct BMSGroups: OptionSet, Sendable, Hashable {
    public var rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// Cell extremes (frame 0x373, a Victron extension of the Pylontech profile): cell-voltage rules,
    /// the hottest cell. A genuine Pylontech sends none.
    public static let cells = BMSGroups(rawValue: 1 << 0)
    /// Protection and alarm flags (frame 0x359).
    public static let protection = BMSGroups(rawValue: 1 << 1)
    /// Charge/discharge request flags (frame 0x35C).
    public static let requests = BMSGroups(rawValue: 1 << 2)

    /// Every group, in bit order.
    public static let all: BMSGroups = [.cells, .protection, .requests]

    /// The group's name with its frame, e.g. `0x373 cells`, for one group; nil for several or none.
    public var name: StaticString? {
        switch rawValue {
        case BMSGroups.cells.rawValue: "0x373 cells"
        case BMSGroups.protection.rawValue: "0x359 protection"
        case BMSGroups.requests.rawValue: "0x35C requests"
        default: nil
        }
    }

    /// Each group in the set, one bit each, in bit order.
    public var members: [BMSGroups] {
        (0..<UInt8.bitWidth).map { BMSGroups(rawValue: 1 << $0) }.filter { contains($0) }
    }

    /// The groups' names, e.g. `0x373 cells, 0x35C requests` (an unnamed bit as `group bit N`).
    public var list: String {
        members.map { group in group.name.map { "\($0)" } ?? "group bit \(group.rawValue.trailingZeroBitCount)" }
            .joined(separator: ", ")
    }
}

/// Everything known about one BMS, each group stamped with when it was measured.
///
/// The groups arrive in different frames at different times, so each has its own age.
public struct BMSSnapshot: Sendable {
    public var limits: Timestamped<BMSLimits>?
    public var status: Timestamped<BMSStatus>?
    public var measurements: Timestamped<BMSMeasurements>?
    public var cells: Timestamped<CellStatistics>?
    public var protection: Timestamped<BMSProtectionState>?
    public var requests: Timestamped<BMSRequests>?
    /// The optional groups this BMS is expected to send, so missing when absent or stale: those its
    /// protocol defines, and each extension it has sent on this link (its decoder adds it at the
    /// first frame). A group outside it is "not sent by this BMS", no warning. Every group unless the
    /// source says otherwise.
    public var expectedGroups: BMSGroups
    public init(
        limits: Timestamped<BMSLimits>? = nil, status: Timestamped<BMSStatus>? = nil,
        measurements: Timestamped<BMSMeasurements>? = nil, cells: Timestamped<CellStatistics>? = nil,
        protection: Timestamped<BMSProtectionState>? = nil, requests: Timestamped<BMSRequests>? = nil,
        expectedGroups: BMSGroups = .all
    ) {
        self.limits = limits
        self.status = status
        self.measurements = measurements
        self.cells = cells
        self.protection = protection
        self.requests = requests
        self.expectedGroups = expectedGroups
    }

    /// The newest instant any group was measured.
    public var newestTakenAt: MonotonicInstant? {
        var newest: MonotonicInstant?
        func consider(_ instant: MonotonicInstant?) {
            guard let instant else { return }
            if let current = newest, current >= instant { return }
            newest = instant
        }
        consider(limits?.takenAt)
        consider(status?.takenAt)
        consider(measurements?.takenAt)
        consider(cells?.takenAt)
        consider(protection?.takenAt)
        consider(requests?.takenAt)
        return newest
    }
}

/// What the inverter reports.
public struct InverterReading: Sendable, Equatable {
    /// Measured AC active power, + = discharge/export.
    public var activePower: Watts
    /// The inverter's own maximum active power (nameplate `WMax`), if known.
    public var ratedPower: Watts?
    /// True when the inverter reports a fault state.
    public var faulted: Bool
    /// The inverter's event/fault bits as read, for the log.
    public var faultBits: UInt32
    /// Grid frequency as the inverter measures it, if it reports one.
    public var frequency: Hertz?
    /// Measured AC reactive power, var, signed as `activePower` is (+ = supplied to the grid,
    /// over-excited), if the inverter reports it.
    public var reactivePower: Double?
    /// AC voltage at the inverter's terminals, V (line to neutral, the phases' average), if it reports one.
    public var voltage: Double?
    /// True while the inverter is connected to the grid, false while its contactor is open (SunSpec
    /// 701 `ConnSt`, 101–103 `St` OFF); nil when it does not say.
    public var connected: Bool?
    /// The inverter's apparent power rating, VA (SunSpec 702 `VAMax`), as its discovery read it;
    /// nil when it does not say. The reactive stage's `VAMax` unless `max_apparent_power_kva` is set.
    public var apparentPowerRating: Double? = nil
    /// The most reactive power it injects and absorbs, var, both positive (702 `VarMaxInj`,
    /// `VarMaxAbs`); nil when it does not say.
    public var varMaxInjecting: Double? = nil
    public var varMaxAbsorbing: Double? = nil
    /// Whether it takes a reactive setpoint (SunSpec 704's var points): false, the reactive stage
    /// leaves it alone (`ReactiveSource.unavailable`); nil when not known (a simulated inverter).
    public var reactiveAvailable: Bool? = nil
    public init(
        activePower: Watts, ratedPower: Watts? = nil, faulted: Bool = false, faultBits: UInt32 = 0,
        frequency: Hertz? = nil, reactivePower: Double? = nil, voltage: Double? = nil, connected: Bool? = nil
    ) {
        self.connected = connected
        self.activePower = activePower
        self.ratedPower = ratedPower
        self.faulted = faulted
        self.faultBits = faultBits
        self.frequency = frequency
        self.reactivePower = reactivePower
        self.voltage = voltage
    }
}

/// An active-power command from the aggregator (dispatch) or an operator (override).
public struct PowerCommand: Sendable, Equatable {
    /// Requested active power, + = discharge.
    public var power: Watts
    /// The aggregator's reactive power for this unit, var (+ = injecting), a `power` dispatch's
    /// `reactive_kvar`; nil: none asked. An override carries none.
    public var reactive: Double?
    /// The command is ignored at and after this instant.
    public var expiresAt: MonotonicInstant
    /// A dispatch for this unit alone: the unit is held at it instead of sharing the site's request.
    /// (An operator override always holds its unit.)
    public var pinned: Bool
    public init(power: Watts, reactive: Double? = nil, expiresAt: MonotonicInstant, pinned: Bool = false) {
        self.power = power
        self.reactive = reactive
        self.expiresAt = expiresAt
        self.pinned = pinned
    }
}

/// Operating mode chosen by the operator or the aggregator.
public enum OperatingMode: String, Sendable, CaseIterable {
    /// Normal operation: dispatch (or base) plus droop, inside every limit.
    case auto
    /// No power at all; interlocks are still evaluated and reported.
    case standby
}

/// Who asks for standby, kept apart so that no party lifts another's standby. The unit is in
/// standby while any of them asks; the local operator outranks every remote party, and only the
/// operator lifts an operator standby (no remote command and no expiry does).
public struct ModeHolds: Sendable, Equatable {
    /// `bessctl mode standby --unit U`, until `bessctl mode auto --unit U`.
    public var operatorUnit = false
    /// `bessctl mode standby` for the whole site, until `bessctl mode auto`.
    public var operatorSite = false
    /// The aggregator's standby (a `mode` command or an emergency stop) and when it ends.
    public var remoteUntil: MonotonicInstant?
    /// The remote standby is an emergency stop (dispatch dropped with it).
    public var remoteEmergency = false

    public init() {}

    /// Standby at `now` when any party asks for it.
    @inlinable public func mode(at now: MonotonicInstant) -> OperatingMode {
        operatorUnit || operatorSite || remoteUntil.map { $0 > now } == true ? .standby : .auto
    }

    /// The remote standby in force at `now`, if any.
    @inlinable public func remoteStandby(at now: MonotonicInstant) -> MonotonicInstant? {
        remoteUntil.flatMap { $0 > now ? $0 : nil }
    }
}

/// One unit's inputs for one cycle: the latest values the bus workers published.
public struct UnitInputs: Sendable {
    public var bms: BMSSnapshot
    public var inverter: Timestamped<InverterReading>?
    /// The inverter's link or device failed before it ever answered (a wrong address, a refused
    /// connection): its start-up grace ends at once, so the unit shows the fault instead of
    /// `running` for the rest of the grace.
    public var inverterUnreachable = false
    /// Aggregator dispatch, if any.
    public var dispatch: PowerCommand?
    /// Operator override (outranks dispatch; still inside every interlock).
    public var override: PowerCommand?
    public init(
        bms: BMSSnapshot = BMSSnapshot(), inverter: Timestamped<InverterReading>? = nil,
        dispatch: PowerCommand? = nil, override: PowerCommand? = nil
    ) {
        self.bms = bms
        self.inverter = inverter
        self.dispatch = dispatch
        self.override = override
    }
}
