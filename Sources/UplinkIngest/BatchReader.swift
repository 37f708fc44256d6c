import BessBase
import Uplink
import ControlCore

/// Reads a record batch straight from its bytes, noting where each record and each telemetry unit
/// starts and ends, without Codable's generic machinery (which was a third of an aggregator's CPU).
///
/// It takes a strict subset of what `JSONDecoder` takes, and for that subset must give exactly what
/// `JSONDecoder` gives (ReceivedBatchTests compares the two on bessd's batches and on thousands of
/// mutated ones). Anything outside the subset — a key escaped or written twice in an object, an
/// escaped surrogate, an integer written as `1.0` or `1e3`, a field of the wrong type even where the
/// record's type does not use it, nesting deeper than 64 — makes it answer nil, and the caller asks
/// `JSONDecoder`, which decides.
struct BatchReader {
    /// The cursor over the batch's bytes: ControlCore's `JSONLexer`, as under the well-known reader.
    var lexer: JSONLexer
    var bytes: UnsafeBufferPointer<UInt8> { lexer.bytes }
    var i: Int {
        get { lexer.index }
        set { lexer.index = newValue }
    }
    /// Keys of the objects being read, innermost last (reused: no allocation once warm).
    var keys: [Range<Int>] = []

    static let maximumDepth = 64
    /// Keys in one object (a batch's objects have at most 25: a frequency event's record).
    static let maximumKeys = 64

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        lexer = JSONLexer(bytes)
        keys.reserveCapacity(64)
    }

    struct Output {
        var batch: RecordBatch
        var records: [Range<Int>]
        var units: [[Range<Int>]]
    }

    mutating func batch() -> Output? {
        var version: Int64?, site: String?, records: [UplinkRecord]?, acks: [CommandAck]?
        var recordSpans: [Range<Int>] = [], unitSpans: [[Range<Int>]] = []
        space()
        let ok = object(depth: 0) { r, key in
            if r.key(key, is: "protocol_version") { return r.read(&version) { $0.int64() } }
            if r.key(key, is: "site") { return r.read(&site) { $0.string() } }
            if r.key(key, is: "records") {
                records = r.list(depth: 1, spans: &recordSpans) { r in
                    guard let (record, units) = r.record(depth: 2) else { return nil }
                    unitSpans.append(units)
                    return record
                }
                return records != nil
            }
            if r.key(key, is: "acks") {
                acks = r.list(depth: 1) { $0.ack(depth: 2) }
                return acks != nil
            }
            return r.skip(depth: 1)
        }
        space()
        guard ok, i == bytes.count, let version, let site, let records, let acks else { return nil }
        var batch = RecordBatch(site: site, records: records, acks: acks)
        batch.protocolVersion = Int(version)
        return Output(batch: batch, records: recordSpans, units: unitSpans)
    }

    /// One record, and the spans of a telemetry record's units.
    mutating func record(depth: Int) -> (UplinkRecord, [Range<Int>])? {
        var seq: UInt64?, time: Double?, type: String?, mode: String??, clock: [String]??
        var frequency: Double??, p99: Int64?, overruns: UInt64?, unit: String??, start: Int64?, length: Int64?
        var charged: Double?, discharged: Double?, covered: Double?, imported: Double?, exported: Double?
        var kind: String?, code: String??, message: String?, count: UInt64?
        var event = FrequencyEventFields()
        // Which units and site a record carries depends on its type, which may come after them.
        var unitsAt: Int?, siteAt: Int?, utilityControlAt: Int?, scheduleBlockAt: Int?
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "seq") { return r.read(&seq) { $0.uint64() } }
            if r.key(key, is: "time") { return r.read(&time) { $0.double() } }
            if r.key(key, is: "type") { return r.read(&type) { $0.string() } }
            if r.key(key, is: "mode") { return r.readOrNull(&mode) { $0.string() } }
            if r.key(key, is: "clock") { return r.readOrNull(&clock) { $0.strings() } }
            if r.key(key, is: "frequency_hz") { return r.readOrNull(&frequency) { $0.double() } }
            if r.key(key, is: "cycle_p99_us") { return r.read(&p99) { $0.int64() } }
            if r.key(key, is: "overruns") { return r.read(&overruns) { $0.uint64() } }
            if r.key(key, is: "units") {
                unitsAt = r.i
                return r.skip(depth: depth + 1)
            }
            if r.key(key, is: "site") {
                siteAt = r.i
                return r.skip(depth: depth + 1)
            }
            if r.key(key, is: "utility_control") {
                utilityControlAt = r.i
                return r.skip(depth: depth + 1)
            }
            if r.key(key, is: "schedule_block") {
                scheduleBlockAt = r.i
                return r.skip(depth: depth + 1)
            }
            if r.key(key, is: "unit") { return r.readOrNull(&unit) { $0.string() } }
            if r.key(key, is: "start_unix") { return r.read(&start) { $0.int64() } }
            if r.key(key, is: "length_s") { return r.read(&length) { $0.int64() } }
            if r.key(key, is: "charged_kwh") { return r.read(&charged) { $0.double() } }
            if r.key(key, is: "discharged_kwh") { return r.read(&discharged) { $0.double() } }
            if r.key(key, is: "covered_s") { return r.read(&covered) { $0.double() } }
            if r.key(key, is: "imported_kwh") { return r.read(&imported) { $0.double() } }
            if r.key(key, is: "exported_kwh") { return r.read(&exported) { $0.double() } }
            if r.key(key, is: "kind") { return r.read(&kind) { $0.string() } }
            if r.key(key, is: "code") { return r.readOrNull(&code) { $0.string() } }
            if r.key(key, is: "message") { return r.read(&message) { $0.string() } }
            if r.key(key, is: "count") { return r.read(&count) { $0.uint64() } }
            if let read = event.read(key, from: &r) { return read }
            return r.skip(depth: depth + 1)
        }
        guard ok, let seq, let time, let type else { return nil }
        let end = i
        defer { i = end }
        var unitSpans: [Range<Int>] = []
        let body: RecordBody
        switch type {
        case "telemetry":
            guard let p99, let overruns, let unitsAt,
                  let (units, site) = unitsAndSite(
                      at: unitsAt, siteAt,
                      units: { $0.list(depth: depth + 1, spans: &unitSpans) { $0.unitTelemetry(depth: depth + 2) } },
                      site: { $0.siteTelemetry(depth: depth + 1) })
            else { return nil }
            body = .telemetry(frequencyHz: frequency ?? nil, cycleP99Us: p99, overruns: overruns, units: units, site: site)
        case "availability":
            guard let unitsAt,
                  let (units, site) = unitsAndSite(
                      at: unitsAt, siteAt,
                      units: { $0.list(depth: depth + 1) { $0.unitAvailability(depth: depth + 2) } },
                      site: { $0.siteAvailability(depth: depth + 1) })
            else { return nil }
            body = .availability(units: units, site: site)
        case "energy_block":
            guard let unit = unit ?? nil, let start, let length, let charged, let discharged, let covered else { return nil }
            body = .energyBlock(unit: unit, startUnix: start, lengthS: length, chargedKWh: charged, dischargedKWh: discharged,
                                coveredS: covered)
        case "grid_energy_block":
            guard let start, let length, let imported, let exported, let covered else { return nil }
            body = .gridEnergyBlock(startUnix: start, lengthS: length, importedKWh: imported, exportedKWh: exported, coveredS: covered)
        case "event":
            guard let kind, let message else { return nil }
            // A utility control when its kind says so, its unit is the site (or absent), it has no
            // code, and its object is there and not null; else the plain event, its unit and code checked.
            if kind == UtilityControlRecord.kind, (unit ?? nil).map({ $0 == "site" }) ?? true, (code ?? nil) == nil, let utilityControlAt {
                i = utilityControlAt
                guard let read = orNull({ $0.utilityControl(depth: depth + 1) }) else { return nil }
                if let read {
                    body = .utilityControl(read, message: message)
                    break
                }
            }
            if kind == ScheduleBlockRecord.kind, (unit ?? nil).map({ $0 == "site" }) ?? true, (code ?? nil) == nil, let scheduleBlockAt {
                i = scheduleBlockAt
                guard let read = orNull({ ScheduleBlockFields.read(&$0, depth: depth + 1) }) else { return nil }
                if let read {
                    body = .scheduleBlock(read)
                    break
                }
            }
            body = .event(unit: unit ?? nil, kind: kind, code: code ?? nil, message: message)
        case "spool_drop":
            guard let count else { return nil }
            body = .spoolDrop(count: count)
        case "frequency_event":
            guard let read = event.record(unitsAt: unitsAt, depth: depth, from: &self) else { return nil }
            body = .frequencyEvent(read)
        default:
            return nil
        }
        var record = UplinkRecord(seq: seq, time: time, body: body, mode: mode ?? nil)
        // As decoded: an empty list stays an empty list (the initializer would make it nil).
        record.clock = clock ?? nil
        return (record, unitSpans)
    }

    /// A record's units and site, read from where its key scan found them (a record's type, which says
    /// how to read them, may come after them): the list at `unitsAt`, and the site at `siteAt`, nil
    /// when absent or null.
    mutating func unitsAndSite<Unit, Site>(
        at unitsAt: Int, _ siteAt: Int?, units: (inout BatchReader) -> [Unit]?, site: (inout BatchReader) -> Site?
    ) -> (units: [Unit], site: Site?)? {
        i = unitsAt
        guard let list = units(&self) else { return nil }
        guard let siteAt else { return (list, nil) }
        i = siteAt
        guard let value = orNull(site) else { return nil }
        return (list, value)
    }

    mutating func unitTelemetry(depth: Int) -> UnitTelemetry? {
        var id: String?, state: String?, setpoint: Double?, charge: Double?, discharge: Double?
        var soc: Double??, soh: Double??, power: Double??, voltage: Double??, current: Double??, low: Double??, high: Double??
        var trips: [String]?, latched: [String]?, bms: Bool?, inverter: Bool?
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "id") { return r.read(&id) { $0.string() } }
            if r.key(key, is: "state") { return r.read(&state) { $0.string() } }
            if r.key(key, is: "soc_percent") { return r.readOrNull(&soc) { $0.double() } }
            if r.key(key, is: "soh_percent") { return r.readOrNull(&soh) { $0.double() } }
            if r.key(key, is: "power_w") { return r.readOrNull(&power) { $0.double() } }
            if r.key(key, is: "setpoint_w") { return r.read(&setpoint) { $0.double() } }
            if r.key(key, is: "voltage_v") { return r.readOrNull(&voltage) { $0.double() } }
            if r.key(key, is: "current_a") { return r.readOrNull(&current) { $0.double() } }
            if r.key(key, is: "temperature_min_c") { return r.readOrNull(&low) { $0.double() } }
            if r.key(key, is: "temperature_max_c") { return r.readOrNull(&high) { $0.double() } }
            if r.key(key, is: "allowed_charge_w") { return r.read(&charge) { $0.double() } }
            if r.key(key, is: "allowed_discharge_w") { return r.read(&discharge) { $0.double() } }
            if r.key(key, is: "trips") { return r.read(&trips) { $0.strings() } }
            if r.key(key, is: "latched") { return r.read(&latched) { $0.strings() } }
            if r.key(key, is: "bms_online") { return r.read(&bms) { $0.bool() } }
            if r.key(key, is: "inverter_online") { return r.read(&inverter) { $0.bool() } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let id, let state, let setpoint, let charge, let discharge, let trips, let latched, let bms, let inverter
        else { return nil }
        return UnitTelemetry(id: id, state: state, socPercent: soc ?? nil, sohPercent: soh ?? nil, powerW: power ?? nil,
                             setpointW: setpoint, voltageV: voltage ?? nil, currentA: current ?? nil, temperatureMinC: low ?? nil,
                             temperatureMaxC: high ?? nil, allowedChargeW: charge, allowedDischargeW: discharge, trips: trips,
                             latched: latched, bmsOnline: bms, inverterOnline: inverter)
    }

    mutating func unitAvailability(depth: Int) -> UnitAvailability? {
        var id: String?, chargePower: Double?, dischargePower: Double?, chargeEnergy: Double?, dischargeEnergy: Double?
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "id") { return r.read(&id) { $0.string() } }
            if r.key(key, is: "charge_power_w") { return r.read(&chargePower) { $0.double() } }
            if r.key(key, is: "discharge_power_w") { return r.read(&dischargePower) { $0.double() } }
            if r.key(key, is: "charge_energy_wh") { return r.read(&chargeEnergy) { $0.double() } }
            if r.key(key, is: "discharge_energy_wh") { return r.read(&dischargeEnergy) { $0.double() } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let id, let chargePower, let dischargePower, let chargeEnergy, let dischargeEnergy else { return nil }
        return UnitAvailability(id: id, chargePowerW: chargePower, dischargePowerW: dischargePower, chargeEnergyWh: chargeEnergy,
                                dischargeEnergyWh: dischargeEnergy)
    }

    mutating func siteTelemetry(depth: Int) -> SiteTelemetry? {
        var grid: Double??, binding: String??, shortfall: Double?, stale: Bool?
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "grid_power_w") { return r.readOrNull(&grid) { $0.double() } }
            if r.key(key, is: "binding_limit") { return r.readOrNull(&binding) { $0.string() } }
            if r.key(key, is: "shortfall_w") { return r.read(&shortfall) { $0.double() } }
            if r.key(key, is: "meter_stale") { return r.read(&stale) { $0.bool() } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let shortfall, let stale else { return nil }
        return SiteTelemetry(gridPowerW: grid ?? nil, bindingLimit: binding ?? nil, shortfallW: shortfall, meterStale: stale)
    }

    mutating func siteAvailability(depth: Int) -> SiteAvailability? {
        var up: Double?, down: Double?
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "up_w") { return r.read(&up) { $0.double() } }
            if r.key(key, is: "down_w") { return r.read(&down) { $0.double() } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let up, let down else { return nil }
        return SiteAvailability(upW: up, downW: down)
    }

    mutating func ack(depth: Int) -> CommandAck? {
        var id: String?, accepted: Bool?, reason: String??
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "id") { return r.read(&id) { $0.string() } }
            if r.key(key, is: "accepted") { return r.read(&accepted) { $0.bool() } }
            if r.key(key, is: "reason") { return r.readOrNull(&reason) { $0.string() } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let id, let accepted else { return nil }
        return CommandAck(id: id, accepted: accepted, reason: reason ?? nil)
    }

    // MARK: Fields

    /// A field that must be there and not null.
    mutating func read<T>(_ target: inout T?, _ read: (inout BatchReader) -> T?) -> Bool {
        target = read(&self)
        return target != nil
    }

    mutating func strings() -> [String]? { list(depth: 1) { $0.string() } }

    /// An array whose every element `element` reads; nil when one does not.
    mutating func list<Element>(depth: Int, _ element: (inout BatchReader) -> Element?) -> [Element]? {
        var list: [Element] = []
        let ok = array(depth: depth) { r in
            guard let value = element(&r) else { return false }
            list.append(value)
            return true
        }
        return ok ? list : nil
    }

    /// As `list`, noting in `spans` where each element's text starts and ends.
    mutating func list<Element>(depth: Int, spans: inout [Range<Int>], _ element: (inout BatchReader) -> Element?) -> [Element]? {
        list(depth: depth) { r in
            r.space()
            let from = r.i
            guard let value = element(&r) else { return nil }
            spans.append(from..<r.i)
            return value
        }
    }

    /// A field that may be null (or absent): `.some(nil)` for null.
    mutating func readOrNull<T>(_ target: inout T??, _ read: (inout BatchReader) -> T?) -> Bool {
        guard let value = orNull(read) else { return false }
        target = value
        return true
    }

    /// A value or null: `.some(nil)` for null, nil when neither.
    mutating func orNull<T>(_ read: (inout BatchReader) -> T?) -> T?? {
        if literal("null") { return .some(nil) }
        guard let value = read(&self) else { return nil }
        return .some(value)
    }

    // MARK: JSON

    /// An object; `member` gets each key's span, positioned at its value, and must consume the value.
    mutating func object(depth: Int, member: (inout BatchReader, Range<Int>) -> Bool) -> Bool {
        let mark = keys.count
        defer { keys.removeSubrange(mark...) }
        return items(depth: depth, open: UInt8(ascii: "{"), close: UInt8(ascii: "}")) { r in
            guard let key = r.plainKey() else { return false }
            // The check for a repeated key is quadratic: a wide object goes to JSONDecoder (linear).
            guard r.keys.count - mark < Self.maximumKeys else { return false }
            for earlier in r.keys[mark...] where r.same(earlier, key) { return false }
            r.keys.append(key)
            r.space()
            guard r.at(UInt8(ascii: ":")) else { return false }
            r.i += 1
            r.space()
            return member(&r, key)
        }
    }

    /// An array; `element` must consume each element.
    mutating func array(depth: Int, element: (inout BatchReader) -> Bool) -> Bool {
        items(depth: depth, open: UInt8(ascii: "["), close: UInt8(ascii: "]"), item: element)
    }

    /// `open`, items separated by commas, `close`: an object's members or an array's elements.
    /// `item` must consume each.
    private mutating func items(depth: Int, open: UInt8, close: UInt8, item: (inout BatchReader) -> Bool) -> Bool {
        space()
        guard depth < Self.maximumDepth, at(open) else { return false }
        i += 1
        space()
        if at(close) {
            i += 1
            return true
        }
        while true {
            space()
            guard item(&self) else { return false }
            space()
            if at(UInt8(ascii: ",")) {
                i += 1
                continue
            }
            guard at(close) else { return false }
            i += 1
            return true
        }
    }

    /// Any value, checked as strictly as it would be read.
    mutating func skip(depth: Int) -> Bool {
        space()
        guard i < bytes.count, depth < Self.maximumDepth else { return false }
        switch bytes[i] {
        case UInt8(ascii: "{"): return object(depth: depth) { r, _ in r.skip(depth: depth + 1) }
        case UInt8(ascii: "["): return array(depth: depth) { r in r.skip(depth: depth + 1) }
        case UInt8(ascii: "\""): return skipString()
        case UInt8(ascii: "t"): return literal("true")
        case UInt8(ascii: "f"): return literal("false")
        case UInt8(ascii: "n"): return literal("null")
        default: return number() != nil
        }
    }

    // MARK: tokens (ControlCore's JSONLexer)

    /// A key: a string without escapes, printable ASCII or valid UTF-8.
    mutating func plainKey() -> Range<Int>? { lexer.plainKey() }

    /// A string's value. Refuses raw control characters, invalid UTF-8, escaped surrogates (pairs too:
    /// JSONDecoder decides those); on a refusal the cursor stays.
    mutating func string() -> String? {
        guard at(UInt8(ascii: "\"")) else { return nil }
        var probe = lexer
        guard let text = try? probe.string(surrogatePairs: false) else { return nil }
        lexer = probe
        return text
    }

    /// Past a string, checked as `string()` checks it, without making its text.
    mutating func skipString() -> Bool { lexer.skipString(surrogatePairs: false) }

    /// The strict JSON number grammar; the span of the number.
    mutating func number() -> Range<Int>? { try? lexer.number().get() }

    /// A number as a Double, correctly rounded; nil where JSONDecoder must decide.
    mutating func double() -> Double? { lexer.double() }

    /// A plain integer (no fraction, no exponent) that fits an Int64.
    mutating func int64() -> Int64? { lexer.int64() }

    /// A plain non-negative integer that fits a UInt64.
    mutating func uint64() -> UInt64? { lexer.uint64() }

    mutating func bool() -> Bool? { lexer.bool() }

    mutating func literal(_ word: StaticString) -> Bool { lexer.literal(word) }

    mutating func space() { lexer.skipSpace() }

    func at(_ byte: UInt8) -> Bool { lexer.at(byte) }

    func same(_ a: Range<Int>, _ b: Range<Int>) -> Bool { lexer.same(a, b) }

    func key(_ span: Range<Int>, is name: StaticString) -> Bool { lexer.key(span, is: name) }
}
