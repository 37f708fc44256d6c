public import BessBase
public import ControlCore
import BessSystem
import Foundation

/// The uplink protocol, version 1 (docs/uplink-openapi.yaml). JSON; every record carries the site's
/// `seq`, rising by one per record across restarts, so an aggregator deduplicates; a 2xx answer to a
/// batch acknowledges every record in it.
public enum UplinkProtocol {
    public static let version = 1
}

/// One unit in a telemetry record.
public struct UnitTelemetry: Codable, Sendable, Equatable {
    public var id: String
    public var state: String
    public var socPercent: Double?
    public var sohPercent: Double?
    public var powerW: Double?
    public var setpointW: Double
    public var voltageV: Double?
    public var currentA: Double?
    public var temperatureMinC: Double?
    public var temperatureMaxC: Double?
    public var allowedChargeW: Double
    public var allowedDischargeW: Double
    public var trips: [String]
    public var latched: [String]
    public var bmsOnline: Bool
    public var inverterOnline: Bool

    public init(id: String, state: String, socPercent: Double?, sohPercent: Double?, powerW: Double?, setpointW: Double,
                voltageV: Double?, currentA: Double?, temperatureMinC: Double?, temperatureMaxC: Double?,
                allowedChargeW: Double, allowedDischargeW: Double, trips: [String], latched: [String], bmsOnline: Bool,
                inverterOnline: Bool) {
        self.id = id
        self.state = state
        self.socPercent = socPercent
        self.sohPercent = sohPercent
        self.powerW = powerW
        self.setpointW = setpointW
        self.voltageV = voltageV
        self.currentA = currentA
        self.temperatureMinC = temperatureMinC
        self.temperatureMaxC = temperatureMaxC
        self.allowedChargeW = allowedChargeW
        self.allowedDischargeW = allowedDischargeW
        self.trips = trips
        self.latched = latched
        self.bmsOnline = bmsOnline
        self.inverterOnline = inverterOnline
    }

    enum CodingKeys: String, CodingKey {
        case id, state, trips, latched
        case socPercent = "soc_percent", sohPercent = "soh_percent", powerW = "power_w", setpointW = "setpoint_w"
        case voltageV = "voltage_v", currentA = "current_a", temperatureMinC = "temperature_min_c"
        case temperatureMaxC = "temperature_max_c", allowedChargeW = "allowed_charge_w"
        case allowedDischargeW = "allowed_discharge_w", bmsOnline = "bms_online", inverterOnline = "inverter_online"
    }
}

/// Charge and discharge headroom of one unit, so an aggregator can offer the storage.
public struct UnitAvailability: Codable, Sendable, Equatable {
    public var id: String
    public var chargePowerW: Double
    public var dischargePowerW: Double
    public var chargeEnergyWh: Double
    public var dischargeEnergyWh: Double

    public init(id: String, chargePowerW: Double, dischargePowerW: Double, chargeEnergyWh: Double, dischargeEnergyWh: Double) {
        self.id = id
        self.chargePowerW = chargePowerW
        self.dischargePowerW = dischargePowerW
        self.chargeEnergyWh = chargeEnergyWh
        self.dischargeEnergyWh = dischargeEnergyWh
    }

    enum CodingKeys: String, CodingKey {
        case id
        case chargePowerW = "charge_power_w", dischargePowerW = "discharge_power_w"
        case chargeEnergyWh = "charge_energy_wh", dischargeEnergyWh = "discharge_energy_wh"
    }
}

/// The site at its grid connection point, in a telemetry record (a site with a meter).
public struct SiteTelemetry: Codable, Sendable, Equatable {
    /// Grid power, W, + = import; nil while the meter is stale.
    public var gridPowerW: Double?
    /// `import` or `export` while that grid limit decides the batteries' power; nil otherwise.
    public var bindingLimit: String?
    /// What the units cannot deliver of the site's request, W (≥ 0).
    public var shortfallW: Double
    public var meterStale: Bool

    public init(gridPowerW: Double?, bindingLimit: String?, shortfallW: Double, meterStale: Bool) {
        self.gridPowerW = gridPowerW
        self.bindingLimit = bindingLimit
        self.shortfallW = shortfallW
        self.meterStale = meterStale
    }

    enum CodingKeys: String, CodingKey {
        case gridPowerW = "grid_power_w", bindingLimit = "binding_limit", shortfallW = "shortfall_w", meterStale = "meter_stale"
    }

    /// Absent values are written as null, not left out: a reader sees "stale", not "missing".
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(gridPowerW, forKey: .gridPowerW)
        try c.encode(bindingLimit, forKey: .bindingLimit)
        try c.encode(shortfallW, forKey: .shortfallW)
        try c.encode(meterStale, forKey: .meterStale)
    }
}

/// What the site as a whole can still offer from where it is now, in an availability record.
public struct SiteAvailability: Codable, Sendable, Equatable {
    /// More discharge (less import) the site can give, W (≥ 0), inside the grid's export limit and
    /// outside the application's SOC reserve.
    public var upW: Double
    /// More charge the site can take, W (≥ 0), inside the grid's import limit.
    public var downW: Double

    public init(upW: Double, downW: Double) {
        self.upW = upW
        self.downW = downW
    }

    enum CodingKeys: String, CodingKey { case upW = "up_w", downW = "down_w" }
}

/// What a record carries.
public enum RecordBody: Sendable, Equatable {
    case telemetry(frequencyHz: Double?, cycleP99Us: Int64, overruns: UInt64, units: [UnitTelemetry], site: SiteTelemetry? = nil)
    case availability(units: [UnitAvailability], site: SiteAvailability? = nil)
    case energyBlock(unit: String, startUnix: Int64, lengthS: Int64, chargedKWh: Double, dischargedKWh: Double,
                     coveredS: Double)
    /// Energy through the grid connection point over one block (a site with a meter).
    case gridEnergyBlock(startUnix: Int64, lengthS: Int64, importedKWh: Double, exportedKWh: Double, coveredS: Double)
    case event(unit: String?, kind: String, code: String?, message: String)
    case spoolDrop(count: UInt64)
    /// One frequency event assessed (`frequency_event`): its fields ride in the record itself.
    case frequencyEvent(FrequencyEventRecord)
    /// One IEEE 2030.5 control taken, refused or ended (`utility_control`). It travels as an `event`
    /// of unit `site` and kind `utility_control`, without a code, with `message` its sentence and its
    /// fields in a `utility_control` object beside: an aggregator that does not know the kind stores it
    /// as the event it reads (docs/uplink.md, "Record kinds added later").
    case utilityControl(UtilityControlRecord, message: String)
    /// One block of the block schedule closed (`schedule_block`, issue 60). It travels as an `event`
    /// of unit `site` and kind `schedule_block`, without a code, with `message` its sentence and its
    /// fields in a `schedule_block` object beside, as `utilityControl` does (docs/uplink.md).
    case scheduleBlock(ScheduleBlockRecord)
}

/// One record of the uplink.
public struct UplinkRecord: Sendable, Equatable {
    public var seq: UInt64
    /// Unix time, seconds.
    public var time: Double
    public var body: RecordBody
    /// The run mode of the site that made the record: `simulation`, `hil` or `hardware`. Energy
    /// from a record whose mode is not `hardware` is not real energy and must not be settled.
    /// Absent in records spooled before the field existed.
    public var mode: String?
    /// What was wrong with the clock: `unsynchronized`, `stepped` (energy blocks); nil when nothing.
    public var clock: [String]?

    public init(seq: UInt64, time: Double, body: RecordBody, mode: String? = nil, clock: [String]? = nil) {
        self.seq = seq
        self.time = time
        self.body = body
        self.mode = mode
        self.clock = clock?.isEmpty == true ? nil : clock
    }
}

extension UplinkRecord: Codable {
    enum Keys: String, CodingKey {
        case seq, time, type, frequencyHz = "frequency_hz", cycleP99Us = "cycle_p99_us", overruns, units, unit
        case startUnix = "start_unix", lengthS = "length_s", chargedKWh = "charged_kwh", dischargedKWh = "discharged_kwh"
        case coveredS = "covered_s", kind, code, message, count, mode, site, clock
        case importedKWh = "imported_kwh", exportedKWh = "exported_kwh"
        case utilityControl = "utility_control", scheduleBlock = "schedule_block"
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: Keys.self)
        try c.encode(seq, forKey: .seq)
        try c.encode(time, forKey: .time)
        try c.encodeIfPresent(mode, forKey: .mode)
        try c.encodeIfPresent(clock, forKey: .clock)
        switch body {
        case .telemetry(let f, let p99, let overruns, let units, let site):
            try c.encode("telemetry", forKey: .type)
            try c.encodeIfPresent(f, forKey: .frequencyHz)
            try c.encode(p99, forKey: .cycleP99Us)
            try c.encode(overruns, forKey: .overruns)
            try c.encode(units, forKey: .units)
            try c.encodeIfPresent(site, forKey: .site)
        case .availability(let units, let site):
            try c.encode("availability", forKey: .type)
            try c.encode(units, forKey: .units)
            try c.encodeIfPresent(site, forKey: .site)
        case .energyBlock(let unit, let start, let length, let charged, let discharged, let covered):
            try c.encode("energy_block", forKey: .type)
            try c.encode(unit, forKey: .unit)
            try c.encode(start, forKey: .startUnix)
            try c.encode(length, forKey: .lengthS)
            try c.encode(charged, forKey: .chargedKWh)
            try c.encode(discharged, forKey: .dischargedKWh)
            try c.encode(covered, forKey: .coveredS)
        case .gridEnergyBlock(let start, let length, let imported, let exported, let covered):
            try c.encode("grid_energy_block", forKey: .type)
            try c.encode(start, forKey: .startUnix)
            try c.encode(length, forKey: .lengthS)
            try c.encode(imported, forKey: .importedKWh)
            try c.encode(exported, forKey: .exportedKWh)
            try c.encode(covered, forKey: .coveredS)
        case .event(let unit, let kind, let code, let message):
            try c.encode("event", forKey: .type)
            try c.encodeIfPresent(unit, forKey: .unit)
            try c.encode(kind, forKey: .kind)
            try c.encodeIfPresent(code, forKey: .code)
            try c.encode(message, forKey: .message)
        case .spoolDrop(let count):
            try c.encode("spool_drop", forKey: .type)
            try c.encode(count, forKey: .count)
        case .frequencyEvent(let event):
            try c.encode("frequency_event", forKey: .type)
            try event.encode(to: encoder)
        case .scheduleBlock(let block):
            try c.encode("event", forKey: .type)
            try c.encode("site", forKey: .unit)
            try c.encode(ScheduleBlockRecord.kind, forKey: .kind)
            try c.encode(block.sentence, forKey: .message)
            try c.encode(block, forKey: .scheduleBlock)
        case .utilityControl(let control, let message):
            try c.encode("event", forKey: .type)
            try c.encode("site", forKey: .unit)
            try c.encode(UtilityControlRecord.kind, forKey: .kind)
            try c.encode(message, forKey: .message)
            try c.encode(control, forKey: .utilityControl)
        }
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: Keys.self)
        seq = try c.decode(UInt64.self, forKey: .seq)
        time = try c.decode(Double.self, forKey: .time)
        mode = try c.decodeIfPresent(String.self, forKey: .mode)
        clock = try c.decodeIfPresent([String].self, forKey: .clock)
        switch try c.decode(String.self, forKey: .type) {
        case "telemetry":
            body = .telemetry(frequencyHz: try c.decodeIfPresent(Double.self, forKey: .frequencyHz),
                              cycleP99Us: try c.decode(Int64.self, forKey: .cycleP99Us),
                              overruns: try c.decode(UInt64.self, forKey: .overruns),
                              units: try c.decode([UnitTelemetry].self, forKey: .units),
                              site: try c.decodeIfPresent(SiteTelemetry.self, forKey: .site))
        case "availability":
            body = .availability(units: try c.decode([UnitAvailability].self, forKey: .units),
                                 site: try c.decodeIfPresent(SiteAvailability.self, forKey: .site))
        case "energy_block":
            body = .energyBlock(unit: try c.decode(String.self, forKey: .unit), startUnix: try c.decode(Int64.self, forKey: .startUnix),
                                lengthS: try c.decode(Int64.self, forKey: .lengthS),
                                chargedKWh: try c.decode(Double.self, forKey: .chargedKWh),
                                dischargedKWh: try c.decode(Double.self, forKey: .dischargedKWh),
                                coveredS: try c.decode(Double.self, forKey: .coveredS))
        case "grid_energy_block":
            body = .gridEnergyBlock(startUnix: try c.decode(Int64.self, forKey: .startUnix), lengthS: try c.decode(Int64.self, forKey: .lengthS),
                                    importedKWh: try c.decode(Double.self, forKey: .importedKWh),
                                    exportedKWh: try c.decode(Double.self, forKey: .exportedKWh),
                                    coveredS: try c.decode(Double.self, forKey: .coveredS))
        case "event":
            let unit = try c.decodeIfPresent(String.self, forKey: .unit), kind = try c.decode(String.self, forKey: .kind)
            let code = try c.decodeIfPresent(String.self, forKey: .code), message = try c.decode(String.self, forKey: .message)
            // A utility control: its kind, unit `site` or none, no code, and its object (else the plain
            // event it also is, its unit and code checked as any event's; BatchReader reads it the same).
            if kind == UtilityControlRecord.kind, unit.map({ $0 == "site" }) ?? true, code == nil,
               let control = try c.decodeIfPresent(UtilityControlRecord.self, forKey: .utilityControl) {
                body = .utilityControl(control, message: message)
            } else if kind == ScheduleBlockRecord.kind, unit.map({ $0 == "site" }) ?? true, code == nil,
                      let block = try c.decodeIfPresent(ScheduleBlockRecord.self, forKey: .scheduleBlock) {
                body = .scheduleBlock(block)
            } else {
                body = .event(unit: unit, kind: kind, code: code, message: message)
            }
        case "spool_drop":
            body = .spoolDrop(count: try c.decode(UInt64.self, forKey: .count))
        case "frequency_event":
            body = .frequencyEvent(try FrequencyEventRecord(from: decoder))
        case let other:
            throw DecodingError.dataCorruptedError(forKey: .type, in: c, debugDescription: "unknown record type \(other)")
        }
    }
}

/// A command from the aggregator.
public struct DispatchCommand: Codable, Sendable, Equatable {
    public var id: String
    /// `power`, `mode`, `emergency_stop`, `schedule`, `prices` or `forecast`.
    public var kind: String
    /// A unit id; absent = every unit of the site.
    public var unit: String?
    /// For `power`: kW, + = discharge (per unit; a site-wide power is split by rating).
    public var powerKW: Double?
    /// For `power` only, optional: reactive power, kvar, + = injecting (over-excited), − = absorbing,
    /// within the unit's apparent rating (or the site's sum); a site-wide value is split by apparent
    /// rating. Absent: the dispatch asks for no Q. It ends with the command.
    public var reactiveKVar: Double?
    /// For `mode`: `auto` or `standby`.
    public var mode: String?
    /// Unix time after which the command no longer applies (a `schedule`: after which it is not
    /// taken; the schedule itself runs to its last block).
    public var expiresUnix: Double
    /// For `schedule`: the schedule, as `bessctl schedule load` reads it from a file; acted on once per
    /// id and revision.
    public var schedule: ScheduleDocument?
    /// For `prices`: import and export prices per block start, for the optimiser (they win over its tariff).
    public var prices: [BlockPrice]?
    /// For `forecast`: load and PV per block start, for the optimiser (its forecast file wins over them).
    public var forecast: [BlockForecast]?

    public init(id: String, kind: String, unit: String? = nil, powerKW: Double? = nil, reactiveKVar: Double? = nil,
                mode: String? = nil, expiresUnix: Double, schedule: ScheduleDocument? = nil, prices: [BlockPrice]? = nil,
                forecast: [BlockForecast]? = nil) {
        self.schedule = schedule
        self.prices = prices
        self.forecast = forecast
        self.id = id
        self.kind = kind
        self.unit = unit
        self.powerKW = powerKW
        self.reactiveKVar = reactiveKVar
        self.mode = mode
        self.expiresUnix = expiresUnix
    }

    enum CodingKeys: String, CodingKey {
        case id, kind, unit, mode, schedule, prices, forecast, powerKW = "power_kw", reactiveKVar = "reactive_kvar", expiresUnix = "expires_unix"
    }
}

/// One block's prices in a `prices` command: `{"start" (RFC 3339), "import_per_kwh", "export_per_kwh"}`.
public struct BlockPrice: Codable, Sendable, Equatable {
    public var start: String
    public var importPerKWh: Double
    public var exportPerKWh: Double

    public init(start: String, importPerKWh: Double, exportPerKWh: Double) {
        self.start = start
        self.importPerKWh = importPerKWh
        self.exportPerKWh = exportPerKWh
    }

    enum CodingKeys: String, CodingKey { case start, importPerKWh = "import_per_kwh", exportPerKWh = "export_per_kwh" }
}

/// One block's forecast in a `forecast` command: `{"start" (RFC 3339), "load_kw", "pv_kw"}`.
public struct BlockForecast: Codable, Sendable, Equatable {
    public var start: String
    public var loadKW: Double
    public var pvKW: Double

    public init(start: String, loadKW: Double, pvKW: Double) {
        self.start = start
        self.loadKW = loadKW
        self.pvKW = pvKW
    }

    enum CodingKeys: String, CodingKey { case start, loadKW = "load_kw", pvKW = "pv_kw" }
}

/// What bessd answers about a command.
public struct CommandAck: Codable, Sendable, Equatable {
    public var id: String
    public var accepted: Bool
    public var reason: String?
    public init(id: String, accepted: Bool, reason: String? = nil) {
        self.id = id
        self.accepted = accepted
        self.reason = reason
    }
}

/// Checks a dispatch command against the site: hostile or malformed commands are refused with a reason
/// (and never reach the control law). `ratings` maps unit id → rated kW (`max_power_kw`); `apparent`
/// maps unit id → apparent rating, kVA, where `max_apparent_power_kva` sets one (else the unit's kW).
public enum DispatchValidator {
    /// Longest a command may stay in force.
    public static let maxDuration: Duration = .seconds(24 * 3600)

    /// The reason a command is refused, as its answer says it; nil when it may be applied.
    public static func validate(_ c: DispatchCommand, ratings: [String: Double], apparent: [String: Double] = [:],
                                now: Double) -> String? {
        refusal(c, ratings: ratings, apparent: apparent, now: now)?.reason
    }

    /// Why a command is refused, coded: `DISPATCH_ID_INVALID` for an id outside
    /// `IdentifierRule.commandIDText`, `DISPATCH_REFUSED` for the rest. The peer's text in the
    /// message is quoted (`PeerText`).
    public static func refusal(_ c: DispatchCommand, ratings: [String: Double], apparent: [String: Double] = [:],
                               now: Double) -> DispatchRefusal? {
        guard IdentifierRule.acceptsCommandID(c.id) else {
            return DispatchRefusal(.idInvalid, message: "id must be \(IdentifierRule.commandIDText) (got \(PeerText.quoted(c.id)))")
        }
        let refused = { (why: String) in DispatchRefusal(.refused, message: why) }
        guard c.expiresUnix.isFinite, c.expiresUnix > now else { return refused("already expired (expires_unix \(c.expiresUnix))") }
        guard c.expiresUnix - now <= Double(maxDuration.components.seconds) else { return refused("expires more than 24 h ahead") }
        if let unit = c.unit, ratings[unit] == nil { return refused("unknown unit \(PeerText.quoted(unit))") }
        guard (c.kind == "schedule") == (c.schedule != nil) else {
            return refused(c.kind == "schedule" ? "a schedule command carries its schedule" : "schedule is taken only on a schedule command")
        }
        guard (c.kind == "prices") == (c.prices != nil), (c.kind == "forecast") == (c.forecast != nil) else {
            return refused("prices and forecast are taken only on a command of their kind, which carries them")
        }
        switch c.kind {
        case "power":
            guard let kw = c.powerKW, kw.isFinite else { return refused("power_kw must be a finite number") }
            let limit = c.unit.map { ratings[$0] ?? 0 } ?? ratings.values.reduce(0, +)
            guard abs(kw) <= limit else { return refused("power_kw \(kw) beyond the rating ±\(limit) kW") }
            if let kvar = c.reactiveKVar {
                guard kvar.isFinite else { return refused("reactive_kvar must be a finite number") }
                // The configured rating only: the cycle holds Q inside what the inverters say they can.
                let kva = { (unit: String) in apparent[unit] ?? ratings[unit] ?? 0 }
                let bound = c.unit.map(kva) ?? ratings.keys.reduce(0) { $0 + kva($1) }
                guard abs(kvar) <= bound else { return refused("reactive_kvar \(kvar) beyond the apparent rating ±\(bound) kVA") }
            }
        case "schedule", "prices", "forecast":
            guard c.unit == nil, c.powerKW == nil, c.reactiveKVar == nil, c.mode == nil else {
                return refused("a \(c.kind) command is for the site: no unit, power_kw, reactive_kvar or mode")
            }
            if let why = PlanInputsValidator.refusal(prices: c.prices, forecast: c.forecast) { return refused(why) }
        case "mode", "emergency_stop":
            if c.kind == "mode", c.mode != "auto", c.mode != "standby" { return refused("mode must be auto or standby") }
            guard c.reactiveKVar == nil else { return refused("reactive_kvar is taken only on a power dispatch") }
        default:
            return refused("unknown kind \(PeerText.quoted(c.kind))")
        }
        return nil
    }
}

/// A command the site refuses (`DispatchValidator.refusal`): `CODE: message`.
public typealias DispatchRefusal = CodedError<DispatchRefusalCode>

/// The stable code of a `DispatchRefusal`: a struct over a private enum, matched by value.
public struct DispatchRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable { case idInvalid, refused }
    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `DISPATCH_ID_INVALID`: the id is not `IdentifierRule.commandIDText`.
    public static let idInvalid = Self(.idInvalid)
    /// `DISPATCH_REFUSED`: expired, too long, an unknown unit or kind, a power beyond the rating, a
    /// `reactive_kvar` beyond the apparent rating or on another kind than `power`.
    public static let refused = Self(.refused)

    public var description: String {
        switch value {
        case .idInvalid: "DISPATCH_ID_INVALID"
        case .refused: "DISPATCH_REFUSED"
        }
    }
}

extension CodedError where StableCode == DispatchRefusalCode {
    /// What the command's answer says: the id's refusal with its code first; the others as they
    /// have always read.
    public var reason: String { code == .idInvalid ? description : message }
}

/// A batch as sent: `POST /v1/sites/{site}/records`.
public struct RecordBatch: Codable, Sendable {
    public var protocolVersion: Int
    public var site: String
    public var records: [UplinkRecord]
    /// Answers to commands received since the last batch.
    public var acks: [CommandAck]

    public init(site: String, records: [UplinkRecord], acks: [CommandAck]) {
        protocolVersion = UplinkProtocol.version
        self.site = site
        self.records = records
        self.acks = acks
    }

    enum CodingKeys: String, CodingKey { case site, records, acks, protocolVersion = "protocol_version" }
}

/// The aggregator's answer to a batch.
public struct BatchResponse: Codable, Sendable {
    /// The highest seq the aggregator holds for the site (every record up to it may be forgotten).
    public var ackedSeq: UInt64
    public var commands: [DispatchCommand]

    public init(ackedSeq: UInt64, commands: [DispatchCommand]) {
        self.ackedSeq = ackedSeq
        self.commands = commands
    }

    enum CodingKeys: String, CodingKey { case commands, ackedSeq = "acked_seq" }
}

/// Checks the optimiser's inputs an aggregator pushes (`prices`, `forecast`): at most
/// `maximumEntries`, each start RFC 3339, each number finite and in range, load and PV not negative.
public enum PlanInputsValidator {
    public static let maximumEntries = 2_000
    public static let maximumMagnitude = 1e6

    /// Why the entries are refused; nil when they may be taken.
    public static func refusal(prices: [BlockPrice]?, forecast: [BlockForecast]?) -> String? {
        let count = (prices?.count ?? 0) + (forecast?.count ?? 0)
        if prices != nil || forecast != nil, !(1...maximumEntries).contains(count) {
            return "\(prices != nil ? "prices" : "forecast") must hold 1 to \(maximumEntries) blocks (got \(count))"
        }
        for (k, p) in (prices ?? []).enumerated() {
            guard RFC3339.unixSeconds(p.start) != nil else { return "prices[\(k)].start \(PeerText.quoted(p.start)) is not RFC 3339" }
            guard p.importPerKWh.isFinite, p.exportPerKWh.isFinite, abs(p.importPerKWh) <= maximumMagnitude,
                  abs(p.exportPerKWh) <= maximumMagnitude else { return "prices[\(k)]: a price is not a finite number within ±10^6" }
        }
        for (k, f) in (forecast ?? []).enumerated() {
            guard RFC3339.unixSeconds(f.start) != nil else { return "forecast[\(k)].start \(PeerText.quoted(f.start)) is not RFC 3339" }
            guard f.loadKW.isFinite, f.pvKW.isFinite, f.loadKW >= 0, f.pvKW >= 0, f.loadKW <= maximumMagnitude, f.pvKW <= maximumMagnitude else {
                return "forecast[\(k)]: load_kw and pv_kw must be finite, 0 to 10^6"
            }
        }
        return nil
    }
}
