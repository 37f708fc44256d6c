import BessBase
import ControlCore
import IEEE2030_5

/// The controls recorded in force, kept across a restart in `state_directory/ieee2030_5-controls.bin`,
/// so that a restarted bessd does not record a control still in force as taken a second time, and
/// records the end of one that ended while it was down (its window passed: completed; cancelled,
/// superseded or gone from the server's list: as `endOutcome` judges it once the schedule is read).
///
/// Payload (version 1, `Sep2StateFile`): count u16 · per control (program text · control text · start
/// (flag u8 · i64) · end (flag u8 · i64) · 8 limits (flag u8 · f64 bits) in `UtilityControlLimits`'s key
/// order · the limits left out beyond range, a bit each in that order, u8); a text is a length u16 and
/// UTF-8 bytes, the mRIDs as the server wrote them.
enum StoredInForce {
    /// The most controls in force at once: one source per control type, with room to spare.
    static let maximumControls = 64
    /// The longest mRID kept (the records cut theirs to 64 bytes; the key keeps the server's).
    static let maximumMRIDBytes = 1024
    static let keys = ["export_limit_w", "import_limit_w", "generation_limit_w", "load_limit_w", "fixed_w", "max_lim_w", "target_w",
                       "storage_target_w"]

    /// The file of `stateDirectory`.
    static func file(stateDirectory: String) -> Sep2StateFile {
        Sep2StateFile(stateDirectory: stateDirectory, name: "ieee2030_5-controls.bin", magic: "BESS2INF", version: 1,
                      maximumBytes: 256 << 10, what: "the 2030.5 controls in force")
    }

    static func values(_ l: UtilityControlLimits) -> [Double?] {
        [l.exportLimitW, l.importLimitW, l.generationLimitW, l.loadLimitW, l.fixedW, l.maxLimW, l.targetW, l.storageTargetW]
    }

    /// The payload of `inForce`.
    /// - Throws: `SEP2_STORE_TOO_LARGE` past the bounds.
    static func encode(_ inForce: [ControlKey: UtilityControlRecord]) throws(ScheduleStoreError) -> [UInt8] {
        guard inForce.count <= maximumControls else {
            throw ScheduleStoreError(.tooLarge, message: "\(inForce.count) controls in force (at most \(maximumControls))")
        }
        var out: [UInt8] = []
        ScheduleStore.append(&out, UInt64(inForce.count), bytes: 2)
        for (key, record) in inForce.sorted(by: { ($0.key.program, $0.key.control) < ($1.key.program, $1.key.control) }) {
            guard (1...maximumMRIDBytes).contains(key.program.utf8.count), (1...maximumMRIDBytes).contains(key.control.utf8.count) else {
                throw ScheduleStoreError(.tooLarge, message: "an mRID of \(max(key.program.utf8.count, key.control.utf8.count)) bytes "
                                         + "(1…\(maximumMRIDBytes))")
            }
            ScheduleStore.append(&out, text: key.program)
            ScheduleStore.append(&out, text: key.control)
            ScheduleStore.append(&out, optional: record.start.map { UInt64(bitPattern: $0) })
            ScheduleStore.append(&out, optional: record.end.map { UInt64(bitPattern: $0) })
            for value in values(record.limits) { ScheduleStore.append(&out, optional: value.map(\.bitPattern)) }
            out.append(keys.enumerated().reduce(UInt8(0)) { record.beyondRange.contains($1.element) ? $0 | 1 << $1.offset : $0 })
        }
        return out
    }

    /// The controls a payload holds, each with its `taken` record; anything not as written is `SEP2_STORE_CORRUPT`.
    static func decode(_ reader: inout ScheduleStore.Reader) throws(ScheduleStoreError) -> [ControlKey: UtilityControlRecord] {
        let count = try reader.integer(2)
        guard count <= UInt64(maximumControls) else { throw ScheduleStore.corrupt("\(count) controls (at most \(maximumControls))") }
        var inForce: [ControlKey: UtilityControlRecord] = [:]
        for _ in 0..<count {
            let key = ControlKey(program: try reader.text(maximum: maximumMRIDBytes), control: try reader.text(maximum: maximumMRIDBytes))
            let start = try reader.optional().map { Int64(bitPattern: $0) }, end = try reader.optional().map { Int64(bitPattern: $0) }
            var limits: [Double?] = []
            for _ in keys {
                let value = try reader.optional().map { Double(bitPattern: $0) }
                guard value?.isFinite ?? true else { throw ScheduleStore.corrupt("a limit that is not finite") }
                limits.append(value)
            }
            let beyond = try reader.integer(1)
            var record = UtilityControlRecord(mRID: ControlRecorder.bounded(key.control), program: ControlRecorder.bounded(key.program),
                                              outcome: UtilityControlRecord.taken, start: start, end: end,
                                              limits: UtilityControlLimits(exportLimitW: limits[0], importLimitW: limits[1], generationLimitW: limits[2],
                                                                           loadLimitW: limits[3], fixedW: limits[4], maxLimW: limits[5],
                                                                           targetW: limits[6], storageTargetW: limits[7]))
            record.beyondRange = keys.enumerated().filter { beyond >> UInt64($0.offset) & 1 == 1 }.map(\.element)
            guard inForce.updateValue(record, forKey: key) == nil else { throw ScheduleStore.corrupt("a control stored twice") }
        }
        return inForce
    }
}

extension Sep2Client {
    /// Takes up the controls recorded in force before a restart, when records are made.
    func restoreInForce(_ directory: String) {
        guard controlRecorder.sink != nil else { return }
        do throws(ScheduleStoreError) {
            if let kept = try StoredInForce.file(stateDirectory: directory).load(StoredInForce.decode) { controlRecorder.inForce = kept }
        } catch {
            log(.sep2(failure: error, "\(error); the 2030.5 controls in force are recorded afresh (taken again, no end for one ended meanwhile)"))
        }
        controlRecorder.savedRevision = controlRecorder.revision
    }

    /// Writes the controls in force when they changed since the last write (on the worker's thread, after
    /// the limits are published); a failure is said once until a write succeeds.
    func saveInForce() {
        guard let store, controlRecorder.sink != nil, controlRecorder.savedRevision != controlRecorder.revision else { return }
        controlRecorder.savedRevision = controlRecorder.revision
        do throws(ScheduleStoreError) {
            try StoredInForce.file(stateDirectory: store.directory).save(try StoredInForce.encode(controlRecorder.inForce))
            controlRecorder.storeFailed = false
        } catch {
            if !controlRecorder.storeFailed {
                log(.sep2(failure: error, "\(error); the 2030.5 controls in force would be recorded taken again after a restart"))
            }
            controlRecorder.storeFailed = true
        }
    }
}
