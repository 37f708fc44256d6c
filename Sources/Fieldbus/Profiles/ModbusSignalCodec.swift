public import BessBase
public import ControlCore

/// One read request of a profile's poll: `count` registers of `table` from `address`.
public struct ModbusReadBlock: Sendable, Hashable, CustomStringConvertible {
    public var table: ModbusTable
    /// PDU (0-based) address of the first register.
    public var address: Int
    public var count: Int
    public init(table: ModbusTable, address: Int, count: Int) {
        self.table = table
        self.address = address
        self.count = count
    }

    /// One past the last register.
    public var end: Int { address + count }

    /// True when the `count` registers of `table` from `address` lie inside the block.
    public func holds(_ table: ModbusTable, _ address: Int, count: Int) -> Bool {
        table == self.table && address >= self.address && address + count <= end
    }

    public var description: String { "\(count) \(table.rawValue) registers at \(address)" }
}

/// A signal's value as read: the raw integer (signed when the signal is) and the engineering value.
public struct ModbusSignalValue: Sendable, Equatable {
    public var raw: Int64
    public var value: Double
    public init(raw: Int64, value: Double) {
        self.raw = raw
        self.value = value
    }
}

/// Turns the registers of a Modbus profile signal into its engineering value, by the profile's
/// decoding rules: value = raw × scale × 10^sf + offset (raw signed when the type or the signal
/// is); an invalid raw marker or a value outside `valid` refuses the read
/// (`REGISTER_VALUE_INVALID`); then `magnitude`, then `clamp_min`.
public enum ModbusSignalCodec {
    /// The raw integer of `location` in `words`, its first register at `words[index]`; nil when the
    /// words end before it. 32-bit values take the location's word order.
    public static func raw(_ location: ModbusSignalLocation, signed: Bool, words: [UInt16], at index: Int) -> Int64? {
        guard index >= 0, index + location.count <= words.count else { return nil }
        let isSigned = signed || location.type == .int16 || location.type == .int32
        if location.count == 1 {
            let word = words[index]
            return isSigned ? Int64(Int16(bitPattern: word)) : Int64(word)
        }
        let (high, low) = location.lowWordFirst ? (words[index + 1], words[index]) : (words[index], words[index + 1])
        let bits = UInt32(high) << 16 | UInt32(low)
        return isSigned ? Int64(Int32(bitPattern: bits)) : Int64(bits)
    }

    /// Decodes `signal` (at `location`) from `words`, its first register at `words[index]`;
    /// `scaleFactor` is the raw word of its scale-factor register when it has one.
    public static func decode(_ signal: ProfileSignal, _ location: ModbusSignalLocation, words: [UInt16], at index: Int,
                              scaleFactor: UInt16? = nil) throws(DeviceError) -> ModbusSignalValue {
        guard let raw = raw(location, signed: signal.signed, words: words, at: index) else {
            throw DeviceError(.badResponse, message: "signal \(signal.name): registers missing from the read")
        }
        let pattern = location.count == 1 ? raw & 0xFFFF : raw & 0xFFFF_FFFF
        if signal.invalidRaw.contains(raw) || signal.invalidRaw.contains(pattern) {
            throw DeviceError(.registerValueInvalid, message: "signal \(signal.name): raw \(raw) means not available")
        }
        var value = MappedRegister(address: location.address, type: .uint16, scale: signal.scale).applyScale(Double(raw))
        if location.scaleFactorAddress != nil {
            let exponent = Int16(bitPattern: scaleFactor ?? 0x8000)
            guard exponent != Int16.min, (-10...10).contains(exponent) else {
                throw DeviceError(.registerValueInvalid, message: "signal \(signal.name): scale factor \(exponent) not usable")
            }
            value = scaled(value, exponent: Int(exponent))
        }
        value += signal.offset
        if let valid = signal.valid, !valid.contains(value) {
            throw DeviceError(.registerValueInvalid, message: "signal \(signal.name): \(value) outside \(valid.lowerBound)…\(valid.upperBound)")
        }
        if signal.magnitude { value = abs(value) }
        if let floor = signal.clampMinimum { value = max(floor, value) }
        return ModbusSignalValue(raw: raw, value: value)
    }

    /// `value` × 10^exponent, dividing for a negative exponent so decimal results stay the nearest
    /// double (4998 at −2 is 49.98).
    static func scaled(_ value: Double, exponent: Int) -> Double {
        var power = 1.0
        for _ in 0..<abs(exponent) { power *= 10 }
        return exponent < 0 ? value / power : value * power
    }

    /// The fewest reads that cover `spans` (table, address, count): spans of one table merged while
    /// the gap between them is at most `maxGap` registers and the read stays within `maxRegisters`.
    public static func plan(_ spans: [ModbusReadBlock], maxRegisters: Int, maxGap: Int) -> [ModbusReadBlock] {
        let sorted = spans.sorted { ($0.table == .holding ? 0 : 1, $0.address, $0.count) < ($1.table == .holding ? 0 : 1, $1.address, $1.count) }
        var blocks: [ModbusReadBlock] = []
        for span in sorted {
            if var last = blocks.last, last.table == span.table, span.address <= last.end + maxGap,
               max(last.end, span.end) - last.address <= maxRegisters {
                last.count = max(last.end, span.end) - last.address
                blocks[blocks.count - 1] = last
            } else {
                blocks.append(span)
            }
        }
        return blocks
    }
}

/// A profile's Modbus signals compiled against its read plan: where each signal (and its scale
/// factor) lies in which block, and the last words of each block. What `ProfiledModbusBMS` and
/// `ProfiledInverter` decode with.
struct ModbusSignalTable: Sendable {
    struct Entry: Sendable {
        let signal: ProfileSignal
        let location: ModbusSignalLocation
        let block: Int
        let index: Int
        /// The block and index of the scale-factor register, when the signal has one.
        let scaleFactor: (block: Int, index: Int)?
    }

    let blocks: [ModbusReadBlock]
    let entries: [Entry]
    /// The last words read of each block (empty until read).
    private(set) var words: [[UInt16]]

    /// Compiles `signals` (all must be Modbus signals) into reads of at most `maxRegisters`.
    init(_ signals: [ProfileSignal], maxRegisters: Int, maxGap: Int) throws(ProfileError) {
        guard (1...125).contains(maxRegisters) else {
            throw ProfileError(code: "PROFILE_READ_SIZE", message: "max_read_registers \(maxRegisters) is not 1…125")
        }
        var locations: [ModbusSignalLocation] = []
        var spans: [ModbusReadBlock] = []
        for signal in signals {
            guard case .modbus(let location) = signal.location else {
                throw .signal(signal.name, "not a Modbus signal")
            }
            locations.append(location)
            spans.append(ModbusReadBlock(table: location.table, address: location.address, count: location.count))
            if let address = location.scaleFactorAddress {
                spans.append(ModbusReadBlock(table: location.table, address: address, count: 1))
            }
        }
        for span in spans where span.address < 0 || span.end > 65536 {
            throw .signal("at \(span.address)", "register outside 0…65535")
        }
        let blocks = ModbusSignalCodec.plan(spans, maxRegisters: maxRegisters, maxGap: maxGap)
        func place(_ table: ModbusTable, _ address: Int, _ count: Int) -> (block: Int, index: Int) {
            let block = blocks.firstIndex { $0.holds(table, address, count: count) }!
            return (block, address - blocks[block].address)
        }
        entries = zip(signals, locations).map { signal, location in
            let at = place(location.table, location.address, location.count)
            let factor = location.scaleFactorAddress.map { place(location.table, $0, 1) }
            return Entry(signal: signal, location: location, block: at.block, index: at.index, scaleFactor: factor)
        }
        self.blocks = blocks
        words = Array(repeating: [], count: blocks.count)
    }

    /// Checks that `read` has block `block`'s length (else `MODBUS_BAD_RESPONSE`).
    func check(_ block: Int, _ read: [UInt16]) throws(DeviceError) {
        guard read.count == blocks[block].count else {
            throw DeviceError(.badResponse, message: "\(read.count) registers for a read of \(blocks[block])")
        }
    }

    /// Keeps `read` as block `block`'s latest words.
    mutating func store(_ block: Int, _ read: [UInt16]) { words[block] = read }

    /// The block index of `block`, or nil when it is not one of the plan's.
    func index(of block: ModbusReadBlock) -> Int? { blocks.firstIndex(of: block) }

    /// Decodes entry `entry` with `read` as block `block`'s words and the last words of the others;
    /// nil when its block (or its scale factor's) has not been read yet.
    func decode(_ entry: Int, block: Int, read: [UInt16]) throws(DeviceError) -> ModbusSignalValue? {
        try decode(entry) { $0 == block ? read : words[$0] }
    }

    /// Decodes entry `entry` with `words(b)` as block `b`'s words; nil when they are empty.
    func decode(_ entry: Int, words: (Int) -> [UInt16]) throws(DeviceError) -> ModbusSignalValue? {
        let e = entries[entry]
        let valueWords = words(e.block)
        guard !valueWords.isEmpty else { return nil }
        var factor: UInt16?
        if let at = e.scaleFactor {
            let factorWords = words(at.block)
            guard !factorWords.isEmpty else { return nil }
            factor = factorWords[at.index]
        }
        return try ModbusSignalCodec.decode(e.signal, e.location, words: valueWords, at: e.index, scaleFactor: factor)
    }

    /// The entries whose value or scale factor lies in block `block`.
    func entries(in block: Int) -> [Int] {
        entries.indices.filter { entries[$0].block == block || entries[$0].scaleFactor?.block == block }
    }
}
