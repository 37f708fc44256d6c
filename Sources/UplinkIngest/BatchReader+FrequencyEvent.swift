import ControlCore
import Uplink

/// A `frequency_event` record read straight from its bytes (issue 47 §3), as strictly as the other
/// records: every key it knows must hold its type (null where the field may be unknown), and what
/// `BatchReader` does not take goes to `JSONDecoder`. The record's keys sit beside the record's own
/// (`seq`, `time`, `type`, …), so the key scan of `record(depth:)` offers each key here first.
extension BatchReader {
    /// A frequency event's fields as the record's key scan meets them (`.some(nil)`: written as null).
    struct FrequencyEventFields {
        var sequence: UInt64?, start: Double?, end: Double?, direction: String?
        var extremeHz: Double??, maxRocof: Double??, preEvent: Double??, required: Double??, delivered: Double??
        var requiredMean: Double??, deliveredMean: Double??, shortfall: Double??, score: Double??, maxShortfall: Double??
        var cause: String??, causeCode: String??, causeUnit: String??, metered: Bool??, unitsOmitted: Int64??
    }

    /// Reads the value of `name` into `f` when it is one of a frequency event's own keys (true when it
    /// read, false when the value is not what the key holds); nil when the key is not one of them.
    mutating func frequencyEventField(_ name: Range<Int>, _ f: inout FrequencyEventFields) -> Bool? {
        if key(name, is: "sequence") { return read(&f.sequence) { $0.uint64() } }
        if key(name, is: "start") { return read(&f.start) { $0.double() } }
        if key(name, is: "end") { return read(&f.end) { $0.double() } }
        if key(name, is: "direction") { return read(&f.direction) { $0.string() } }
        if key(name, is: "extreme_hz") { return readOrNull(&f.extremeHz) { $0.double() } }
        if key(name, is: "max_rocof_hz_per_s") { return readOrNull(&f.maxRocof) { $0.double() } }
        if key(name, is: "pre_event_w") { return readOrNull(&f.preEvent) { $0.double() } }
        if key(name, is: "required_w") { return readOrNull(&f.required) { $0.double() } }
        if key(name, is: "delivered_w") { return readOrNull(&f.delivered) { $0.double() } }
        if key(name, is: "required_mean_w") { return readOrNull(&f.requiredMean) { $0.double() } }
        if key(name, is: "delivered_mean_w") { return readOrNull(&f.deliveredMean) { $0.double() } }
        if key(name, is: "shortfall_w") { return readOrNull(&f.shortfall) { $0.double() } }
        if key(name, is: "score") { return readOrNull(&f.score) { $0.double() } }
        if key(name, is: "max_shortfall_w") { return readOrNull(&f.maxShortfall) { $0.double() } }
        if key(name, is: "cause") { return readOrNull(&f.cause) { $0.string() } }
        if key(name, is: "cause_code") { return readOrNull(&f.causeCode) { $0.string() } }
        if key(name, is: "cause_unit") { return readOrNull(&f.causeUnit) { $0.string() } }
        if key(name, is: "metered") { return readOrNull(&f.metered) { $0.bool() } }
        if key(name, is: "units_omitted") { return readOrNull(&f.unitsOmitted) { $0.int64() } }
        return nil
    }

    /// The event from its fields and, when the record has `units`, the list at `unitsAt` (null as nil).
    mutating func frequencyEvent(_ f: FrequencyEventFields, unitsAt: Int?, depth: Int) -> FrequencyEventRecord? {
        guard let sequence = f.sequence, let start = f.start, let end = f.end, let direction = f.direction else { return nil }
        var units: [FrequencyEventUnitSummary]?
        if let unitsAt {
            i = unitsAt
            guard let list = orNull({ $0.list(depth: depth + 1) { $0.frequencyEventUnit(depth: depth + 2) } }) else { return nil }
            units = list
        }
        var omitted: Int?
        if let value = f.unitsOmitted ?? nil {
            guard let fits = Int(exactly: value) else { return nil }
            omitted = fits
        }
        return FrequencyEventRecord(
            sequence: sequence, start: start, end: end, direction: direction, extremeHz: f.extremeHz ?? nil,
            maxRocofHzPerS: f.maxRocof ?? nil, preEventW: f.preEvent ?? nil, requiredW: f.required ?? nil, deliveredW: f.delivered ?? nil,
            requiredMeanW: f.requiredMean ?? nil, deliveredMeanW: f.deliveredMean ?? nil, shortfallW: f.shortfall ?? nil,
            cause: f.cause ?? nil, causeCode: f.causeCode ?? nil, causeUnit: f.causeUnit ?? nil, score: f.score ?? nil,
            metered: f.metered ?? nil, maxShortfallW: f.maxShortfall ?? nil, units: units, unitsOmitted: omitted)
    }

    /// One unit's part of a frequency event.
    mutating func frequencyEventUnit(depth: Int) -> FrequencyEventUnitSummary? {
        var unit: String?, required: Double??, delivered: Double??, requiredMean: Double??, deliveredMean: Double??, shortfall: Double??
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "unit") { return r.read(&unit) { $0.string() } }
            if r.key(key, is: "required_w") { return r.readOrNull(&required) { $0.double() } }
            if r.key(key, is: "delivered_w") { return r.readOrNull(&delivered) { $0.double() } }
            if r.key(key, is: "required_mean_w") { return r.readOrNull(&requiredMean) { $0.double() } }
            if r.key(key, is: "delivered_mean_w") { return r.readOrNull(&deliveredMean) { $0.double() } }
            if r.key(key, is: "shortfall_w") { return r.readOrNull(&shortfall) { $0.double() } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let unit else { return nil }
        return FrequencyEventUnitSummary(unit: unit, requiredW: required ?? nil, deliveredW: delivered ?? nil,
                                         requiredMeanW: requiredMean ?? nil, deliveredMeanW: deliveredMean ?? nil,
                                         shortfallW: shortfall ?? nil)
    }
}
