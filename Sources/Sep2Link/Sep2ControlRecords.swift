import BessBase
public import ControlCore
import IEEE2030_5

/// The controls the worker has in force, for the uplink (issue 48 §3: "the journal and uplink record
/// every control taken or refused"): each DERControl taken when it comes into force for any type, and
/// its end when it leaves (completed, cancelled or superseded, as `EventRules.state` judges it; one
/// still listed and in its window, outranked by a higher-priority program's, is superseded and taken
/// again when that one ends; a control gone from the server's list before its end counts as
/// cancelled), and each control refused.
/// A program's DefaultDERControl is recorded the same way, without a window: taken when it comes into
/// force for any type, superseded when it leaves force while the program still has it (an event took
/// its types), cancelled when the server replaced or removed it; one whose values the server changed
/// under the same mRID is superseded and taken again with the new values. The controls in force are
/// kept in the state directory (Sep2ControlRecords+Store.swift): after a restart one still in force is
/// not taken again, and one that ended meanwhile gets its end; nothing is compared until a schedule is known.
struct ControlRecorder {
    /// Where the records go; nil: none made.
    var sink: (@Sendable (UtilityControlRecord) -> Void)?
    /// Each control in force, with the record that said it was taken.
    var inForce: [ControlKey: UtilityControlRecord] = [:]
    /// Counts the changes to `inForce`; the one last written, and whether that write failed.
    var revision: UInt64 = 0
    var savedRevision: UInt64 = 0
    var storeFailed = false
}

extension ControlRecorder {
    /// Compares the controls in force in `active` with those before: a record per control taken and per
    /// control ended, in the order of their program and mRID. Costs a set comparison while nothing changes.
    mutating func noteInForce(_ active: ActiveControls, second: Int64, schedule: Sep2Schedule, siteRatingW: Double) {
        guard let sink, schedule.known else { return }
        let programs = schedule.programs
        var now: [ControlKey: Int64] = [:]
        for source in active.sources.values {
            switch source {
            case .event(let program, let control, let until):
                now[ControlKey(program: program, control: control)] = until
            case .defaultControl(let program):
                guard let mRID = programs.first(where: { $0.mRID == program })?.defaultControl?.mRID else { continue }
                now[ControlKey(program: program, control: mRID)] = .max
            }
        }
        // A default the server changed under the same mRID (sep2_server.py's admin `default` does):
        // its old values superseded, its new ones taken.
        var changed: Set<ControlKey> = []
        for (key, taken) in inForce where taken.start == nil && taken.end == nil && now[key] != nil {
            if Self.takenRecord(key, until: .max, schedule: schedule, siteRatingW: siteRatingW).limits != taken.limits { changed.insert(key) }
        }
        guard Set(now.keys) != Set(inForce.keys) || !changed.isEmpty else { return }
        revision &+= 1
        let order = { (a: ControlKey, b: ControlKey) in (a.program, a.control) < (b.program, b.control) }
        for (key, taken) in inForce.sorted(by: { order($0.key, $1.key) }) where now[key] == nil || changed.contains(key) {
            var ended = taken
            ended.outcome = changed.contains(key) ? UtilityControlRecord.superseded : Self.endOutcome(key, taken: taken, second: second, schedule: schedule)
            inForce[key] = nil
            sink(ended)
        }
        for key in now.keys.sorted(by: order) where inForce[key] == nil {
            let record = Self.takenRecord(key, until: now[key] ?? second, schedule: schedule, siteRatingW: siteRatingW)
            inForce[key] = record
            sink(record)
        }
    }

    /// Why a control left force: the state `EventRules` gives it now; one still listed and scheduled or
    /// active before its end was outranked (a higher-priority program's control took its types):
    /// superseded; one gone from the list, or past its end, completed when its end has passed and
    /// cancelled before.
    static func endOutcome(_ key: ControlKey, taken: UtilityControlRecord, second: Int64, schedule: Sep2Schedule) -> String {
        let programs = schedule.programs
        if taken.start == nil, taken.end == nil {
            // A default: superseded while its program still has it, else replaced or removed.
            let kept = programs.first { $0.mRID == key.program }?.defaultControl?.mRID == key.control
            return kept ? UtilityControlRecord.superseded : UtilityControlRecord.cancelled
        }
        switch schedule.state(of: key.control, program: key.program, at: second) {
        case .completed: return UtilityControlRecord.completed
        case .cancelled: return UtilityControlRecord.cancelled
        case .superseded: return UtilityControlRecord.superseded
        case .scheduled, .active:
            return second >= (taken.end ?? .max) ? UtilityControlRecord.completed : UtilityControlRecord.superseded
        case nil: return second >= (taken.end ?? .max) ? UtilityControlRecord.completed : UtilityControlRecord.cancelled
        }
    }

    /// The record of a control taken: its window and the limits it sets, in W of the site's rating.
    static func takenRecord(_ key: ControlKey, until: Int64, schedule: Sep2Schedule, siteRatingW: Double) -> UtilityControlRecord {
        let program = schedule.programs.first { $0.mRID == key.program }
        let control = program?.controls.first { $0.mRID == key.control }
        // A default (no window) when no control of the program has the mRID.
        let base = control?.base ?? program?.defaultControl.flatMap { $0.mRID == key.control ? $0.base : nil }
        var limits = UtilityControlLimits()
        let window = control.map { EventRules.window($0, randomization: schedule.randomization) }
        if let base {
            var one = ActiveControls()
            one.base = base
            let l = one.utilityLimits(siteRatingW: siteRatingW)
            let f = UtilityControlLimits.finite
            limits = UtilityControlLimits(exportLimitW: f(l.exportLimitW), importLimitW: f(l.importLimitW), generationLimitW: f(l.generationLimitW),
                                          loadLimitW: f(l.loadLimitW), fixedW: f(l.fixedW), maxLimW: f(l.maxLimW), targetW: f(l.targetW),
                                          storageTargetW: f(l.storageTargetW))
        }
        var record = UtilityControlRecord(mRID: Self.bounded(key.control), program: Self.bounded(key.program), outcome: UtilityControlRecord.taken,
                                          start: window?.start, end: window.map { max($0.start, $0.end) } ?? (until == .max ? nil : until),
                                          limits: limits)
        record.leaveOutBeyondRange()
        return record
    }

    /// A 252's code when the refusal has none of its own: the control sets nothing bessd carries out.
    static let notApplicableCode = "SEP2_CONTROL_NOT_APPLICABLE"

    /// A control a DERControlList page refused alone: 252 or 253, with the refusal's code (a 253's:
    /// `SEP2_VALUE_INVALID` …), or `SEP2_CONTROL_NOT_APPLICABLE` for a 252 without one; never a word
    /// of the reason (which starts with "DERControl").
    func recordRefused(_ control: RefusedControl) {
        guard let sink else { return }
        let code = control.code.isEmpty ? (control.status == .notApplicable ? Self.notApplicableCode : "SEP2_CONTROL_REFUSED") : control.code
        sink(UtilityControlRecord(mRID: control.mRID.map { Self.bounded($0) }, program: nil, outcome: UtilityControlRecord.refused,
                                  code: Self.leadingCode(code) ?? "SEP2_CONTROL_REFUSED", responseStatus: Int(control.status.rawValue),
                                  reason: UtilityControlRecord.cut(control.reason, bytes: UtilityControlRecord.maxReasonBytes)))
    }

    /// A control document refused whole (its controls unknown): no mRID, no response status.
    func recordRefused(code: String, reason: String) {
        guard let sink else { return }
        sink(UtilityControlRecord(mRID: nil, program: nil, outcome: UtilityControlRecord.refused, code: Self.leadingCode(code) ?? "SEP2_CONTROL_REFUSED",
                                  reason: UtilityControlRecord.cut(reason, bytes: UtilityControlRecord.maxReasonBytes)))
    }

    /// An mRID as the server wrote it, cut to `UtilityControlRecord.maxIDBytes`.
    static func bounded(_ id: String) -> String { UtilityControlRecord.cut(id, bytes: UtilityControlRecord.maxIDBytes) }

    /// The code `text` starts with (upper-case letters, digits and `_`, 3 to 48), nil when none.
    static func leadingCode(_ text: String) -> String? {
        let code = text.unicodeScalars.prefix { ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
        guard (3...48).contains(code.count) else { return nil }
        return String(String.UnicodeScalarView(code))
    }
}
