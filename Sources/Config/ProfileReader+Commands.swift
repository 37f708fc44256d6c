import ControlCore
import Fieldbus
internal import Yams

/// What a profile sends: `keep_alive:` CAN frames, and an inverter's `commands:` — its setpoint, start
/// and stop sequences, and the fallback it takes without bessd, which a profile that commands power
/// must declare.
enum ProfileCommandReader {
    static let keepAliveKeys = ConfigKeys("keep_alive[]", ["id", "extended", "data", "period_s"])
    static let commandKeys = ConfigKeys("commands", ["setpoint", "start", "stop", "fallback"])
    static let setpointKeys = ConfigKeys("commands.setpoint", ["register", "type", "scale", "word_order", "direction", "magnitude"])
    static let directionKeys = ConfigKeys("commands.setpoint.direction", ["register", "charge", "discharge", "stop"])
    static let magnitudeKeys = ConfigKeys("commands.setpoint.magnitude", ["register", "type", "scale"])
    static let writeKeys = ConfigKeys("commands.start[]", ["register", "value"])
    static let fallbackKeys = ConfigKeys("commands.fallback", ["revert_timer", "watchdog", "traffic_timeout", "time_slot"])
    static let timerKeys = ConfigKeys("commands.fallback.revert_timer", ["register", "scale"])
    static let watchdogKeys = ConfigKeys("commands.fallback.watchdog", ["register", "seconds"])
    static let slotKeys = ConfigKeys("commands.fallback.time_slot", ["seconds"])

    /// The message for commands without a fallback: bessd never commands without a revert.
    static let noFallback = "commands power without a fallback: declare a revert_timer, watchdog, traffic_timeout or time_slot"

    /// `keep_alive:` — frames bessd sends on a CAN profile's bus, with their period.
    static func decodeKeepAlive(_ top: ConfigReader.Fields, _ r: ConfigReader, transport: ProfileTransport?) -> [ProfileFrame] {
        guard let list = top.sequence("keep_alive") else { return [] }
        if case .modbus? = transport, !list.isEmpty {
            r.error(top.mark("keep_alive"), "keep_alive", "is for CAN profiles; a Modbus device is polled")
        }
        let busExtended = if case .can(let can)? = transport { can.extended } else { false }
        var frames: [ProfileFrame] = []
        for (index, node) in list.enumerated() {
            guard let k = r.fields(node, "keep_alive[\(index)]") else { continue }
            let extended = k.bool("extended", default: busExtended)
            let id = k.required(ProfileReader.canID(k, "id", extended: extended), "id")
            var data: [UInt8] = []
            let bytes = k.sequence("data") ?? []
            for node in bytes {
                if case .scalar = node, let value = node.int, (0...255).contains(value) { data.append(UInt8(value)) } else {
                    r.error(node, k.child("data"), "expected bytes from 0 to 255", got: ConfigReader.shown(node))
                }
            }
            if bytes.count > 8 { r.error(k.mark("data"), k.child("data"), "a CAN frame carries at most 8 bytes", got: "\(bytes.count) bytes") }
            let period = k.double("period_s", default: 1, range: 0...3600, exclusiveLower: true, unit: "seconds")!
            k.finish(keepAliveKeys)
            if let id, data.count == bytes.count, bytes.count <= 8 {
                frames.append(ProfileFrame(id: UInt32(id), extended: extended, data: data, period: .seconds(fromDouble: period)))
            }
        }
        return frames
    }

    /// `commands:` (inverter only, over Modbus) — nil when absent or refused.
    static func decodeCommands(_ top: ConfigReader.Fields, _ r: ConfigReader, kind: DeviceProfile.Kind?,
                               transport: ProfileTransport?) -> ProfileCommands? {
        guard let c = top.fields("commands") else { return nil }
        if let kind, kind != .inverter {
            r.error(top.mark("commands"), "commands", "only an inverter profile commands power; this one is kind \(kind.rawValue)")
        }
        if case .can? = transport { r.error(top.mark("commands"), "commands", "commands are Modbus register writes; this profile is CAN") }
        let setpoint = c.required(c.fields("setpoint").flatMap { decodeSetpoint($0, r) }, "setpoint")
        let start = writes(c, "start", r)
        let stop = writes(c, "stop", r)
        var fallback: ProfileCommands.Fallback?
        if let f = c.fields("fallback") {
            fallback = decodeFallback(f, r)
        } else {
            r.error(c.mark("fallback"), c.child("fallback"), noFallback)
        }
        c.finish(commandKeys)
        guard let setpoint, let start, let stop, let fallback else { return nil }
        return ProfileCommands(setpoint: setpoint, start: start, stop: stop, fallback: fallback)
    }

    /// `setpoint:` — one signed register (`register`, `type`, `scale`), or `direction:` and `magnitude:`.
    static func decodeSetpoint(_ s: ConfigReader.Fields, _ r: ConfigReader) -> ProfileCommands.Setpoint? {
        if s.has("direction") || s.has("magnitude") {
            let direction = s.required(s.fields("direction"), "direction")
            let magnitude = s.required(s.fields("magnitude"), "magnitude")
            for key in ["register", "type", "scale", "word_order"] where s.has(key) {
                _ = s.node(key)
                r.error(s.mark(key), s.child(key), "belongs under magnitude: when the setpoint has a direction register")
            }
            s.finish(setpointKeys)
            guard let direction, let magnitude else { return nil }
            let directionRegister = direction.required(ProfileReader.register(direction, "register"), "register")
            let values = ["charge", "discharge", "stop"].map { direction.required(direction.int($0, range: 0...65535), $0) }
            direction.finish(directionKeys)
            let magnitudeRegister = magnitude.required(ProfileReader.register(magnitude, "register"), "register")
            let type = magnitude.choice("type", ModbusSignalLocation.ValueType.allCases.map { ($0.rawValue, $0) }, default: .uint16)
            let scale = self.scale(magnitude, r)
            magnitude.finish(magnitudeKeys)
            guard let directionRegister, let charge = values[0], let discharge = values[1], let stop = values[2],
                  let magnitudeRegister, let scale else { return nil }
            return .split(direction: directionRegister, charge: UInt16(charge), discharge: UInt16(discharge), stop: UInt16(stop),
                          magnitude: magnitudeRegister, type: type, scale: scale)
        }
        let register = s.required(ProfileReader.register(s, "register"), "register")
        let type = s.choice("type", [("int16", ModbusSignalLocation.ValueType.int16), ("int32", .int32),
                                     ("uint16", .uint16), ("uint32", .uint32)], default: .int16)
        if type == .uint16 || type == .uint32 {
            r.error(s.mark("type"), s.child("type"), "a signed setpoint (+ discharge, − charge) needs int16 or int32; "
                    + "an unsigned one takes direction: and magnitude:", got: type.rawValue)
        }
        let scale = self.scale(s, r)
        let lowFirst = ProfileReader.wordOrder(s, default: false)
        s.finish(setpointKeys)
        guard let register, let scale, type == .int16 || type == .int32 else { return nil }
        return .signed(address: register, type: type, scale: scale, lowWordFirst: lowFirst)
    }

    /// `fallback:` — exactly one of revert_timer, watchdog, traffic_timeout and time_slot.
    static func decodeFallback(_ f: ConfigReader.Fields, _ r: ConfigReader) -> ProfileCommands.Fallback? {
        var found: [ProfileCommands.Fallback?] = []
        if let t = f.fields("revert_timer") {
            let register = t.required(ProfileReader.register(t, "register"), "register")
            let scale = self.scale(t, r)
            t.finish(timerKeys)
            if let register, let scale { found.append(.revertTimer(address: register, scale: scale)) } else { found.append(nil) }
        }
        for key in ["watchdog", "traffic_timeout"] {
            guard let w = f.fields(key) else { continue }
            let register = w.required(ProfileReader.register(w, "register"), "register")
            let seconds = w.required(w.int("seconds", range: 1...86_400, unit: "seconds"), "seconds")
            w.finish(watchdogKeys)
            guard let register, let seconds else {
                found.append(nil)
                continue
            }
            found.append(key == "watchdog" ? .watchdog(address: register, seconds: seconds)
                                           : .trafficTimeout(address: register, seconds: seconds))
        }
        if let t = f.fields("time_slot") {
            let seconds = t.required(t.int("seconds", range: 1...86_400, unit: "seconds"), "seconds")
            t.finish(slotKeys)
            found.append(seconds.map(ProfileCommands.Fallback.timeSlot))
        }
        f.finish(fallbackKeys)
        if found.isEmpty { r.error(f.node, f.path, noFallback) }
        if found.count > 1 { r.error(f.node, f.path, "give one fallback: revert_timer, watchdog, traffic_timeout or time_slot") }
        return found.count == 1 ? found[0] : nil
    }

    /// `start:` / `stop:` — register writes in order.
    static func writes(_ c: ConfigReader.Fields, _ key: String, _ r: ConfigReader) -> [RegisterWrite]? {
        guard let list = c.sequence(key) else { return c.has(key) && c.node(key) != nil ? nil : [] }
        var writes: [RegisterWrite] = []
        for (index, node) in list.enumerated() {
            guard let w = r.fields(node, "\(c.child(key))[\(index)]") else { continue }
            let register = w.required(ProfileReader.register(w, "register"), "register")
            let value = w.required(w.int("value", range: 0...65535), "value")
            w.finish(writeKeys)
            if let register, let value { writes.append(RegisterWrite(address: register, value: UInt16(value))) }
        }
        return writes.count == list.count ? writes : nil
    }

    /// `scale:`, default 1, never 0.
    static func scale(_ f: ConfigReader.Fields, _ r: ConfigReader) -> Double? {
        let scale = f.double("scale", default: 1)!
        if scale == 0 {
            r.error(f.mark("scale"), f.child("scale"), "must not be 0", got: "0")
            return nil
        }
        return scale
    }
}
