/// An answer on the control socket: bessd writes it through `JSONText` (one JSON object per line,
/// keys in code-point order, `"ok": true`), bessctl and tools decode it. A refusal is a
/// `ControlFailure` (`"ok": false`). Quantities a device may not have yet (NaN) are optional and
/// written as `null`.
public protocol ControlReply: Decodable, Sendable, JSONWritable {}

extension ControlReply {
    /// The reply as the socket writes it, newline included.
    public var line: [UInt8] { JSONText.line(self) }
}

/// The `"ok": true` every reply but a refusal carries; written at its place among the keys.
let okKey = "ok"

// MARK: faults

/// `faults`: every active trip, and the site's conditions (`METER_STALE`, `SITE_SHORTFALL`…).
public struct FaultsReply: ControlReply, Equatable {
    public var faults: [FaultReply]
    public init(faults: [FaultReply]) { self.faults = faults }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.faults, faults)
        json.field(okKey, true)
        json.endObject()
    }
}

/// One active fault: the unit (or `site`), its code, whether it is latched, what it means.
public struct FaultReply: Codable, Sendable, Equatable, JSONWritable {
    public var code: String
    public var explanation: String
    public var latched: Bool
    public var unit: String
    public init(unit: String, code: String, latched: Bool, explanation: String) {
        self.unit = unit
        self.code = code
        self.latched = latched
        self.explanation = explanation
    }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.code, code)
        json.field(CodingKeys.explanation, explanation)
        json.field(CodingKeys.latched, latched)
        json.field(CodingKeys.unit, unit)
        json.endObject()
    }
}

// MARK: config, metrics

/// `config`: the configuration file as loaded, secrets redacted (`bessctl diag`).
public struct ConfigReply: ControlReply, Equatable {
    public var path: String
    public var text: String
    public init(path: String, text: String) {
        self.path = path
        self.text = text
    }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(okKey, true)
        json.field(CodingKeys.path, path)
        json.field(CodingKeys.text, text)
        json.endObject()
    }
}

/// `metrics`: the Prometheus text of `GET /metrics`.
public struct MetricsReply: ControlReply, Equatable {
    public var text: String
    public init(text: String) { self.text = text }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(okKey, true)
        json.field(CodingKeys.text, text)
        json.endObject()
    }
}

// MARK: acting verbs

/// `reset`: the latched codes cleared and those refused (condition still present), as `UNIT:CODE`.
public struct ResetReply: ControlReply, Equatable {
    public var cleared: [String]
    public var refused: [String]
    public init(cleared: [String], refused: [String]) {
        self.cleared = cleared
        self.refused = refused
    }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.cleared, cleared)
        json.field(okKey, true)
        json.field(CodingKeys.refused, refused)
        json.endObject()
    }
}

/// `mode`: the mode set, the units it was set on, and those another hold keeps in standby.
public struct ModeReply: ControlReply, Equatable {
    /// `HOLD_STATE_UNWRITABLE: …` when the hold could not be kept on disk (left out otherwise).
    public var holdState: String?
    public var mode: String
    public var stillStandby: [StandbyHold]
    public var units: [String]
    public init(mode: String, units: [String], stillStandby: [StandbyHold]) {
        self.mode = mode
        self.units = units
        self.stillStandby = stillStandby
    }
    enum CodingKeys: String, CodingKey { case mode, units, stillStandby = "still_standby", holdState = "hold_state" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.holdState, ifPresent: holdState)
        json.field(CodingKeys.mode, mode)
        json.field(okKey, true)
        json.field(CodingKeys.stillStandby, stillStandby)
        json.field(CodingKeys.units, units)
        json.endObject()
    }
}

/// A unit still in standby after `mode auto`, and who holds it there.
public struct StandbyHold: Codable, Sendable, Equatable, JSONWritable {
    public var heldBy: String
    public var unit: String
    public init(unit: String, heldBy: String) {
        self.unit = unit
        self.heldBy = heldBy
    }
    enum CodingKeys: String, CodingKey { case unit, heldBy = "held_by" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.heldBy, heldBy)
        json.field(CodingKeys.unit, unit)
        json.endObject()
    }
}

/// `override`: the unit, power and expiry set; all nil for `--clear`.
public struct OverrideReply: ControlReply, Equatable {
    public var forS: Double?
    public var powerKW: Double?
    public var unit: String?
    public init(unit: String? = nil, powerKW: Double? = nil, forS: Double? = nil) {
        self.unit = unit
        self.powerKW = powerKW
        self.forS = forS
    }
    enum CodingKeys: String, CodingKey { case unit, forS = "for_s", powerKW = "power_kw" }
    public func write(to json: inout JSONText) {
        json.beginObject()
        json.field(CodingKeys.forS, ifPresent: forS)
        json.field(okKey, true)
        json.field(CodingKeys.powerKW, ifPresent: powerKW)
        json.field(CodingKeys.unit, ifPresent: unit)
        json.endObject()
    }
}

/// What every answer says first: `ok`, and a refusal's code and message.
public struct ControlOutcome: Decodable, Sendable {
    public var ok: Bool?
    public var code: String?
    public var message: String?
}
