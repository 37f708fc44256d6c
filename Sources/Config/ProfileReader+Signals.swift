import BessBase
import Fieldbus
internal import Yams

/// A profile's `signals:` — where each value sits (a CAN frame's bits or Modbus registers) and how its
/// raw value becomes an engineering one.
enum ProfileSignalReader {
    /// A signal as read, with its mapping for the checks that point back at it.
    struct Read {
        var signal: ProfileSignal
        var fields: ConfigReader.Fields
        /// The raw value's width in bits (CAN `bits`, 16 or 32 for Modbus).
        var width: Int
    }

    static let keys = ConfigKeys("signals[]", [
        "name", "quantity", "can", "modbus", "signed", "scale", "offset", "invalid", "valid", "magnitude", "clamp_min",
        "agree_within", "optional", "text",
    ])
    static let canKeys = ConfigKeys("signals[].can", ["id", "byte", "bit", "bits", "order"])
    static let modbusKeys = ConfigKeys("signals[].modbus", ["table", "register", "type", "word_order", "scale_register"])

    /// Every signal of the list; nil when the list is absent or not a list, or a signal was refused.
    static func decodeList(_ top: ConfigReader.Fields, _ r: ConfigReader, transport: ProfileTransport?) -> [Read]? {
        guard let list = top.required(top.sequence("signals"), "signals") else { return nil }
        if list.isEmpty { r.error(top.mark("signals"), "signals", "list at least one signal", got: "[]") }
        var signals: [Read] = []
        var names: [String: Int] = [:]
        for (index, node) in list.enumerated() {
            guard let f = r.fields(node, "signals[\(index)]") else { continue }
            let read = decode(f, r, transport: transport)
            if let name = read?.signal.name {
                if let first = names[name] {
                    r.error(f.mark("name"), f.child("name"), "duplicates signals[\(first)].name", got: "'\(name)'")
                }
                names[name] = names[name] ?? index
            }
            if let read { signals.append(read) }
        }
        // A refused signal would make the checks that name signals report it again as missing.
        return signals.count == list.count ? signals : nil
    }

    /// One signal; nil (with its errors) when it cannot be used.
    static func decode(_ f: ConfigReader.Fields, _ r: ConfigReader, transport: ProfileTransport?) -> Read? {
        let name = f.required(f.string("name", pattern: IdentifierRule.accepts, rule: "must be \(IdentifierRule.text)"), "name")
        let quantity = f.choice("quantity", ProfileQuantity.allCases.map { ($0.rawValue, Optional($0)) }, default: nil)
        var location: (location: SignalLocation, width: Int, signed: Bool?)?
        if f.has("can") && f.has("modbus") {
            _ = (f.node("can"), f.node("modbus"))
            r.error(f.mark("modbus"), f.child("modbus"), "give can or modbus, not both")
        } else if let can = f.fields("can") {
            if case .modbus? = transport { r.error(f.mark("can"), f.child("can"), "this is a Modbus profile: give modbus:, not can:") }
            if case .can(let t)? = transport, let l = decodeCAN(can, r, transport: t) { location = (.can(l), l.bits, nil) }
            else if transport == nil { can.finish(canKeys) }
        } else if let modbus = f.fields("modbus") {
            if case .can? = transport { r.error(f.mark("modbus"), f.child("modbus"), "this is a CAN profile: give can:, not modbus:") }
            if case .modbus(let t)? = transport, let l = decodeModbus(modbus, r, transport: t) {
                location = (.modbus(l), l.count * 16, l.type == .int16 || l.type == .int32)
            } else if transport == nil { modbus.finish(modbusKeys) }
        } else if !f.has("can") && !f.has("modbus") {
            r.error(f.node, f.path, "needs can: or modbus: (where the value sits)")
        }
        var signed = f.bool("signed", default: location?.signed ?? false)
        if let typeSigned = location?.signed, f.has("signed"), signed != typeSigned {
            r.error(f.mark("signed"), f.child("signed"), "contradicts the register's type (int16 and int32 are signed, uint16 and uint32 not)",
                    got: String(signed))
            signed = typeSigned
        }
        let scale = f.double("scale", default: 1)!
        if scale == 0 { r.error(f.mark("scale"), f.child("scale"), "must not be 0 (value = raw × scale + offset)", got: "0") }
        let offset = f.double("offset", default: 0)!
        let invalid = integers(f, "invalid", r) ?? []
        if let width = location?.width, width < 64 {
            let range: ClosedRange<Int64> = signed ? -(Int64(1) << (width - 1))...((Int64(1) << (width - 1)) - 1) : 0...((Int64(1) << width) - 1)
            for value in invalid where !range.contains(value) {
                r.error(f.mark("invalid"), f.child("invalid"),
                        "\(value) is not a raw value of this \(signed ? "signed" : "unsigned") \(width)-bit signal "
                            + "(\(range.lowerBound)…\(range.upperBound)); it would never match", got: String(value))
            }
        }
        let valid = decodeRange(f, "valid", r)
        let magnitude = f.bool("magnitude", default: false)
        let clamp = f.double("clamp_min")
        let agree = f.double("agree_within", range: 0...100, unit: "%")
        if agree != nil, quantity != .socFine {
            r.error(f.mark("agree_within"), f.child("agree_within"), "is only for quantity soc_fine")
        }
        let optional = f.bool("optional", default: false)
        let text = f.bool("text", default: false)
        if text, let quantity {
            r.error(f.mark("text"), f.child("text"), "a text signal is read and reported only; it takes no quantity",
                    got: quantity.rawValue)
        }
        if text, case .can(let can)? = location?.location, can.bit != 0 || can.bits % 8 != 0 {
            r.error(f.mark("text"), f.child("text"), "text is whole bytes: bit 0 and bits a multiple of 8")
        }
        f.finish(keys)
        guard let name, let location, scale != 0 else { return nil }
        let signal = ProfileSignal(name: name, quantity: quantity, location: location.location, signed: signed, scale: scale,
                                   offset: offset, invalidRaw: invalid, valid: valid, magnitude: magnitude,
                                   clampMinimum: clamp, agreeWithin: agree, optional: optional, text: text)
        return Read(signal: signal, fields: f, width: location.width)
    }

    /// `can: {id, byte, bit, bits, order}` — DBC style; a big-endian value is whole bytes.
    static func decodeCAN(_ c: ConfigReader.Fields, _ r: ConfigReader, transport: CANProfileTransport) -> CANSignalLocation? {
        let id = c.required(ProfileReader.canID(c, "id", extended: transport.extended), "id")
        let byte = c.required(c.int("byte", range: 0...7), "byte")
        let bit = c.int("bit", default: 0, range: 0...7)!
        let bits = c.required(c.int("bits", range: 1...64), "bits")
        let order = c.choice("order", CANSignalLocation.ByteOrder.allCases.map { ($0.rawValue, $0) }, default: .little)
        c.finish(canKeys)
        guard let id, let byte, let bits else { return nil }
        var usable = true
        if order == .big, bit != 0 || bits % 8 != 0 {
            let key = bit != 0 ? "bit" : "bits"
            r.error(c.mark(key), c.child(key), "a big-endian value is whole bytes: bit 0 and bits a multiple of 8",
                    got: String(bit != 0 ? bit : bits))
            usable = false
        }
        if byte * 8 + bit + bits > 64 {
            r.error(c.mark("bits"), c.child("bits"),
                    "runs past the frame's 8 bytes (byte × 8 + bit + bits = \(byte * 8 + bit + bits), at most 64)", got: String(bits))
            usable = false
        }
        if !transport.filters.contains(where: { $0.matches(UInt32(id)) }) {
            r.error(c.mark("id"), c.child("id"), "no filter of transport.can passes this frame, so it is never received",
                    got: ProfileReader.hex(id))
            usable = false
        }
        return usable ? CANSignalLocation(frameID: UInt32(id), byte: byte, bit: bit, bits: bits, order: order) : nil
    }

    /// `modbus: {table, register, type, word_order, scale_register}`.
    static func decodeModbus(_ m: ConfigReader.Fields, _ r: ConfigReader, transport: ModbusProfileTransport) -> ModbusSignalLocation? {
        let table = ProfileReader.table(m)
        let register = m.required(ProfileReader.register(m, "register"), "register")
        let type = m.choice("type", ModbusSignalLocation.ValueType.allCases.map { ($0.rawValue, $0) }, default: .uint16)
        let lowFirst = ProfileReader.wordOrder(m, default: transport.lowWordFirst)
        let scaleRegister = ProfileReader.register(m, "scale_register")
        m.finish(modbusKeys)
        guard let register else { return nil }
        let location = ModbusSignalLocation(table: table, address: register, type: type, lowWordFirst: lowFirst,
                                            scaleFactorAddress: scaleRegister)
        if register + location.count > 65536 {
            r.error(m.mark("register"), m.child("register"), "the value runs past register 65535", got: String(register))
            return nil
        }
        return location
    }

    /// A list of whole numbers (`invalid`, `equals`), written in decimal or 0x.
    static func integers(_ f: ConfigReader.Fields, _ key: String, _ r: ConfigReader) -> [Int64]? {
        guard let list = f.sequence(key) else { return nil }
        var values: [Int64] = []
        for node in list {
            if case .scalar = node, let value = node.int { values.append(Int64(value)) } else {
                r.error(node, f.child(key), "expected whole numbers", got: ConfigReader.shown(node))
            }
        }
        return values
    }

    /// `[low, high]`, two numbers, low ≤ high.
    static func decodeRange(_ f: ConfigReader.Fields, _ key: String, _ r: ConfigReader) -> ClosedRange<Double>? {
        guard let list = f.sequence(key) else { return nil }
        let numbers = list.compactMap { node -> Double? in
            guard case .scalar = node, let value = node.int.map(Double.init) ?? node.float, value.isFinite else { return nil }
            return value
        }
        guard numbers.count == 2, list.count == 2, numbers[0] <= numbers[1] else {
            r.error(f.mark(key), f.child(key), "expected [low, high]: two numbers, low not above high",
                    got: f.mark(key).map(ConfigReader.shown))
            return nil
        }
        return numbers[0]...numbers[1]
    }
}
