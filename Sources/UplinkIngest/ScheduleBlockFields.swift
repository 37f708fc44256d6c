import Uplink

/// A `schedule_block` object (an event of kind `schedule_block`, issue 60) read straight from its
/// bytes, as strictly as the other records: each key its type, none of them null; what `BatchReader`
/// does not take goes to `JSONDecoder`, which decides.
enum ScheduleBlockFields {
    static func read(_ r: inout BatchReader, depth: Int) -> ScheduleBlockRecord? {
        var start: Int64?, length: Int64?, revision: Int64?, boundBy: String?
        var target: Double?, delivered: Double?, droop: Double?, deviation: Double?, percent: Double?
        let ok = r.object(depth: depth) { r, key in
            if r.key(key, is: "start_unix") { return r.read(&start) { $0.int64() } }
            if r.key(key, is: "length_s") { return r.read(&length) { $0.int64() } }
            if r.key(key, is: "revision") { return r.read(&revision) { $0.int64() } }
            if r.key(key, is: "bound_by") { return r.read(&boundBy) { $0.string() } }
            if r.key(key, is: "target_kwh") { return r.read(&target) { $0.double() } }
            if r.key(key, is: "delivered_kwh") { return r.read(&delivered) { $0.double() } }
            if r.key(key, is: "droop_kwh") { return r.read(&droop) { $0.double() } }
            if r.key(key, is: "deviation_kwh") { return r.read(&deviation) { $0.double() } }
            if r.key(key, is: "deviation_pct") { return r.read(&percent) { $0.double() } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let start, let length, let revision, let boundBy, let target, let delivered, let droop, let deviation, let percent,
              let fits = Int(exactly: revision) else { return nil }
        return ScheduleBlockRecord(startUnix: start, lengthS: length, targetKWh: target, deliveredKWh: delivered, droopKWh: droop,
                                   deviationKWh: deviation, deviationPct: percent, boundBy: boundBy, revision: fits)
    }
}
