public import BessBase
public import ControlCore

/// Counts of a profiled Modbus BMS's reads.
public struct ModbusBMSCounters: Sendable, Equatable {
    /// Reads whose every signal decoded.
    public var accepted: UInt64 = 0
    /// Reads refused for a signal's invalid marker, range or scale factor (`REGISTER_VALUE_INVALID`).
    public var invalidValues: UInt64 = 0
    /// Reads of the wrong length or of a block not in the plan (`MODBUS_BAD_RESPONSE`).
    public var badResponses: UInt64 = 0
    public init() {}
}

/// A rack BMS read over Modbus as its profile describes it (BYD Battery-Box Commercial, Pylontech
/// Powercube): the profile compiled into a read plan, and each read decoded into the same
/// `BMSSnapshot` a CAN BMS fills.
///
/// Rules (docs/devices.md): a snapshot part is updated when every signal feeding it has a value,
/// stamped with the oldest of their reads; a read with an invalid value is refused whole; alarm
/// conditions are ORed per severity; a `once_seen` group becomes expected when a read feeding it
/// arrives.
public struct ProfiledModbusBMS: Sendable {
    /// Registers two signals may lie apart and still be read in one request.
    public static let defaultMaxGap = 4

    public let profile: DeviceProfile
    /// The reads one poll makes, in order (each ≤ the profile's `max_read_registers`).
    public let readPlan: [ModbusReadBlock]
    public private(set) var snapshot: BMSSnapshot
    public private(set) var counters = ModbusBMSCounters()

    private var table: ModbusSignalTable
    /// The latest value of each signal (by the profile's order) and when its read arrived.
    private var values: [ModbusSignalValue?]
    private var arrivals: [MonotonicInstant?]
    /// The signals feeding each part (by `ProfileGroup.Part` order).
    private let feeds: [ProfileGroup.Part: [Int]]
    private let quantities: [ProfileQuantity: Int]
    /// The alarms with the index of their signal.
    private let alarms: [(alarm: ProfileAlarm, signal: Int)]
    private let onceSeen: BMSGroups

    /// Compiles `profile` (a BMS over Modbus) into its read plan; reads at most `maxGap` unused
    /// registers to join two spans into one request.
    public init(profile: DeviceProfile, maxGap: Int = defaultMaxGap) throws(ProfileError) {
        guard profile.kind == .bms, case .modbus(let transport) = profile.transport else {
            throw .wrongDecoder(profile, "not a BMS over Modbus")
        }
        self.profile = profile
        table = try ModbusSignalTable(profile.signals, maxRegisters: transport.maxReadRegisters, maxGap: maxGap)
        readPlan = table.blocks
        values = Array(repeating: nil, count: profile.signals.count)
        arrivals = Array(repeating: nil, count: profile.signals.count)
        var quantities: [ProfileQuantity: Int] = [:]
        var feeds: [ProfileGroup.Part: [Int]] = [:]
        for (i, signal) in profile.signals.enumerated() {
            guard let quantity = signal.quantity else { continue }
            quantities[quantity] = i
            if let part = Self.part(of: quantity) { feeds[part, default: []].append(i) }
        }
        var alarms: [(alarm: ProfileAlarm, signal: Int)] = []
        for alarm in profile.alarms {
            guard let i = profile.signals.firstIndex(where: { $0.name == alarm.signal }) else {
                throw .structure(profile, "alarm names unknown signal \(alarm.signal)")
            }
            alarms.append((alarm, i))
            if !(feeds[.protection] ?? []).contains(i) { feeds[.protection, default: []].append(i) }
        }
        for (part, needed) in Self.required {
            guard feeds[part] != nil else { continue }
            for quantity in needed where quantities[quantity] == nil {
                throw .structure(profile, "part \(part.rawValue) needs a \(quantity.rawValue) signal")
            }
        }
        self.quantities = quantities
        self.feeds = feeds
        self.alarms = alarms
        var expected = BMSGroups()
        var onceSeen = BMSGroups()
        for group in profile.groups {
            guard let flag = Self.flag(group.part) else { continue }
            if group.presence == .required { expected.insert(flag) } else { onceSeen.insert(flag) }
        }
        self.onceSeen = onceSeen.subtracting(expected)
        snapshot = BMSSnapshot(expectedGroups: expected)
    }

    /// Takes the words of one read of the plan, read at `instant`. Returns nil when the read was
    /// used, else why not: a read of the wrong length or not in the plan (`MODBUS_BAD_RESPONSE`), or
    /// one with a signal's invalid marker or out-of-range value (`REGISTER_VALUE_INVALID`; nothing of
    /// the read is used).
    public mutating func ingest(_ block: ModbusReadBlock, words: [UInt16], at instant: MonotonicInstant) -> DeviceError? {
        guard let b = table.index(of: block) else {
            counters.badResponses &+= 1
            return DeviceError(.badResponse, message: "a read of \(block) is not in profile \(profile.name)'s plan")
        }
        do throws(DeviceError) {
            try table.check(b, words)
        } catch {
            counters.badResponses &+= 1
            return error
        }
        // Decode every signal the read carries (its value or scale factor) before using any.
        var decoded: [(Int, ModbusSignalValue)] = []
        for i in table.entries(in: b) {
            do throws(DeviceError) {
                if let value = try table.decode(i, block: b, read: words) { decoded.append((i, value)) }
            } catch {
                counters.invalidValues &+= 1
                return error
            }
        }
        table.store(b, words)
        counters.accepted &+= 1
        for (i, value) in decoded {
            values[i] = value
            arrivals[i] = instant
        }
        let touched = Set(decoded.map(\.0))
        for (part, signals) in feeds where signals.contains(where: touched.contains) {
            if let flag = Self.flag(part), onceSeen.contains(flag) { snapshot.expectedGroups.insert(flag) }
            update(part, signals)
        }
        return nil
    }

    /// Reads every block of the plan from `device` and ingests it, stamped `instant`. A failed read
    /// ends the poll (its error thrown); a refused read does not stop the others, and the first
    /// refusal is thrown after them.
    public mutating func poll(_ device: inout some RegisterAccess, at instant: MonotonicInstant) throws(DeviceError) {
        var refusal: DeviceError?
        for block in readPlan {
            let words = try device.readRegisters(block.table, at: block.address, count: block.count)
            if let error = ingest(block, words: words, at: instant), refusal == nil { refusal = error }
        }
        if let refusal { throw refusal }
    }

    /// The latest engineering value of the signal named `name` (any signal, with or without a
    /// quantity), or nil before it was read.
    public func value(of name: String) -> Double? {
        profile.signals.firstIndex { $0.name == name }.flatMap { values[$0]?.value }
    }

    /// The latest raw value of the signal named `name`, or nil before it was read.
    public func raw(of name: String) -> Int64? {
        profile.signals.firstIndex { $0.name == name }.flatMap { values[$0]?.raw }
    }

    // MARK: - Parts

    private func value(_ quantity: ProfileQuantity) -> Double? {
        quantities[quantity].flatMap { values[$0]?.value }
    }

    /// Fills `part` when every signal feeding it has a value, stamped with the oldest of their reads.
    private mutating func update(_ part: ProfileGroup.Part, _ signals: [Int]) {
        var oldest: MonotonicInstant?
        for i in signals {
            guard values[i] != nil, let at = arrivals[i] else { return }
            if oldest.map({ at < $0 }) ?? true { oldest = at }
        }
        guard let at = oldest else { return }
        switch part {
        case .status:
            guard var soc = value(.soc) else { return }
            if let fine = value(.socFine), let i = quantities[.socFine] {
                let within = profile.signals[i].agreeWithin ?? 0
                if within == 0 || abs(fine - soc) <= within { soc = fine }
            }
            snapshot.status = Timestamped(BMSStatus(soc: Percent(soc), soh: value(.soh).map(Percent.init)), at: at)
        case .limits:
            guard let charge = value(.chargeCurrentLimit), let discharge = value(.dischargeCurrentLimit) else { return }
            let limits = BMSLimits(chargeVoltageLimit: value(.chargeVoltageLimit).map(Volts.init), chargeCurrentLimit: Amps(charge),
                                   dischargeCurrentLimit: Amps(discharge),
                                   dischargeVoltageLimit: value(.dischargeVoltageLimit).map(Volts.init))
            snapshot.limits = Timestamped(limits, at: at)
        case .measurements:
            guard let voltage = value(.packVoltage), let current = value(.packCurrent), let temperature = value(.temperature) else { return }
            snapshot.measurements = Timestamped(BMSMeasurements(packVoltage: Volts(voltage), packCurrent: Amps(current),
                                                                temperature: Celsius(temperature)), at: at)
        case .cells:
            guard let low = value(.minCellVoltage), let high = value(.maxCellVoltage),
                  let cold = value(.minCellTemperature), let hot = value(.maxCellTemperature) else { return }
            snapshot.cells = Timestamped(CellStatistics(minCellVoltage: Volts(low), maxCellVoltage: Volts(high),
                                                        minTemperature: Celsius(cold), maxTemperature: Celsius(hot)), at: at)
        case .requests:
            guard let charge = value(.chargeEnabled), let discharge = value(.dischargeEnabled) else { return }
            snapshot.requests = Timestamped(BMSRequests(chargeEnabled: charge != 0, dischargeEnabled: discharge != 0,
                                                        forceCharge: value(.forceCharge).map { $0 != 0 } ?? false), at: at)
        case .protection:
            var state = BMSProtectionState()
            for (alarm, i) in alarms {
                guard let raw = values[i]?.raw, Self.active(alarm, raw: raw) else { continue }
                switch alarm.severity {
                case .protection: state.protections.insert(alarm.condition.condition)
                case .alarm: state.alarms.insert(alarm.condition.condition)
                }
            }
            snapshot.protection = Timestamped(state, at: at)
        }
    }

    /// True when `alarm` is active for the raw value `raw` (its bit set, or one of its values).
    static func active(_ alarm: ProfileAlarm, raw: Int64) -> Bool {
        if let bit = alarm.bit, (0..<64).contains(bit), raw >> Int64(bit) & 1 == 1 { return true }
        return alarm.equals.contains(raw)
    }

    /// The part a quantity feeds (nil: an inverter's, or one bessd reports only).
    static func part(of quantity: ProfileQuantity) -> ProfileGroup.Part? {
        switch quantity {
        case .soc, .soh, .socFine: .status
        case .chargeCurrentLimit, .dischargeCurrentLimit, .chargeVoltageLimit, .dischargeVoltageLimit: .limits
        case .packVoltage, .packCurrent, .temperature: .measurements
        case .minCellVoltage, .maxCellVoltage, .minCellTemperature, .maxCellTemperature: .cells
        case .chargeEnabled, .dischargeEnabled, .forceCharge: .requests
        case .chargePowerLimit, .dischargePowerLimit, .activePower, .frequency, .ratedPower, .state: nil
        }
    }

    /// The quantities a part cannot be filled without.
    static let required: [ProfileGroup.Part: [ProfileQuantity]] = [
        .status: [.soc], .limits: [.chargeCurrentLimit, .dischargeCurrentLimit],
        .measurements: [.packVoltage, .packCurrent, .temperature],
        .cells: [.minCellVoltage, .maxCellVoltage, .minCellTemperature, .maxCellTemperature],
        .requests: [.chargeEnabled, .dischargeEnabled],
    ]

    /// The optional group a part is watched as (nil: status, limits and measurements, always needed).
    static func flag(_ part: ProfileGroup.Part) -> BMSGroups? {
        switch part {
        case .cells: .cells
        case .protection: .protection
        case .requests: .requests
        case .status, .limits, .measurements: nil
        }
    }
}
