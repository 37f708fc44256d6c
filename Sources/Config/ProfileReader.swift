public import Fieldbus
import BessBase
import BessSystem
import Foundation
internal import Yams

/// Reads a device profile file (`bessd_profile: 1`, docs/devices.md) into a `DeviceProfile`, as
/// strictly as the configuration: an unknown key, a wrong type, a missing key, overlapping signals, a
/// scale of 0, a command without a fallback are each an error at its line, in the configuration's
/// format (`FILE:LINE: key.path: problem (got X)`).
///
/// Signals may share bits of a CAN frame or a Modbus register only when neither has a `quantity`
/// (values read and reported only, such as a status word read whole and again by byte); a value the
/// cycle uses never shares its bits.
public enum ProfileReader {
    /// The largest profile file read (1 MiB); a larger one is refused unread.
    public static let maxFileBytes = 1 << 20

    /// The name diagnostics give a profile read from text with no path (the built-in ones).
    public static let builtInFile = "<built-in profile>"

    static let keys = ConfigKeys("(profile)", [
        "bessd_profile", "name", "kind", "vendor", "products", "sources", "transport", "identity", "cells_in_series",
        "signals", "groups", "alarms", "keep_alive", "commands",
    ])
    static let transportKeys = ConfigKeys("transport", ["can", "modbus"])
    static let canKeys = ConfigKeys("transport.can", ["bitrate", "extended", "mode", "filters"])
    static let filterKeys = ConfigKeys("transport.can.filters[]", ["id", "mask"])
    static let modbusKeys = ConfigKeys("transport.modbus", ["link", "unit_id", "max_read_registers", "word_order", "request_gap_ms"])
    static let identityKeys = ConfigKeys("identity", ["can_frame", "modbus"])
    static let identityModbusKeys = ConfigKeys("identity.modbus", ["table", "register", "values"])

    /// The profile in the file at `path`, or nil with the errors that refused it; notices come either way.
    public static func read(path: String) -> (profile: DeviceProfile?, diagnostics: [ConfigDiagnostic]) {
        switch text(path: path) {
        case .success(let text): return read(text: text, path: path)
        case .failure(let diagnostic): return (nil, [diagnostic])
        }
    }

    /// The profile in `text`, read from `path` (its stem must be the profile's name; "" for a built-in
    /// profile, named `builtInFile` in diagnostics).
    public static func read(text: String, path: String) -> (profile: DeviceProfile?, diagnostics: [ConfigDiagnostic]) {
        let file = path.isEmpty ? builtInFile : path
        let control = ConfigSyntax.controlCharacters(in: text, file: file)
        if !control.isEmpty { return (nil, control) }
        let root: Node?
        do {
            root = try Yams.compose(yaml: text)
        } catch {
            return (nil, [ConfigSyntax.diagnostic(error, text: text, file: file)])
        }
        guard let root else { return (nil, [ConfigDiagnostic(file: file, line: 1, keyPath: "", message: "the file is empty")]) }
        let r = ConfigReader(file: file)
        var profile = decode(root, r, stem: path.isEmpty ? nil : stem(path))
        profile?.path = path
        var diagnostics = ConfigLoader.byLine(r.diagnostics)
        if r.hasErrors { return (nil, diagnostics) }
        if profile == nil {
            diagnostics.append(ConfigDiagnostic(code: .unexplained, file: file, line: nil, keyPath: "",
                                                message: "refused without a specific error: a bug in bessd; please report this file"))
        }
        return (profile, diagnostics)
    }

    /// True when `text` is a profile rather than a configuration: a line `bessd_profile:` at the margin.
    public static func isProfile(text: String) -> Bool {
        text.split(whereSeparator: \.isNewline).contains { $0.hasPrefix("bessd_profile:") }
    }

    /// True when the file at `path` reads as a profile (`isProfile(text:)`); false when it cannot be read.
    public static func isProfile(path: String) -> Bool {
        if case .success(let text) = text(path: path) { isProfile(text: text) } else { false }
    }

    /// `bms profile pylontech-lv, 24 signals`: what `bessd check-config` says of a profile that loads.
    public static func summary(of profile: DeviceProfile) -> String {
        "\(profile.kind.rawValue) profile \(profile.name), \(profile.signals.count) signal\(profile.signals.count == 1 ? "" : "s")"
    }

    /// The file's name without its directory and `.yaml`.
    public static func stem(_ path: String) -> String {
        let name = path.split(separator: "/").last.map(String.init) ?? path
        return name.hasSuffix(".yaml") ? String(name.dropLast(5)) : name
    }

    /// The text of the file at `path`, at most `maxFileBytes`, UTF-8.
    static func text(path: String) -> Result<String, ConfigDiagnostic> {
        func refusal(_ message: String) -> Result<String, ConfigDiagnostic> {
            .failure(ConfigDiagnostic(code: .unreadable, file: path, line: nil, keyPath: "", message: message))
        }
        guard let handle = FileHandle(forReadingAtPath: path) else {
            return refusal("cannot read the file: \(access(path, R_OK) == 0 ? "not a readable file" : SystemError.text(errno))")
        }
        defer { try? handle.close() }
        guard let data = try? handle.read(upToCount: maxFileBytes + 1) ?? Data() else {
            return refusal("cannot read the file: not a readable file")
        }
        if data.count > maxFileBytes { return refusal("the file is larger than \(maxFileBytes) bytes; a profile is a page of text") }
        guard let text = String(data: data, encoding: .utf8) else { return refusal("the file is not UTF-8 text") }
        return .success(text)
    }

    /// The whole file: the header, the transport, the signals, then the sections that name signals
    /// and the checks across them.
    static func decode(_ root: Node, _ r: ConfigReader, stem: String?) -> DeviceProfile? {
        guard let top = r.fields(root, "") else { return nil }
        if let format = top.required(top.int("bessd_profile"), "bessd_profile"), format != 1 {
            r.error(top.mark("bessd_profile"), "bessd_profile", "must be 1, the profile format this bessd reads", got: String(format))
        }
        let name = top.required(top.string("name", pattern: IdentifierRule.accepts, rule: "must be \(IdentifierRule.text)"), "name")
        if let name, let stem, name != stem {
            r.error(top.mark("name"), "name", "must be the file's name without .yaml ('\(stem)')", got: "'\(name)'")
        }
        let kind = top.required(top.choice("kind", DeviceProfile.Kind.allCases.map { ($0.rawValue, Optional($0)) }, default: nil), "kind")
        let vendor = top.required(top.string("vendor"), "vendor")
        let products = top.required(strings(top, "products", r), "products")
        if products?.isEmpty == true { r.error(top.mark("products"), "products", "list at least one product", got: "[]") }
        let sources = strings(top, "sources", r) ?? []
        let transport = top.required(top.fields("transport").flatMap { decodeTransport($0, r) }, "transport")
        let identity = top.fields("identity").flatMap { decodeIdentity($0, r, transport: transport) }
        let cells = top.int("cells_in_series", range: 1...1000)
        let signals = ProfileSignalReader.decodeList(top, r, transport: transport)
        let alarms = ProfileRules.decodeAlarms(top, r, signals: signals)
        let groups = ProfileRules.decodeGroups(top, r, kind: kind, signals: signals, alarms: alarms)
        let keepAlive = ProfileCommandReader.decodeKeepAlive(top, r, transport: transport)
        let commands = ProfileCommandReader.decodeCommands(top, r, kind: kind, transport: transport)
        top.finish(keys)
        ProfileRules.check(signals, r, top: top, kind: kind)
        guard let name, let kind, let vendor, let products, let transport, let signals else { return nil }
        return DeviceProfile(
            name: name, kind: kind, vendor: vendor, products: products, sources: sources, transport: transport,
            identity: identity, signals: signals.map(\.signal), groups: groups, alarms: alarms,
            keepAlive: keepAlive, commands: commands, cellsInSeries: cells)
    }

    /// `transport:` — exactly one of `can:` and `modbus:`.
    static func decodeTransport(_ t: ConfigReader.Fields, _ r: ConfigReader) -> ProfileTransport? {
        let can = t.fields("can").flatMap { decodeCAN($0, r) }
        let modbus = t.fields("modbus").map { decodeModbus($0, r) }
        t.finish(transportKeys)
        if t.has("can") && t.has("modbus") {
            r.error(t.mark("modbus"), t.child("modbus"), "give can or modbus, not both")
            return nil
        }
        if !t.has("can") && !t.has("modbus") {
            r.error(t.node, t.path, "needs can: or modbus:")
            return nil
        }
        return can.map(ProfileTransport.can) ?? modbus.map(ProfileTransport.modbus)
    }

    static func decodeCAN(_ c: ConfigReader.Fields, _ r: ConfigReader) -> CANProfileTransport? {
        let bitrate = c.int("bitrate", default: 500_000, range: 10_000...1_000_000, unit: "bit/s")!
        let extended = c.bool("extended", default: false)
        let mode = c.choice("mode", CANProfileTransport.Mode.allCases.map { ($0.rawValue, $0) }, default: .broadcast)
        var filters: [CANFilter] = []
        let list = c.required(c.sequence("filters"), "filters")
        if list?.isEmpty == true { r.error(c.mark("filters"), c.child("filters"), "list at least one {id, mask}", got: "[]") }
        for (index, node) in (list ?? []).enumerated() {
            guard let f = r.fields(node, "\(c.child("filters"))[\(index)]") else { continue }
            let id = f.required(canID(f, "id", extended: extended), "id")
            let mask = canID(f, "mask", extended: extended) ?? (extended ? 0x1FFF_FFFF : 0x7FF)
            f.finish(filterKeys)
            if let id { filters.append(CANFilter(id: UInt32(id), mask: UInt32(mask))) }
        }
        c.finish(canKeys)
        guard let list, !list.isEmpty, filters.count == list.count else { return nil }
        return CANProfileTransport(bitrate: bitrate, extended: extended, mode: mode, filters: filters)
    }

    static func decodeModbus(_ m: ConfigReader.Fields, _ r: ConfigReader) -> ModbusProfileTransport {
        let link = m.choice("link", ModbusProfileTransport.Link.allCases.map { ($0.rawValue, $0) }, default: .any)
        let unit = m.int("unit_id", default: 1, range: 0...255)!
        let most = m.int("max_read_registers", default: 125, range: 1...125, unit: "registers")!
        let lowFirst = wordOrder(m, default: false)
        let gap = m.int("request_gap_ms", default: 0, range: 0...10_000, unit: "milliseconds")!
        m.finish(modbusKeys)
        return ModbusProfileTransport(link: link, defaultUnitID: unit, maxReadRegisters: most, lowWordFirst: lowFirst,
                                      requestGap: .milliseconds(gap))
    }

    /// `identity:` — `can_frame: ID` or `modbus: {table, register, values}`, of the profile's transport.
    static func decodeIdentity(_ i: ConfigReader.Fields, _ r: ConfigReader, transport: ProfileTransport?) -> ProfileIdentity? {
        var identity: ProfileIdentity?
        if i.has("can_frame") {
            let extended = if case .can(let can)? = transport { can.extended } else { true }
            if let id = canID(i, "can_frame", extended: extended) { identity = .canFrame(id: UInt32(id)) }
            if case .modbus? = transport { r.error(i.mark("can_frame"), i.child("can_frame"), "a Modbus profile is recognised by modbus:") }
        }
        if let m = i.fields("modbus") {
            let table = Self.table(m)
            let register = m.required(Self.register(m, "register"), "register")
            var values: [UInt16] = []
            for node in m.required(m.sequence("values"), "values") ?? [] {
                if let value = node.int, (0...65535).contains(value) { values.append(UInt16(value)) } else {
                    r.error(node, m.child("values"), "expected register values from 0 to 65535", got: ConfigReader.shown(node))
                }
            }
            m.finish(identityModbusKeys)
            if let register { identity = .modbusRegister(table: table, address: register, values: values) }
            if case .can? = transport { r.error(i.mark("modbus"), i.child("modbus"), "a CAN profile is recognised by can_frame:") }
        }
        if i.has("can_frame") == i.has("modbus") {
            r.error(i.node, i.path, "give can_frame or modbus, one of them")
            identity = nil
        }
        i.finish(identityKeys)
        return identity
    }

    // MARK: values shared by the sections

    /// A list of texts (`products`, `sources`).
    static func strings(_ f: ConfigReader.Fields, _ key: String, _ r: ConfigReader) -> [String]? {
        guard let list = f.sequence(key) else { return nil }
        var texts: [String] = []
        for node in list {
            if case .scalar(let scalar) = node, !scalar.string.isEmpty { texts.append(scalar.string) } else {
                r.error(node, f.child(key), "expected a list of texts", got: ConfigReader.shown(node))
            }
        }
        return texts.count == list.count ? texts : nil
    }

    /// A CAN identifier: 11-bit, or 29-bit when `extended`.
    static func canID(_ f: ConfigReader.Fields, _ key: String, extended: Bool) -> Int? {
        f.int(key, range: 0...(extended ? 0x1FFF_FFFF : 0x7FF), unit: extended ? "a 29-bit identifier" : "an 11-bit identifier")
    }

    /// A register's PDU address, 0–65535.
    static func register(_ f: ConfigReader.Fields, _ key: String) -> Int? { f.int(key, range: 0...65535) }

    static func table(_ f: ConfigReader.Fields) -> ModbusTable {
        f.choice("table", ModbusTable.allCases.map { ($0.rawValue, $0) }, default: .holding)
    }

    /// `word_order: high_first | low_first`: true when the low word comes first.
    static func wordOrder(_ f: ConfigReader.Fields, default value: Bool) -> Bool {
        f.choice("word_order", [("high_first", false), ("low_first", true)], default: value)
    }

    static func hex(_ value: some BinaryInteger) -> String { "0x" + String(value, radix: 16, uppercase: true) }
}

extension ConfigReader.Fields {
    /// `value`, after reporting `key` as required when it is absent or left empty (a wrong value has
    /// had its own error).
    @discardableResult
    func required<T>(_ value: T?, _ key: String) -> T? {
        if value == nil, node(key) == nil { reader.error(mark(key), child(key), "is required") }
        return value
    }
}
