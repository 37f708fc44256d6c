import Foundation

/// The verbs of the control socket. An unknown verb is kept as `.unknown` so that bessd can name
/// it in its refusal (`BAD_REQUEST`) and ask the operator's role for it.
public enum ControlVerb: Hashable, Sendable, CustomStringConvertible {
    case status, faults, site, config, metrics, events, reset, mode, override
    /// The block schedule: `schedule` reads it; `schedule-load` and `schedule-clear` change it.
    case schedule, scheduleLoad, scheduleClear
    /// The optimiser's last plan (`bessctl plan`).
    case plan
    /// A verb this version does not know (or none: the empty string).
    case unknown(String)

    /// Every verb bessd answers, in the order its refusal lists them.
    public static let known: [ControlVerb] = [.status, .faults, .site, .config, .metrics, .events, .reset, .mode, .override,
                                              .schedule, .scheduleLoad, .scheduleClear, .plan]

    public init(_ name: String) {
        self = Self.known.first { $0.name == name } ?? .unknown(name)
    }

    /// The verb as it is written on the wire.
    public var name: String {
        switch self {
        case .status: "status"
        case .faults: "faults"
        case .site: "site"
        case .config: "config"
        case .metrics: "metrics"
        case .events: "events"
        case .reset: "reset"
        case .mode: "mode"
        case .override: "override"
        case .schedule: "schedule"
        case .scheduleLoad: "schedule-load"
        case .scheduleClear: "schedule-clear"
        case .plan: "plan"
        case .unknown(let name): name
        }
    }

    public var description: String { name }

    /// Whether the verb only reads: a reader may call it. Everything else, unknown verbs included,
    /// needs an operator.
    public var onlyReads: Bool {
        switch self {
        case .status, .faults, .site, .config, .metrics, .events, .schedule, .plan: true
        case .reset, .mode, .override, .scheduleLoad, .scheduleClear, .unknown: false
        }
    }
}

/// The unit a request names, as sent: none (the site), a name, or a value that cannot name a unit
/// (a number, a boolean, an array…), kept as text so that the refusal can quote it.
public enum UnitSelector: Hashable, Sendable {
    case name(String)
    case notAName(String)
}

/// One control request: `{"verb": "override", "unit": "U1", "power_kw": -20, "for_s": 900}` on the
/// wire, one JSON object per line. Decoding is lenient per field, as the socket has always been: a
/// field of the wrong type reads as absent (and the verb then refuses it with its own message), so a
/// request decodes whenever it is a JSON object.
public struct ControlRequest: Codable, Hashable, Sendable {
    public var verb: ControlVerb
    /// `unit`: nil when the request names none (or `null`).
    public var unit: UnitSelector?
    /// `mode`: `auto` or `standby` (verb `mode`).
    public var mode: String?
    /// `clear`: end the override (verb `override`).
    public var clear: Bool
    /// `power_kw`: the override's power, + = discharge.
    public var powerKW: Double?
    /// `for_s`: the override's expiry.
    public var forSeconds: Double?
    /// `orphaned`: reset the latches of unit ids the configuration lacks (verb `reset`, no unit).
    public var orphaned = false
    /// `schedule`: a schedule document's JSON text, as its file holds it (verb `schedule-load`).
    public var schedule: String?

    public init(_ verb: ControlVerb, unit: String? = nil, mode: String? = nil, clear: Bool = false,
                powerKW: Double? = nil, forSeconds: Double? = nil) {
        self.verb = verb
        self.unit = unit.map { .name($0) }
        self.mode = mode
        self.clear = clear
        self.powerKW = powerKW
        self.forSeconds = forSeconds
    }

    enum CodingKeys: String, CodingKey {
        case verb, unit, mode, clear, orphaned, schedule
        case powerKW = "power_kw"
        case forSeconds = "for_s"
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        verb = ControlVerb((try? c.decodeIfPresent(String.self, forKey: .verb)) ?? "")
        if let name = try? c.decodeIfPresent(String.self, forKey: .unit) {
            unit = .name(name)
        } else if !c.contains(.unit) || ((try? c.decodeNil(forKey: .unit)) ?? false) {
            unit = nil
        } else if let flag = try? c.decode(Bool.self, forKey: .unit) {
            unit = .notAName("\(flag)")
        } else if let number = try? c.decode(Double.self, forKey: .unit) {
            unit = .notAName(Self.text(number))
        } else {
            unit = .notAName("(not a unit id)")
        }
        mode = try? c.decodeIfPresent(String.self, forKey: .mode)
        clear = Self.flag(c, .clear) ?? false
        powerKW = Self.number(c, .powerKW)
        forSeconds = Self.number(c, .forSeconds)
        orphaned = Self.flag(c, .orphaned) ?? false
        schedule = try? c.decodeIfPresent(String.self, forKey: .schedule)
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(verb.name, forKey: .verb)
        switch unit {
        case .name(let name)?: try c.encode(name, forKey: .unit)
        case .notAName(let text)?: try c.encode(text, forKey: .unit)
        case nil: break
        }
        try c.encodeIfPresent(mode, forKey: .mode)
        if clear { try c.encode(true, forKey: .clear) }
        try c.encodeIfPresent(powerKW, forKey: .powerKW)
        try c.encodeIfPresent(forSeconds, forKey: .forSeconds)
        if orphaned { try c.encode(true, forKey: .orphaned) }
        try c.encodeIfPresent(schedule, forKey: .schedule)
    }

    /// A number, or a boolean read as 1 or 0 (as a JSON object's `NSNumber` always was).
    private static func number(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) -> Double? {
        if let x = try? c.decodeIfPresent(Double.self, forKey: key) { return x }
        if let b = try? c.decodeIfPresent(Bool.self, forKey: key) { return b ? 1 : 0 }
        return nil
    }

    /// A boolean, or the number 1 or 0 read as one.
    private static func flag(_ c: KeyedDecodingContainer<CodingKeys>, _ key: CodingKeys) -> Bool? {
        if let b = try? c.decodeIfPresent(Bool.self, forKey: key) { return b }
        if let x = try? c.decodeIfPresent(Double.self, forKey: key), x == 0 || x == 1 { return x == 1 }
        return nil
    }

    private static func text(_ x: Double) -> String {
        x == x.rounded() && abs(x) < 1e15 ? String(Int64(x)) : "\(x)"
    }
}

extension ControlRequest {
    /// Reads request lines that are not a bare verb (one decoder: it keeps no state between calls).
    private static let decoder = JSONDecoder()

    /// The request one line holds (without its newline), nil when the line is not a JSON object.
    /// A bare verb, `{"verb":"status"}` (what bessctl and monitors send for the reading verbs; JSON
    /// whitespace between the tokens allowed), is read by a scan of its bytes; every other line by
    /// `JSONDecoder`, which reads a bare verb the same way. The scan spares the service thread the
    /// decoder, which was a third of what a `status` answer cost it.
    public init?(line: [UInt8]) {
        if let verb = Self.bareVerb(line) {
            self.init(ControlVerb(verb))
        } else if let request = try? Self.decoder.decode(ControlRequest.self, from: Data(line)) {
            self = request
        } else {
            return nil
        }
    }

    /// NAME when `line` is exactly `{"verb":"NAME"}`, with JSON whitespace around the tokens and
    /// NAME of 1–32 ASCII letters; nil for anything else (escapes, other keys, another shape).
    package static func bareVerb(_ line: [UInt8]) -> String? {
        var i = 0
        func skipSpace() {
            while i < line.count, line[i] == 0x20 || line[i] == 0x09 || line[i] == 0x0A || line[i] == 0x0D { i += 1 }
        }
        func take(_ token: String) -> Bool {
            skipSpace()
            for byte in token.utf8 {
                guard i < line.count, line[i] == byte else { return false }
                i += 1
            }
            return true
        }
        guard take("{"), take("\"verb\""), take(":"), take("\"") else { return nil }
        let start = i
        while i < line.count, i - start < 32, (0x41...0x5A).contains(line[i]) || (0x61...0x7A).contains(line[i]) { i += 1 }
        let end = i
        // The closing quote right after the letters: inside the string a space is part of the verb.
        guard end > start, i < line.count, line[i] == UInt8(ascii: "\"") else { return nil }
        i += 1
        guard take("}") else { return nil }
        skipSpace()
        guard i == line.count else { return nil }
        return String(decoding: line[start..<end], as: UTF8.self)
    }
}

/// A refusal on the wire: `{"ok": false, "code": "UNKNOWN_UNIT", "message": "…"}`. The codes are
/// stable (operators' scripts match them); the message is for a person.
public struct ControlFailure: Error, Codable, Hashable, Sendable, CustomStringConvertible {
    public var code: String
    public var message: String

    public init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }
}

extension ControlFailure: ControlReply {
    /// `{"code": …, "message": …, "ok": false}`.
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.code, code)
        json.field(CodingKeys.message, message)
        json.field("ok", false)
        json.endObject()
    }
}
