public import BessBase
import BessSystem
import ControlCore
import Foundation
public import Uplink

/// A record batch as it arrived: decoded, and with each record's JSON text (and each telemetry
/// record's unit texts) cut from the payload. The aggregator stores those texts as the site sent
/// them: it does not encode every record again, and a field a newer gateway added is kept.
///
/// `BatchReader` reads the payload and cuts the texts; it takes only payloads whose object keys are
/// unescaped and distinct within their object, so a text never says other than what was read from
/// it. A payload it does not take is decoded by `JSONDecoder`, which decides, and gets texts made by
/// encoding what was decoded (`cut` is false).
public struct ReceivedBatch: Sendable {
    public var batch: RecordBatch
    /// One per record: the record as sent.
    public var recordTexts: [String]
    /// One per record: its units as sent (telemetry records); empty for other records.
    public var unitTexts: [[String]]
    /// True when `BatchReader` read the payload and the texts were cut from it; false when
    /// `JSONDecoder` decoded it and the texts were made by encoding.
    public var cut: Bool

    /// Decodes a batch; throws what `JSONDecoder` throws for a payload that is not one.
    public init(payload: [UInt8]) throws {
        let read = payload.withUnsafeBufferPointer { bytes -> BatchReader.Output? in
            var reader = BatchReader(bytes)
            return reader.batch()
        }
        if let read {
            batch = read.batch
            recordTexts = read.records.map { String(decoding: payload[$0], as: UTF8.self) }
            unitTexts = read.units.map { spans in spans.map { String(decoding: payload[$0], as: UTF8.self) } }
            cut = true
            return
        }
        batch = try JSONDecoder().decode(RecordBatch.self, from: Data(payload))
        (recordTexts, unitTexts) = try Self.encoded(batch)
        cut = false
    }

    /// A batch that did not come as bytes (tests, the HTTP path's callers): texts by encoding.
    public init(batch: RecordBatch) throws {
        self.batch = batch
        (recordTexts, unitTexts) = try Self.encoded(batch)
        cut = false
    }

    static func encoded(_ batch: RecordBatch) throws -> ([String], [[String]]) {
        let encoder = JSONEncoder()
        var records: [String] = [], units: [[String]] = []
        for record in batch.records {
            records.append(String(decoding: try encoder.encode(record), as: UTF8.self))
            if case .telemetry(_, _, _, let list, _) = record.body {
                units.append(try list.map { String(decoding: try encoder.encode($0), as: UTF8.self) })
            } else {
                units.append([])
            }
        }
        return (records, units)
    }
}

/// Why the aggregator refuses what a gateway sent: a typed code and a sentence. Whatever of the
/// gateway's text the sentence quotes is escaped and cut short (`IngestRules.quoted`), so the
/// sentence is safe in a log line or an answer.
public typealias IngestRefusal = CodedError<IngestRefusalCode>

/// The stable code of an `IngestRefusal` (`IngestRefusal.Code`): a struct over a private enum, so the set
/// is closed and matched by value, never by text. Its `description` is the name the aggregator answers and logs.
public struct IngestRefusalCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case siteIDInvalid, unitIDInvalid, unitStateInvalid, tripCodeInvalid, statusStateInvalid, statusSessionInvalid
        case frequencyEventInvalid, utilityControlInvalid, scheduleBlockInvalid, payloadTooLarge
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SITE_ID_INVALID`: a site id that is not an id bessd's configuration allows.
    public static let siteIDInvalid = Self(.siteIDInvalid)
    /// `UNIT_ID_INVALID`: a record's unit id breaks the id rule.
    public static let unitIDInvalid = Self(.unitIDInvalid)
    /// `UNIT_STATE_INVALID`: a unit state bessd does not have.
    public static let unitStateInvalid = Self(.unitStateInvalid)
    /// `TRIP_CODE_INVALID`: a trip or latch code not in the trip table; an event code neither there
    /// nor an `UplinkEventCode`.
    public static let tripCodeInvalid = Self(.tripCodeInvalid)
    /// `STATUS_STATE_INVALID`: a site status that is neither online nor offline.
    public static let statusStateInvalid = Self(.statusStateInvalid)
    /// `STATUS_SESSION_INVALID`: a status's session id breaks the id rule.
    public static let statusSessionInvalid = Self(.statusSessionInvalid)
    /// `FREQUENCY_EVENT_INVALID`: a frequency event whose direction or cause bessd does not have, or
    /// whose values bessd would not write (an end before its start, a negative shortfall, a score
    /// outside 0…1).
    public static let frequencyEventInvalid = Self(.frequencyEventInvalid)
    /// `UTILITY_CONTROL_INVALID`: a utility control bessd would not write: an outcome it does not have,
    /// an mRID or program over 64 bytes, a reason over 256, a code that is not one, a response status
    /// other than 252 or 253 on a refusal (or any on another outcome), an end before its start, a limit
    /// beyond ±10^12 W.
    public static let utilityControlInvalid = Self(.utilityControlInvalid)
    /// `SCHEDULE_BLOCK_INVALID`: a schedule block bessd would not write: a quantity that is not a finite
    /// number, a length outside 60–3600 s or a start off its boundary, a revision below 0, a `bound_by`
    /// that is not one of bessd's (`ScheduleBinding`), a deviation that is not delivered − droop − target.
    public static let scheduleBlockInvalid = Self(.scheduleBlockInvalid)
    /// `PAYLOAD_TOO_LARGE`: a message or request body over `IngestRules.maxPayloadBytes`, refused
    /// before it is decoded.
    public static let payloadTooLarge = Self(.payloadTooLarge)

    public var description: String {
        switch value {
        case .siteIDInvalid: "SITE_ID_INVALID"
        case .unitIDInvalid: "UNIT_ID_INVALID"
        case .unitStateInvalid: "UNIT_STATE_INVALID"
        case .tripCodeInvalid: "TRIP_CODE_INVALID"
        case .statusStateInvalid: "STATUS_STATE_INVALID"
        case .statusSessionInvalid: "STATUS_SESSION_INVALID"
        case .frequencyEventInvalid: "FREQUENCY_EVENT_INVALID"
        case .utilityControlInvalid: "UTILITY_CONTROL_INVALID"
        case .scheduleBlockInvalid: "SCHEDULE_BLOCK_INVALID"
        case .payloadTooLarge: "PAYLOAD_TOO_LARGE"
        }
    }
}

/// What the aggregator takes from a gateway: everything a gateway sends is untrusted, and what bessd
/// itself would never send is refused at ingest, before it is stored. Site and unit ids keep the rule
/// bessd's configuration holds them to (`IdentifierRule`), a unit's state is one of bessd's unit
/// states, trips and latches and an event's code are names from the trip table, and a site's status
/// is `online` or `offline` with a session id that keeps the id rule (bessd's is a UUID). Free texts
/// (an event's message, an answer's reason) are kept, and escaped wherever they are shown.
public enum IngestRules {
    /// The largest message (MQTT payload) or request body taken: 1 MiB. bessd's batches stay under
    /// `SpoolQueue.batchBytes` (960,000); config/mosquitto's broker refuses a larger packet.
    public static let maxPayloadBytes = 1 << 20

    /// A message's or body's size, checked before anything of it is decoded.
    public static func check(payloadBytes: Int) -> IngestRefusal? {
        payloadBytes <= maxPayloadBytes ? nil
            : IngestRefusal(.payloadTooLarge, message: "\(payloadBytes) bytes, more than \(maxPayloadBytes)")
    }

    /// A site id, from a topic, a URL or a batch.
    public static func check(site: String) -> IngestRefusal? {
        IdentifierRule.accepts(site) ? nil
            : IngestRefusal(.siteIDInvalid, message: "site id \(quoted(site)) is not \(IdentifierRule.text)")
    }

    /// A batch: its site, and its records' unit ids, unit states and codes (that the batch's site is
    /// the one it came for, by topic or URL, is its caller's check).
    public static func check(_ batch: RecordBatch) -> IngestRefusal? {
        if let refusal = check(site: batch.site) { return refusal }
        for record in batch.records {
            switch record.body {
            case .telemetry(_, _, _, let units, _):
                for unit in units {
                    if let refusal = check(unit: unit.id, seq: record.seq) { return refusal }
                    guard UnitState.allCases.contains(where: { $0.description == unit.state }) else {
                        return IngestRefusal(.unitStateInvalid, message: "record \(record.seq): unit \(unit.id)'s state "
                                             + "\(quoted(unit.state)) is not one of \(UnitState.allCases.map(\.description).joined(separator: ", "))")
                    }
                    for code in unit.trips + unit.latched {
                        if let refusal = check(code: code, seq: record.seq) { return refusal }
                    }
                }
            case .availability(let units, _):
                for unit in units {
                    if let refusal = check(unit: unit.id, seq: record.seq) { return refusal }
                }
            case .energyBlock(let unit, _, _, _, _, _):
                if let refusal = check(unit: unit, seq: record.seq) { return refusal }
            case .event(let unit, _, let code, _):
                if let unit, let refusal = check(unit: unit, seq: record.seq) { return refusal }
                if let code, !UplinkEventCode.names.contains(code), let refusal = check(code: code, seq: record.seq) { return refusal }
            case .frequencyEvent(let event):
                if let refusal = check(frequencyEvent: event, seq: record.seq) { return refusal }
            case .utilityControl(let control, _):
                if let refusal = check(utilityControl: control, seq: record.seq) { return refusal }
            case .scheduleBlock(let block):
                if let refusal = check(scheduleBlock: block, seq: record.seq) { return refusal }
            case .gridEnergyBlock, .spoolDrop:
                break
            }
        }
        return nil
    }

    /// A site's birth or Last Will.
    public static func check(status: SiteStatusMessage) -> IngestRefusal? {
        guard status.state == "online" || status.state == "offline" else {
            return IngestRefusal(.statusStateInvalid, message: "status state \(quoted(status.state)) is not online or offline")
        }
        guard IdentifierRule.accepts(status.session) else {
            return IngestRefusal(.statusSessionInvalid, message: "session \(quoted(status.session)) is not \(IdentifierRule.text)")
        }
        return nil
    }

    static func check(unit: String, seq: UInt64) -> IngestRefusal? {
        IdentifierRule.accepts(unit) ? nil
            : IngestRefusal(.unitIDInvalid, message: "record \(seq): unit id \(quoted(unit)) is not \(IdentifierRule.text)")
    }

    /// A frequency event: its direction and cause as bessd names them, its cause code from the trip
    /// table, its cause unit and its units' ids, and values bessd can write (an end not before the
    /// start, shortfalls not negative, a score within 0…1, no more units than an assessment itemises).
    static func check(frequencyEvent e: FrequencyEventRecord, seq: UInt64) -> IngestRefusal? {
        func invalid(_ what: String) -> IngestRefusal { IngestRefusal(.frequencyEventInvalid, message: "record \(seq): \(what)") }
        guard e.end >= e.start else { return invalid("end \(e.end) is before start \(e.start)") }
        if let score = e.score, !(0...1).contains(score) { return invalid("score \(score) is not within 0 to 1") }
        for (name, value) in [("shortfall_w", e.shortfallW), ("max_shortfall_w", e.maxShortfallW)] {
            if let value, value < 0 { return invalid("\(name) \(value) is negative") }
        }
        if let omitted = e.unitsOmitted, omitted < 0 { return invalid("units_omitted \(omitted) is negative") }
        if let units = e.units {
            guard units.count <= FrequencyEventUnits.capacity else {
                return invalid("\(units.count) units itemised, more than \(FrequencyEventUnits.capacity)")
            }
            for unit in units {
                if let refusal = check(unit: unit.unit, seq: seq) { return refusal }
                if let value = unit.shortfallW, value < 0 { return invalid("unit \(unit.unit)'s shortfall_w \(value) is negative") }
            }
        }
        guard FrequencyEventRecord.directions.contains(e.direction) else {
            return IngestRefusal(.frequencyEventInvalid, message: "record \(seq): direction \(quoted(e.direction)) is not under or over")
        }
        if let cause = e.cause, !FrequencyEventRecord.causes.contains(cause) {
            return IngestRefusal(.frequencyEventInvalid, message: "record \(seq): cause \(quoted(cause)) is not one of "
                                 + FrequencyEventRecord.causes.sorted().joined(separator: ", "))
        }
        if let code = e.causeCode, let refusal = check(code: code, seq: seq) { return refusal }
        if let unit = e.causeUnit, let refusal = check(unit: unit, seq: seq) { return refusal }
        return nil
    }

    /// A utility control (issue 48 §3): an outcome bessd has, texts within their bounds, a code of
    /// upper-case letters, digits and `_`, a refusal's status 252 or 253 (none on other outcomes), an
    /// end not before its start, limits within ±10^12 W. Its texts are kept as sent and escaped where shown.
    static func check(utilityControl u: UtilityControlRecord, seq: UInt64) -> IngestRefusal? {
        func invalid(_ what: String) -> IngestRefusal { IngestRefusal(.utilityControlInvalid, message: "record \(seq): utility control \(what)") }
        guard UtilityControlRecord.outcomes.contains(u.outcome) else {
            return invalid("outcome \(quoted(u.outcome)) is not one of \(UtilityControlRecord.outcomes.sorted().joined(separator: ", "))")
        }
        for (name, text) in [("mrid", u.mRID), ("program", u.program)] {
            if let text, !(1...UtilityControlRecord.maxIDBytes).contains(text.utf8.count) {
                return invalid("\(name) \(quoted(text)) is \(text.utf8.count) bytes, not 1 to \(UtilityControlRecord.maxIDBytes)")
            }
        }
        if u.mRID == nil, u.outcome != UtilityControlRecord.refused { return invalid("without an mrid is \(u.outcome), not refused") }
        if let reason = u.reason, reason.utf8.count > UtilityControlRecord.maxReasonBytes {
            return invalid("reason is \(reason.utf8.count) bytes, more than \(UtilityControlRecord.maxReasonBytes)")
        }
        if let code = u.code {
            let ok = (1...48).contains(code.utf8.count) && code.utf8.allSatisfy {
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: "_")
            }
            guard ok else { return invalid("code \(quoted(code)) is not a code (A-Z, 0-9, _, at most 48)") }
        }
        if u.outcome == UtilityControlRecord.refused {
            if let status = u.responseStatus, status != 252, status != 253 { return invalid("refused with response status \(status), not 252 or 253") }
        } else if u.responseStatus != nil || u.code != nil || u.reason != nil {
            return invalid("\(u.outcome) carries a refusal's response status, code or reason")
        }
        if let start = u.start, let end = u.end, end < start { return invalid("end \(end) is before start \(start)") }
        for (name, watts) in u.limits.named where !(abs(watts) <= UtilityControlRecord.maxLimitW) {
            return invalid("limit \(name) \(watts) W is beyond ±10^12 W")
        }
        return nil
    }

    /// A schedule block (issue 60): finite quantities, a length bessd's `schedule.block_s` allows and a
    /// start on its boundary, a revision not below 0, a `bound_by` of bessd's, and a deviation that is
    /// delivered − droop − target (within a thousandth of a kWh).
    static func check(scheduleBlock b: ScheduleBlockRecord, seq: UInt64) -> IngestRefusal? {
        func invalid(_ what: String) -> IngestRefusal { IngestRefusal(.scheduleBlockInvalid, message: "record \(seq): schedule block \(what)") }
        for (name, value) in [("target_kwh", b.targetKWh), ("delivered_kwh", b.deliveredKWh), ("droop_kwh", b.droopKWh),
                              ("deviation_kwh", b.deviationKWh), ("deviation_pct", b.deviationPct)] where !(abs(value) <= 1e9) {
            return invalid("\(name) \(value) is not a finite number within ±10^9")
        }
        guard (60...3600).contains(b.lengthS), b.startUnix % b.lengthS == 0 else {
            return invalid("length_s \(b.lengthS) is not 60 to 3600 or start_unix \(b.startUnix) is not on its boundary")
        }
        guard b.revision >= 0 else { return invalid("revision \(b.revision) is below 0") }
        guard ScheduleBlockRecord.bindings.contains(b.boundBy) else {
            return invalid("bound_by \(quoted(b.boundBy)) is not one of \(ScheduleBlockRecord.bindings.sorted().joined(separator: ", "))")
        }
        guard abs(b.deliveredKWh - b.droopKWh - b.targetKWh - b.deviationKWh) <= 1e-3 else {
            return invalid("deviation_kwh \(b.deviationKWh) is not delivered − droop − target")
        }
        return nil
    }

    /// A trip code (a unit's trips and latches, an event's code unless it is an `UplinkEventCode`).
    static func check(code: String, seq: UInt64) -> IngestRefusal? {
        // As bessd writes them: the trip table's names, upper case.
        TripCode(name: code).map { "\($0.name)" == code } == true ? nil
            : IngestRefusal(.tripCodeInvalid, message: "record \(seq): \(quoted(code)) is not a code of the trip table")
    }

    /// A peer's text for a log line or an answer: in quotes, printable ASCII as it is (`"` and `\`
    /// escaped), every other character as `\u{…}`, and cut after `limit` characters (the project's one
    /// escaper, ControlCore's `TextQuoting`).
    public static func quoted(_ text: String, limit: Int = 48) -> String {
        TextQuoting.quoted(text, limit: limit)
    }
}
