import ControlCore
import Uplink

/// A `frequency_event` record read straight from its bytes (issue 47 §3) by `BatchReader`, as strictly
/// as the other records: every key it knows must hold its type (null where the field may be unknown),
/// and what `BatchReader` does not take goes to `JSONDecoder`. The record's keys sit beside the
/// record's own (`seq`, `time`, `type`, …), so the key scan of `record(depth:)` offers each key here
/// first. The fields as the scan meets them (`.some(nil)`: written as null).
struct FrequencyEventFields {
    var sequence: UInt64?, start: Double?, end: Double?, direction: String?
    var extremeHz: Double??, maxRocof: Double??, preEvent: Double??, required: Double??, delivered: Double??
    var requiredMean: Double??, deliveredMean: Double??, shortfall: Double??, score: Double??, maxShortfall: Double??
    var cause: String??, causeCode: String??, causeUnit: String??, metered: Bool??, unitsOmitted: Int64??

    /// Reads the value of `name` from `r` when it is one of a frequency event's own keys (true when it
    /// read, false when the value is not what the key holds); nil when the key is not one of them.
    mutating func read(_ name: Range<Int>, from r: inout BatchReader) -> Bool? {
        if r.key(name, is: "sequence") { return r.read(&sequence) { $0.uint64() } }
        if r.key(name, is: "start") { return r.read(&start) { $0.double() } }
        if r.key(name, is: "end") { return r.read(&end) { $0.double() } }
        if r.key(name, is: "direction") { return r.read(&direction) { $0.string() } }
        if r.key(name, is: "extreme_hz") { return r.readOrNull(&extremeHz) { $0.double() } }
        if r.key(name, is: "max_rocof_hz_per_s") { return r.readOrNull(&maxRocof) { $0.double() } }
        if r.key(name, is: "pre_event_w") { return r.readOrNull(&preEvent) { $0.double() } }
        if r.key(name, is: "required_w") { return r.readOrNull(&required) { $0.double() } }
        if r.key(name, is: "delivered_w") { return r.readOrNull(&delivered) { $0.double() } }
        if r.key(name, is: "required_mean_w") { return r.readOrNull(&requiredMean) { $0.double() } }
        if r.key(name, is: "delivered_mean_w") { return r.readOrNull(&deliveredMean) { $0.double() } }
        if r.key(name, is: "shortfall_w") { return r.readOrNull(&shortfall) { $0.double() } }
        if r.key(name, is: "score") { return r.readOrNull(&score) { $0.double() } }
        if r.key(name, is: "max_shortfall_w") { return r.readOrNull(&maxShortfall) { $0.double() } }
        if r.key(name, is: "cause") { return r.readOrNull(&cause) { $0.string() } }
        if r.key(name, is: "cause_code") { return r.readOrNull(&causeCode) { $0.string() } }
        if r.key(name, is: "cause_unit") { return r.readOrNull(&causeUnit) { $0.string() } }
        if r.key(name, is: "metered") { return r.readOrNull(&metered) { $0.bool() } }
        if r.key(name, is: "units_omitted") { return r.readOrNull(&unitsOmitted) { $0.int64() } }
        return nil
    }

    /// The event from its fields and, when the record has `units`, the list at `unitsAt` in `r` (null as nil).
    func record(unitsAt: Int?, depth: Int, from r: inout BatchReader) -> FrequencyEventRecord? {
        guard let sequence, let start, let end, let direction else { return nil }
        var units: [FrequencyEventUnitSummary]?
        if let unitsAt {
            r.i = unitsAt
            guard let list = r.orNull({ $0.list(depth: depth + 1) { Self.unit(depth: depth + 2, from: &$0) } }) else { return nil }
            units = list
        }
        var omitted: Int?
        if let value = unitsOmitted ?? nil {
            guard let fits = Int(exactly: value) else { return nil }
            omitted = fits
        }
        return FrequencyEventRecord(
            sequence: sequence, start: start, end: end, direction: direction, extremeHz: extremeHz ?? nil,
            maxRocofHzPerS: maxRocof ?? nil, preEventW: preEvent ?? nil, requiredW: required ?? nil, deliveredW: delivered ?? nil,
            requiredMeanW: requiredMean ?? nil, deliveredMeanW: deliveredMean ?? nil, shortfallW: shortfall ?? nil,
            cause: cause ?? nil, causeCode: causeCode ?? nil, causeUnit: causeUnit ?? nil, score: score ?? nil,
            metered: metered ?? nil, maxShortfallW: maxShortfall ?? nil, units: units, unitsOmitted: omitted)
    }

    /// One unit's part of a frequency event.
    static func unit(depth: Int, from reader: inout BatchReader) -> FrequencyEventUnitSummary? {
        var unit: String?, required: Double??, delivered: Double??, requiredMean: Double??, deliveredMean: Double??, shortfall: Double??
        let ok = reader.object(depth: depth) { r, key in
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
