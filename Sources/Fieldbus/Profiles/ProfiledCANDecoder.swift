public import ControlCore

/// A BMS over CAN described by a profile (`DeviceProfile`, docs/devices.md), compiled at init into
/// per-frame tables; `ingest` then reads each frame by its table: bounded (a frame's fields are read
/// only within its length), and without allocating.
///
/// The decoding rules:
/// - A frame of the wrong kind (remote, error, extended on an 11-bit profile or the reverse) is
///   `.wrongKind`; one whose id carries signals and ends before a signal that is not `optional` is
///   `.shortFrame`; one with an invalid marker or a value outside `valid` is `.invalidValue`, unless
///   the value may be absent (`optional`, `ProfileQuantity.mayBeAbsent`): then it is absent; a
///   minimum above its maximum in one frame (cell voltages, cell temperatures) is `.invalidValue`.
///   A refused frame changes nothing.
/// - A frame with no signal whose id passes the receive filters, or is the id of a keep-alive bessd
///   sends, is ignored (counted accepted); any other id is `.unknownID`.
/// - value = raw × scale + offset (a scale of 1/N divides by N), then `magnitude`, then `clampMinimum`.
/// - A snapshot part is set when each of its signals has a value, stamped with the oldest arrival
///   among them (a part fed by two frames is stale when either stops). `soc_fine` replaces `soc`
///   within `agreeWithin`; `charge_enabled`, `discharge_enabled`, `force_charge` are true when ≠ 0;
///   alarms (on the raw pattern) are ORed per severity into `BMSProtectionState`.
/// - A `once_seen` group is expected from the first frame that feeds it, valid or not.
public struct ProfiledCANDecoder: BMSDecoder {
    /// The profile compiled.
    public let profile: DeviceProfile
    public let definedGroups: BMSGroups
    public let extensionGroups: BMSGroups
    /// The kernel receive filters for the worker's socket: the profile's, or when it gives none, the
    /// id of each frame that carries signals.
    public let receiveFilters: [CANFilter]
    /// The frames the worker sends unasked, with their period.
    public let keepAlive: [ProfileFrame]
    public private(set) var snapshot: BMSSnapshot
    public private(set) var counters = DecoderCounters()

    private let extended: Bool
    private let idLimit: UInt32
    private let frames: [Frame]
    private let signals: [Signal]
    private let alarms: [Alarm]
    private let parts: [PartSources]
    private let quantities: Quantities
    private let socAgreement: Double
    private let ignoredIDs: [UInt32]
    /// Per signal: the values in use, and those of the frame being read.
    private var state: [Reading]
    private var pending: [Reading]

    /// Compiles `profile` (a BMS over CAN); throws when it is another kind or transport, or a signal,
    /// alarm or group cannot be read as written.
    public init(profile: DeviceProfile) throws(ProfileError) {
        guard profile.kind == .bms else { throw .wrongDecoder(profile, "a \(profile.kind.rawValue) profile is not a BMS") }
        guard case .can(let transport) = profile.transport else { throw .wrongDecoder(profile, "a Modbus profile is not read over CAN") }
        let compiled = try CANProfileCompiler(profile, transport)
        self.profile = profile
        extended = transport.extended
        idLimit = compiled.idLimit
        frames = compiled.frames
        signals = compiled.signals
        alarms = compiled.alarms
        parts = compiled.parts
        quantities = compiled.quantities
        socAgreement = compiled.socAgreement
        definedGroups = compiled.definedGroups
        extensionGroups = compiled.extensionGroups
        receiveFilters = compiled.receiveFilters
        keepAlive = profile.keepAlive
        ignoredIDs = profile.keepAlive.filter { $0.extended == transport.extended }.map(\.id)
        snapshot = BMSSnapshot(expectedGroups: compiled.definedGroups)
        state = Array(repeating: Reading(), count: compiled.signals.count)
        pending = state
    }

    public mutating func ingest(_ frame: CANFrame, at instant: MonotonicInstant) -> FrameRejection? {
        let rejection = decode(frame, at: instant)
        if let rejection { counters.count(rejection) } else { counters.accepted &+= 1 }
        return rejection
    }

    /// The names of the profile's signals, in the decoder's order.
    public var signalNames: [String] { signals.map(\.name) }

    /// The latest value of the signal `name` (scaled), nil when absent, never received or text.
    public func value(of name: String) -> Double? {
        guard let i = signals.firstIndex(where: { $0.name == name }), !signals[i].text else { return nil }
        return state[i].present ? state[i].value : nil
    }

    /// The latest text of the text signal `name` (up to its first NUL, spaces trimmed).
    public func text(of name: String) -> String? {
        guard let i = signals.firstIndex(where: { $0.name == name }), signals[i].text, state[i].present else { return nil }
        let pattern = state[i].pattern
        let bytes = (0..<8).map { UInt8(truncatingIfNeeded: pattern >> UInt64(8 * $0)) }.prefix { $0 != 0 }
        return String(decoding: bytes, as: UTF8.self).trimmingSpaces()
    }

    private mutating func decode(_ f: CANFrame, at t: MonotonicInstant) -> FrameRejection? {
        guard !f.isError, !f.isRemote, f.isExtended == extended else { return .wrongKind }
        guard f.id <= idLimit else { return .unknownID }
        guard let index = frameIndex(of: f.id) else {
            return ignoredIDs.contains(f.id) || receiveFilters.contains(where: { $0.matches(f.id) }) ? nil : .unknownID
        }
        let frame = frames[index]
        // An extension the BMS sends, readable or not, is expected from now on.
        snapshot.expectedGroups.formUnion(frame.marks)
        guard Int(f.length) >= frame.minimumLength else { return .shortFrame }
        for i in frame.signals {
            guard let reading = read(signals[i], f) else { return .invalidValue }
            pending[i] = reading
        }
        for pair in frame.ordered where pending[pair.low].present && pending[pair.high].present
            && pending[pair.low].value > pending[pair.high].value {
            return .invalidValue
        }
        for i in frame.signals {
            state[i] = pending[i]
            state[i].at = t
        }
        compose(frame.parts)
        return nil
    }

    private func frameIndex(of id: UInt32) -> Int? {
        var i = 0
        while i < frames.count {
            if frames[i].id == id { return i }
            i += 1
        }
        return nil
    }

    /// One signal of a frame whose length was checked against the frame's minimum: nil when it
    /// refuses the frame.
    private func read(_ s: Signal, _ f: CANFrame) -> Reading? {
        let available = Int(f.length)
        if s.text {
            guard available > s.codec.location.byte else { return Reading() }
            let bytes = min(available, s.codec.byteCount) - s.codec.location.byte
            let pattern = f.data >> UInt64(8 * s.codec.location.byte) & (bytes == 8 ? ~0 : (1 << UInt64(8 * bytes)) - 1)
            var rest = pattern
            while rest != 0 {
                let byte = rest & 0xFF
                if byte == 0 { break }
                guard byte >= 0x20, byte < 0x7F else { return nil }
                rest >>= 8
            }
            return Reading(pattern: pattern, present: true)
        }
        let pattern: UInt64
        do { pattern = try s.codec.pattern(in: f) } catch { return Reading() }
        if s.invalid.contains(pattern) { return s.mayBeAbsent ? Reading(pattern: pattern) : nil }
        var value = s.codec.number(ofPattern: pattern)
        value = (s.divisor != 0 ? value / s.divisor : value * s.scale) + s.offset
        if s.magnitude { value = abs(value) }
        if let minimum = s.clampMinimum, value < minimum { value = minimum }
        if let valid = s.valid, !valid.contains(value) { return s.mayBeAbsent ? Reading(pattern: pattern) : nil }
        return Reading(pattern: pattern, value: value, present: true)
    }
}

// MARK: - Parts of the snapshot

extension ProfiledCANDecoder {
    private mutating func compose(_ mask: UInt8) {
        if mask & PartSources.bit(.status) != 0, let t = stamp(.status) {
            var soc = state[quantities.soc].value
            if let fine = value(quantities.socFine), socAgreement == 0 || abs(fine - soc) <= socAgreement { soc = fine }
            snapshot.status = Timestamped(BMSStatus(soc: Percent(soc), soh: value(quantities.soh).map { Percent($0) }), at: t)
        }
        if mask & PartSources.bit(.limits) != 0, let t = stamp(.limits) {
            snapshot.limits = Timestamped(BMSLimits(
                chargeVoltageLimit: value(quantities.chargeVoltageLimit).map { Volts($0) },
                chargeCurrentLimit: Amps(state[quantities.chargeCurrentLimit].value),
                dischargeCurrentLimit: Amps(state[quantities.dischargeCurrentLimit].value),
                dischargeVoltageLimit: value(quantities.dischargeVoltageLimit).map { Volts($0) }), at: t)
        }
        if mask & PartSources.bit(.measurements) != 0, let t = stamp(.measurements) {
            snapshot.measurements = Timestamped(BMSMeasurements(
                packVoltage: Volts(state[quantities.packVoltage].value), packCurrent: Amps(state[quantities.packCurrent].value),
                temperature: Celsius(state[quantities.temperature].value)), at: t)
        }
        if mask & PartSources.bit(.cells) != 0, let t = stamp(.cells) {
            snapshot.cells = Timestamped(CellStatistics(
                minCellVoltage: Volts(state[quantities.minCellVoltage].value),
                maxCellVoltage: Volts(state[quantities.maxCellVoltage].value),
                minTemperature: Celsius(state[quantities.minCellTemperature].value),
                maxTemperature: Celsius(state[quantities.maxCellTemperature].value)), at: t)
        }
        if mask & PartSources.bit(.requests) != 0, let t = stamp(.requests) {
            snapshot.requests = Timestamped(BMSRequests(
                chargeEnabled: state[quantities.chargeEnabled].value != 0,
                dischargeEnabled: state[quantities.dischargeEnabled].value != 0,
                forceCharge: value(quantities.forceCharge).map { $0 != 0 } ?? false), at: t)
        }
        if mask & PartSources.bit(.protection) != 0, let t = stamp(.protection) {
            var conditions = BMSProtectionState()
            for alarm in alarms where state[alarm.signal].present {
                let pattern = state[alarm.signal].pattern
                let active = alarm.bit >= 0 ? pattern >> UInt64(alarm.bit) & 1 == 1 : alarm.equals.contains(pattern)
                guard active else { continue }
                if alarm.protection { conditions.protections.insert(alarm.condition) } else { conditions.alarms.insert(alarm.condition) }
            }
            snapshot.protection = Timestamped(conditions, at: t)
        }
    }

    /// The part's stamp, the oldest arrival among its signals; nil until each signal it needs has a value.
    private func stamp(_ part: ProfileGroup.Part) -> MonotonicInstant? {
        let sources = parts[PartSources.index(part)]
        guard sources.enabled else { return nil }
        var oldest: MonotonicInstant?
        for i in sources.needed {
            guard state[i].present, let at = state[i].at else { return nil }
            oldest = min(oldest ?? at, at)
        }
        for i in sources.optional {
            if let at = state[i].at { oldest = min(oldest ?? at, at) }
        }
        return oldest
    }

    private func value(_ i: Int) -> Double? { i >= 0 && state[i].present ? state[i].value : nil }
}

// MARK: - Compiled tables

extension ProfiledCANDecoder {
    /// One signal's last reading: its raw pattern, its value when present, when its frame arrived.
    struct Reading {
        var pattern: UInt64 = 0
        var value: Double = 0
        var present = false
        var at: MonotonicInstant?
    }

    struct Signal {
        let name: String
        let codec: CANSignalCodec
        let quantity: ProfileQuantity?
        /// N when the scale is exactly 1/N (then value = raw / N, as exact as the decimal), else 0.
        let divisor: Double
        let scale: Double
        let offset: Double
        /// Invalid markers as patterns of the signal's width.
        let invalid: [UInt64]
        let valid: ClosedRange<Double>?
        let magnitude: Bool
        let clampMinimum: Double?
        let optional: Bool
        let mayBeAbsent: Bool
        let text: Bool
        /// The bytes a frame needs for the signal, unless it is optional.
        let needed: Int
    }

    struct Frame {
        let id: UInt32
        /// Its signals: indices into `signals`.
        let signals: Range<Int>
        let minimumLength: Int
        /// The once-seen groups it feeds.
        let marks: BMSGroups
        /// The parts it feeds (`PartSources.bit`).
        let parts: UInt8
        /// Minimum/maximum pairs read in this frame.
        let ordered: [(low: Int, high: Int)]
    }

    struct Alarm {
        let signal: Int
        /// The bit, or −1 when the alarm compares values.
        let bit: Int
        let equals: [UInt64]
        let condition: BMSConditions
        let protection: Bool
    }

    /// The signals a part is made of: those it needs, those it uses when present.
    struct PartSources {
        var enabled = false
        var needed: [Int] = []
        var optional: [Int] = []
        static func index(_ part: ProfileGroup.Part) -> Int {
            switch part {
            case .status: 0
            case .limits: 1
            case .measurements: 2
            case .protection: 3
            case .requests: 4
            case .cells: 5
            }
        }
        static func bit(_ part: ProfileGroup.Part) -> UInt8 { 1 << UInt8(index(part)) }
    }

    /// The signal index of each BMS quantity, −1 when the profile has none.
    struct Quantities {
        var soc = -1, soh = -1, socFine = -1
        var packVoltage = -1, packCurrent = -1, temperature = -1
        var chargeVoltageLimit = -1, dischargeVoltageLimit = -1, chargeCurrentLimit = -1, dischargeCurrentLimit = -1
        var minCellVoltage = -1, maxCellVoltage = -1, minCellTemperature = -1, maxCellTemperature = -1
        var chargeEnabled = -1, dischargeEnabled = -1, forceCharge = -1
    }
}
