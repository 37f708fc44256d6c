import BessBase
import ControlCore
import Uplink

/// A `utility_control` object (an event of kind `utility_control`, issue 48 §3) read straight from its
/// bytes, as strictly as the other records: each key its type, null where the field may be unknown;
/// what `BatchReader` does not take goes to `JSONDecoder`, which decides.
extension BatchReader {
    mutating func utilityControl(depth: Int) -> UtilityControlRecord? {
        var mRID: String??, program: String??, outcome: String?, code: String??, status: Int64??, reason: String??
        var start: Int64??, end: Int64??, limits: UtilityControlLimits?
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "mrid") { return r.readOrNull(&mRID) { $0.string() } }
            if r.key(key, is: "program") { return r.readOrNull(&program) { $0.string() } }
            if r.key(key, is: "outcome") { return r.read(&outcome) { $0.string() } }
            if r.key(key, is: "code") { return r.readOrNull(&code) { $0.string() } }
            if r.key(key, is: "response_status") { return r.readOrNull(&status) { $0.int64() } }
            if r.key(key, is: "reason") { return r.readOrNull(&reason) { $0.string() } }
            if r.key(key, is: "start") { return r.readOrNull(&start) { $0.int64() } }
            if r.key(key, is: "end") { return r.readOrNull(&end) { $0.int64() } }
            if r.key(key, is: "limits") { return r.read(&limits) { $0.utilityControlLimits(depth: depth + 1) } }
            return r.skip(depth: depth + 1)
        }
        guard ok, let outcome, let limits else { return nil }
        var responseStatus: Int?
        if let value = status ?? nil {
            guard let fits = Int(exactly: value) else { return nil }
            responseStatus = fits
        }
        return UtilityControlRecord(mRID: mRID ?? nil, program: program ?? nil, outcome: outcome, code: code ?? nil,
                                    responseStatus: responseStatus, reason: reason ?? nil, start: start ?? nil, end: end ?? nil,
                                    limits: limits)
    }

    mutating func utilityControlLimits(depth: Int) -> UtilityControlLimits? {
        var export: Double??, importW: Double??, generation: Double??, load: Double??, fixed: Double??, maxLim: Double??
        var target: Double??, storage: Double??
        let ok = object(depth: depth) { r, key in
            if r.key(key, is: "export_limit_w") { return r.readOrNull(&export) { $0.double() } }
            if r.key(key, is: "import_limit_w") { return r.readOrNull(&importW) { $0.double() } }
            if r.key(key, is: "generation_limit_w") { return r.readOrNull(&generation) { $0.double() } }
            if r.key(key, is: "load_limit_w") { return r.readOrNull(&load) { $0.double() } }
            if r.key(key, is: "fixed_w") { return r.readOrNull(&fixed) { $0.double() } }
            if r.key(key, is: "max_lim_w") { return r.readOrNull(&maxLim) { $0.double() } }
            if r.key(key, is: "target_w") { return r.readOrNull(&target) { $0.double() } }
            if r.key(key, is: "storage_target_w") { return r.readOrNull(&storage) { $0.double() } }
            return r.skip(depth: depth + 1)
        }
        guard ok else { return nil }
        return UtilityControlLimits(exportLimitW: export ?? nil, importLimitW: importW ?? nil, generationLimitW: generation ?? nil,
                                    loadLimitW: load ?? nil, fixedW: fixed ?? nil, maxLimW: maxLim ?? nil, targetW: target ?? nil,
                                    storageTargetW: storage ?? nil)
    }
}
