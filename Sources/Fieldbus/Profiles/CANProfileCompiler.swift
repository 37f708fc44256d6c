import ControlCore

/// Turns a CAN BMS profile into `ProfiledCANDecoder`'s tables, checking what the decoder relies on
/// (check-config says the same at the file's lines; this keeps a decoder safe on its own).
struct CANProfileCompiler {
    typealias Decoder = ProfiledCANDecoder
    let idLimit: UInt32
    private(set) var signals: [Decoder.Signal] = []
    private(set) var frames: [Decoder.Frame] = []
    private(set) var alarms: [Decoder.Alarm] = []
    private(set) var parts = Array(repeating: Decoder.PartSources(), count: ProfileGroup.Part.allCases.count)
    private(set) var quantities = Decoder.Quantities()
    private(set) var socAgreement: Double = 0
    private(set) var definedGroups = BMSGroups()
    private(set) var extensionGroups = BMSGroups()
    let receiveFilters: [CANFilter]

    init(_ profile: DeviceProfile, _ transport: CANProfileTransport) throws(ProfileError) {
        idLimit = transport.extended ? 0x1FFF_FFFF : 0x7FF
        var byQuantity: [ProfileQuantity: Int] = [:]
        var names = Set<String>()
        let ids = try Self.frameIDs(profile, limit: idLimit)
        for id in ids {
            for signal in profile.signals {
                guard case .can(let location) = signal.location, location.frameID == id else { continue }
                guard names.insert(signal.name).inserted else { throw .structure(profile, "two signals are named \(signal.name)") }
                if let quantity = signal.quantity {
                    if byQuantity[quantity] != nil { throw .structure(profile, "two signals give \(quantity.rawValue)") }
                    byQuantity[quantity] = signals.count
                }
                if signal.quantity == .socFine { socAgreement = signal.agreeWithin ?? 0 }
                signals.append(try Self.signal(signal, location))
            }
        }
        receiveFilters = transport.filters.isEmpty
            ? ids.map { CANFilter(id: $0, mask: transport.extended ? 0x1FFF_FFFF : 0x7FF) } : transport.filters
        try compileAlarms(profile)
        try compileParts(profile, byQuantity)
        try compileGroups(profile)
        compileFrames(ids)
        for frame in profile.keepAlive where frame.data.count > 8 || frame.id > (frame.extended ? 0x1FFF_FFFF : 0x7FF) {
            throw .structure(profile, "keep-alive frame \(hex(UInt64(frame.id), digits: 3)) has more than 8 bytes or too large an id")
        }
    }

    /// The ids of the frames that carry signals, ascending.
    private static func frameIDs(_ profile: DeviceProfile, limit: UInt32) throws(ProfileError) -> [UInt32] {
        var ids = Set<UInt32>()
        for signal in profile.signals {
            guard case .can(let location) = signal.location else {
                throw .signal(signal.name, "is a Modbus signal in a CAN profile")
            }
            guard location.frameID <= limit else {
                throw .signal(signal.name, "frame id \(hex(UInt64(location.frameID), digits: 3)) is too large for the profile's "
                              + (limit == 0x7FF ? "11-bit" : "29-bit") + " ids")
            }
            ids.insert(location.frameID)
        }
        return ids.sorted()
    }

    private static func signal(_ s: ProfileSignal, _ location: CANSignalLocation) throws(ProfileError) -> Decoder.Signal {
        let codec = try CANSignalCodec(location, signed: s.signed, name: s.name)
        guard s.scale != 0, s.scale.isFinite, s.offset.isFinite else { throw .signal(s.name, "scale \(s.scale), offset \(s.offset)") }
        var invalid: [UInt64] = []
        for marker in s.invalidRaw {
            guard let pattern = codec.pattern(ofRaw: marker) else {
                throw .signal(s.name, "invalid marker \(marker) does not fit \(location.bits) bits")
            }
            invalid.append(pattern)
        }
        if s.text, location.bit != 0 || location.bits % 8 != 0 || location.order != .little || s.quantity != nil {
            throw .signal(s.name, "text spans whole bytes, little endian, and has no quantity")
        }
        let reciprocal = (1 / s.scale).rounded()
        return Decoder.Signal(
            name: s.name, codec: codec, quantity: s.quantity,
            divisor: abs(reciprocal) > 1 && 1 / reciprocal == s.scale ? reciprocal : 0, scale: s.scale, offset: s.offset,
            invalid: invalid, valid: s.valid, magnitude: s.magnitude, clampMinimum: s.clampMinimum, optional: s.optional,
            mayBeAbsent: s.optional || s.quantity?.mayBeAbsent == true, text: s.text,
            needed: s.text ? location.byte + 1 : codec.byteCount)
    }

    private func index(_ name: String) -> Int? { signals.firstIndex { $0.name == name } }

    private mutating func compileAlarms(_ profile: DeviceProfile) throws(ProfileError) {
        for alarm in profile.alarms {
            guard let i = index(alarm.signal), !signals[i].text else {
                throw .structure(profile, "alarm \(alarm.condition.rawValue) names \(alarm.signal), not a numeric signal of the profile")
            }
            let codec = signals[i].codec
            if let bit = alarm.bit, !(0..<codec.location.bits).contains(bit) {
                throw .structure(profile, "alarm on \(alarm.signal): bit \(bit) is outside its \(codec.location.bits) bits")
            }
            var equals: [UInt64] = []
            for value in alarm.equals {
                guard let pattern = codec.pattern(ofRaw: value) else {
                    throw .structure(profile, "alarm on \(alarm.signal): \(value) does not fit its \(codec.location.bits) bits")
                }
                equals.append(pattern)
            }
            guard alarm.bit != nil || !equals.isEmpty else {
                throw .structure(profile, "alarm on \(alarm.signal) gives neither bit nor equals")
            }
            alarms.append(Decoder.Alarm(signal: i, bit: alarm.bit ?? -1, equals: equals, condition: alarm.condition.condition,
                                        protection: alarm.severity == .protection))
        }
    }

    /// Each part's signals: a part with all the quantities it needs is made; one with some is an error.
    private mutating func compileParts(_ profile: DeviceProfile, _ q: [ProfileQuantity: Int]) throws(ProfileError) {
        func part(_ part: ProfileGroup.Part, _ needed: [ProfileQuantity], _ optional: [ProfileQuantity] = []) throws(ProfileError) {
            let missing = needed.filter { q[$0] == nil }
            guard missing.count < needed.count else { return }
            guard missing.isEmpty else {
                throw .structure(profile, "\(part.rawValue) needs \(missing.map(\.rawValue).joined(separator: ", ")) too")
            }
            parts[Decoder.PartSources.index(part)] = Decoder.PartSources(
                enabled: true, needed: needed.compactMap { q[$0] }, optional: optional.compactMap { q[$0] })
        }
        try part(.status, [.soc], [.soh, .socFine])
        try part(.limits, [.chargeCurrentLimit, .dischargeCurrentLimit], [.chargeVoltageLimit, .dischargeVoltageLimit])
        try part(.measurements, [.packVoltage, .packCurrent, .temperature])
        try part(.cells, [.minCellVoltage, .maxCellVoltage, .minCellTemperature, .maxCellTemperature])
        try part(.requests, [.chargeEnabled, .dischargeEnabled], [.forceCharge])
        if !alarms.isEmpty {
            var sources = Decoder.PartSources(enabled: true)
            for i in Set(alarms.map(\.signal)).sorted() {
                if signals[i].mayBeAbsent { sources.optional.append(i) } else { sources.needed.append(i) }
            }
            parts[Decoder.PartSources.index(.protection)] = sources
        }
        quantities = Decoder.Quantities(
            soc: q[.soc] ?? -1, soh: q[.soh] ?? -1, socFine: q[.socFine] ?? -1,
            packVoltage: q[.packVoltage] ?? -1, packCurrent: q[.packCurrent] ?? -1, temperature: q[.temperature] ?? -1,
            chargeVoltageLimit: q[.chargeVoltageLimit] ?? -1, dischargeVoltageLimit: q[.dischargeVoltageLimit] ?? -1,
            chargeCurrentLimit: q[.chargeCurrentLimit] ?? -1, dischargeCurrentLimit: q[.dischargeCurrentLimit] ?? -1,
            minCellVoltage: q[.minCellVoltage] ?? -1, maxCellVoltage: q[.maxCellVoltage] ?? -1,
            minCellTemperature: q[.minCellTemperature] ?? -1, maxCellTemperature: q[.maxCellTemperature] ?? -1,
            chargeEnabled: q[.chargeEnabled] ?? -1, dischargeEnabled: q[.dischargeEnabled] ?? -1, forceCharge: q[.forceCharge] ?? -1)
    }

    private mutating func compileGroups(_ profile: DeviceProfile) throws(ProfileError) {
        for group in profile.groups {
            guard parts[Decoder.PartSources.index(group.part)].enabled else {
                throw .structure(profile, "group \(group.part.rawValue) has no signals (or, for protection, no alarms) feeding it")
            }
            let bms = Self.groups(group.part)
            if group.presence == .required { definedGroups.formUnion(bms) } else { extensionGroups.formUnion(bms) }
        }
        extensionGroups.subtract(definedGroups)
    }

    /// The snapshot's optional group a part is (status, limits and measurements are always needed).
    static func groups(_ part: ProfileGroup.Part) -> BMSGroups {
        switch part {
        case .cells: .cells
        case .protection: .protection
        case .requests: .requests
        case .status, .limits, .measurements: []
        }
    }

    private mutating func compileFrames(_ ids: [UInt32]) {
        var start = 0
        for id in ids {
            var end = start
            while end < signals.count, signals[end].codec.location.frameID == id { end += 1 }
            let members = start..<end
            var minimum = 0, marks = BMSGroups(), mask: UInt8 = 0
            for i in members where !signals[i].optional { minimum = max(minimum, signals[i].needed) }
            for part in ProfileGroup.Part.allCases {
                let sources = parts[Decoder.PartSources.index(part)]
                guard sources.enabled, (sources.needed + sources.optional).contains(where: { members.contains($0) }) else { continue }
                mask |= Decoder.PartSources.bit(part)
                marks.formUnion(Self.groups(part).intersection(extensionGroups))
            }
            var ordered: [(low: Int, high: Int)] = []
            for (low, high) in [(quantities.minCellVoltage, quantities.maxCellVoltage),
                                (quantities.minCellTemperature, quantities.maxCellTemperature)]
            where members.contains(low) && members.contains(high) {
                ordered.append((low, high))
            }
            frames.append(Decoder.Frame(id: id, signals: members, minimumLength: minimum, marks: marks, parts: mask, ordered: ordered))
            start = end
        }
    }
}
