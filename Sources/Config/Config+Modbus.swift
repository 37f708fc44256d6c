import Cycle
import ControlCore
import Fieldbus
internal import Yams

extension MappedRegister {
    /// The keys of a register of a register_map (power, setpoint, …).
    static let keys = ConfigKeys("a register of a register_map (power, setpoint, …)", [
        "address", "type", "scale", "word_order",
    ])

    /// A register of a map (`power:`, `setpoint:`, …): address, type, scale and word order; `required`
    /// reports its absence.
    static func decode(_ parent: ConfigReader.Fields, _ key: String, _ r: ConfigReader, required: Bool)
        -> MappedRegister?
    {
        guard let f = parent.fields(key) else {
            if required { r.error(parent.node, parent.child(key), "is required") }
            return nil
        }
        let address = f.int("address", range: 0...65535)
        if address == nil, !f.has("address") { r.error(f.node, f.child("address"), "is required") }
        let type = f.choice("type", MappedRegister.ValueType.allCases.map { ($0.rawValue, $0) }, default: .int16)
        let scale = f.double("scale", default: 1)!
        if scale == 0 { r.error(f.mark("scale"), f.child("scale"), "must not be 0", got: "0") }
        let order = f.choice("word_order", [("high_first", false), ("low_first", true)], default: false)
        f.finish(Self.keys)
        guard let address, scale != 0 else { return nil }
        if address + (type == .int16 || type == .uint16 ? 1 : 2) > 65536 {
            r.error(f.mark("address"), f.child("address"), "the value runs past register 65535", got: String(address))
            return nil
        }
        return MappedRegister(address: address, type: type, scale: scale, lowWordFirst: order)
    }
}

extension RegisterMapSpec {
    /// The keys of `bess_units[].inverter.register_map`.
    static let keys = ConfigKeys("bess_units[].inverter.register_map", [
        "power", "frequency", "fault", "fault_values", "setpoint", "revert_timeout", "enable", "enable_value",
        "rating_kw",
    ])

    /// An inverter's `register_map:` — the registers of an inverter that does not speak SunSpec; power,
    /// setpoint and the revert timer are required.
    static func decode(_ m: ConfigReader.Fields, _ r: ConfigReader) -> RegisterMapSpec? {
        let power = MappedRegister.decode(m, "power", r, required: true)
        let frequency = MappedRegister.decode(m, "frequency", r, required: false)
        let fault = MappedRegister.decode(m, "fault", r, required: false)
        var faultValues: [Int64] = []
        if let list = m.sequence("fault_values") {
            for node in list {
                if let value = node.int { faultValues.append(Int64(value)) } else {
                    r.error(node, m.child("fault_values"), "expected whole numbers", got: ConfigReader.shown(node))
                }
            }
        }
        let setpoint = MappedRegister.decode(m, "setpoint", r, required: true)
        // The revert timer is not optional: a dead bessd must leave a safe inverter.
        let revert = MappedRegister.decode(m, "revert_timeout", r, required: true)
        let enable = MappedRegister.decode(m, "enable", r, required: false)
        let enableValue = m.double("enable_value", default: 1)!
        let rating = m.double("rating_kw", range: 0...100_000, exclusiveLower: true, unit: "kW")
        m.finish(Self.keys)
        guard let power, let setpoint, let revert else { return nil }
        return RegisterMapSpec(power: power, frequency: frequency, fault: fault, faultValues: faultValues, setpoint: setpoint,
                               revertTimeout: revert, enable: enable, enableValue: enableValue,
                               rating: rating.map { Watts.kilowatts($0) })
    }
}

extension ModbusSettings {
    /// The keys of modbus (bess_units[].modbus, site.meter.modbus, scada.serial, grid_operator.inputs.modbus).
    static let keys = ConfigKeys("modbus (bess_units[].modbus, site.meter.modbus, scada.serial, grid_operator.inputs.modbus)", [
        "host", "port", "device", "baud", "parity", "data_bits", "stop_bits", "rs485", "unit_id", "timeout_ms",
    ])

    /// A `modbus:` endpoint: `host` (Modbus TCP) or `device` (Modbus RTU with its line settings), unit id and timeout.
    static func decode(_ m: ConfigReader.Fields, _ r: ConfigReader) -> ModbusSettings? {
        var host = m.string("host")
        if let text = host, let problem = HostAddress.problem(text) {
            r.error(m.mark("host"), m.child("host"), "\(HostAddress.rule); this \(problem)",
                    got: m.mark("host").map(ConfigReader.shown))
            host = nil
        }
        let device = m.string("device", pattern: { $0.hasPrefix("/dev/") || $0.hasPrefix("/") },
                              rule: "must be an absolute device path such as /dev/ttyUSB0")
        let port = m.int("port", default: 502, range: 1...65535)!
        let timeout = m.int("timeout_ms", default: 500, range: 10...10_000, unit: "milliseconds")!
        let serialKeys = ["baud", "parity", "data_bits", "stop_bits", "rs485"]
        var transport: ModbusTransport?
        var unitRange = 0...255
        if host != nil && device != nil {
            r.error(m.mark("device"), m.child("device"), "give either host (Modbus TCP) or device (Modbus RTU), not both")
        } else if let device {
            unitRange = 1...247
            let baud = m.int("baud", default: 9600, range: 1200...921_600, unit: "baud")!
            let standard = [1200, 2400, 4800, 9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 921_600]
            if !standard.contains(baud) {
                r.error(m.mark("baud"), m.child("baud"), "must be a standard rate (\(standard.map(String.init).joined(separator: ", ")))",
                        got: String(baud))
            }
            let parity = m.choice("parity", [("none", SerialSettings.Parity.none), ("n", .none), ("even", .even), ("e", .even),
                                             ("odd", .odd), ("o", .odd)], default: .even)
            let dataBits = m.int("data_bits", default: 8, range: 7...8)!
            let stopBits = m.int("stop_bits", default: 1, range: 1...2)!
            let rs485 = m.bool("rs485", default: false)
            transport = .rtu(SerialSettings(device: device, baud: baud, parity: parity, dataBits: dataBits,
                                            stopBits: stopBits, rs485: rs485))
        } else if let host {
            for key in serialKeys where m.has(key) {
                _ = m.node(key)
                r.error(m.mark(key), m.child(key), "is a serial (RTU) setting; this endpoint is Modbus TCP (host)")
            }
            transport = .tcp(host: host, port: port)
        } else if !m.has("host") && !m.has("device") {
            r.error(m.node, m.path, "needs host (Modbus TCP) or device (Modbus RTU)")
        }
        let unitID = m.int("unit_id", default: 1, range: unitRange)!
        m.finish(Self.keys)
        return transport.map { ModbusSettings(transport: $0, unitID: unitID, timeout: .milliseconds(timeout)) }
    }
}
