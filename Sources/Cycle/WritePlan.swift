import ControlCore
import Fieldbus

/// What one device is written in one round: the setpoint it gets, whether the revert timer is
/// re-armed with it, the requests in order, and `plain` (the requests without the re-arm, kept to
/// compare the next setpoint with).
struct WritePlan {
    var setpoint: Watts
    var rearm: Bool
    var writes: [(address: Int, values: [UInt16])]
    var plain: [(address: Int, values: [UInt16])]
    /// The reactive axis's state once these writes are answered (nil: it has nothing in them).
    var reactive: ReactiveWriteState? = nil
}

/// The reactive axis of one device's writes (704's var points), beside the active one's
/// `lastWritten`/`lastPlain`/`lastArmedAt`: the same rule, per axis.
struct ReactiveWriteState {
    /// The var last written (nil: none since discovery, or handed back).
    var lastWritten: Double?
    /// Its requests without the re-arm, to compare the next setpoint's with.
    var lastPlain: [(address: Int, values: [UInt16])]?
    /// When its revert was last armed.
    var lastArmedAt = MonotonicInstant.zero
    /// bessd set `VarSetEna` 1 (kept across a rediscovery): when it commands no reactive power any
    /// more, it writes `VarSetEnaRvrt` 0 and `VarSetEna` 0 once to hand it back.
    var enabled = false
}

/// The one write rule of every path that writes a Modbus device: the bus poller's (Modbus TCP) and
/// an endpoint worker's own (serial lines, register maps read in several requests, and a TCP
/// endpoint before the poller takes it). Pure: it reads the setpoint the cycle decided and the
/// device's state, and says what goes on the wire; the caller sends it.
enum WritePlanner {
    /// How long a running cycle may go without handing over setpoints before the devices get zero.
    static let stallAfter: Duration = .seconds(1)

    /// True when a cycle that last handed over at `lastHandOver` has stalled by `now` (not stopped:
    /// its deadline stays published): after `stallAfter`, or five periods if longer, the devices get
    /// zero, revert armed, rather than a refresh of a setpoint nobody confirms.
    static func stalled(lastHandOver: MonotonicInstant, now: MonotonicInstant, period: Duration) -> Bool {
        let quiet = now - lastHandOver
        // Five periods as a sum: Duration's `*` is a generic 128-bit multiplication, once per round.
        return quiet > stallAfter && quiet > period + period + period + period + period
    }

    /// True when `elapsed` is at least half of `period` (a revert timer due for its re-arm):
    /// `elapsed + elapsed >= period`, the test `elapsed >= period / 2` makes for every period of whole
    /// nanoseconds, without the generic 128-bit division `/ 2` costs per device and cycle.
    static func atLeastHalf(_ elapsed: Duration, of period: Duration) -> Bool {
        elapsed + elapsed >= period
    }

    /// The setpoint a device gets: the cycle's, or zero when the cycle stalled or the device's last
    /// reading was unusable.
    static func setpoint(decided: Watts, stalled: Bool, valueFault: Bool) -> Watts {
        stalled || valueFault ? .zero : decided
    }

    /// The reactive setpoint a device gets (var, + = injecting; nil: bessd leaves its reactive
    /// power alone): the cycle's, or 0 var when the cycle stalled or the last reading was unusable
    /// and bessd commands it or had enabled it.
    static func reactive(decided: Double?, stalled: Bool, valueFault: Bool, enabled: Bool) -> Double? {
        guard stalled || valueFault else { return decided }
        return decided != nil || enabled ? 0 : nil
    }

    /// What writing `setpoint` and `reactive` (nil: no reactive command) takes at `now`:
    /// `plan(_:setpoint:…)` for the active axis and the same rule for the reactive one
    /// (`ReactiveWriteState`), with the two in the VA-safe order: in a round where |P| falls and
    /// |Q| rises, `WSet` first, else `VarSet` first, so the device never holds a pair beyond its
    /// rating between two requests. Without a reactive command, a device whose `VarSetEna` bessd
    /// set gets `VarSetEna` 0 once; one that bessd never enabled gets nothing on its var points.
    static func plan(_ device: borrowing ModbusDevice, setpoint: Watts, reactive: Double?, reactivePriority: Bool,
                     lastWritten: Watts?, lastPlain: [(address: Int, values: [UInt16])]?, lastArmedAt: MonotonicInstant,
                     axis: ReactiveWriteState, revert: Duration, now: MonotonicInstant) throws(DeviceError) -> WritePlan? {
        let active = try plan(device, setpoint: setpoint, lastWritten: lastWritten, lastPlain: lastPlain, lastArmedAt: lastArmedAt,
                              revert: revert, now: now)
        guard let control = device.reactiveControl else { return active }
        var next = axis
        let writes: [(address: Int, values: [UInt16])]
        if let q = reactive {
            let rearm = axis.lastWritten == nil || atLeastHalf(now - axis.lastArmedAt, of: revert)
            if !rearm, let last = axis.lastWritten, abs(last - q) < 1 { return active }
            let plain = control.writes(q, reactivePriority: reactivePriority, revert: revert, rearm: false)
            if !rearm, let sent = axis.lastPlain, sent.elementsEqual(plain, by: { $0.address == $1.address && $0.values == $1.values }) {
                return active
            }
            writes = rearm ? control.writes(q, reactivePriority: reactivePriority, revert: revert, rearm: true) : plain
            next.lastWritten = q
            next.lastPlain = plain
            next.enabled = true
            if rearm { next.lastArmedAt = now }
        } else {
            guard axis.enabled else { return active }
            writes = control.release
            next = ReactiveWriteState()
        }
        guard var combined = active else {
            // The reactive axis alone: the active setpoint on the wire stays as it was.
            return WritePlan(setpoint: lastWritten ?? .zero, rearm: false, writes: writes, plain: lastPlain ?? [], reactive: next)
        }
        let activeFirst = abs(setpoint.value) < abs(lastWritten?.value ?? 0) && abs(reactive ?? 0) > abs(axis.lastWritten ?? 0)
        combined.writes = activeFirst ? combined.writes + writes : writes + combined.writes
        combined.reactive = next
        return combined
    }

    /// What writing `setpoint` to `device` takes at `now`, or nil when nothing is due. The revert
    /// timer is re-armed (revert value, enable and time, then the setpoint) on the first write after
    /// discovery and at least every half of its period. In between, a setpoint is written when it
    /// moved by 1 W or more from the last one written *and* its registers changed: a device whose
    /// scale factor makes a step of 10 or 100 W is not sent the same value again (no extra request
    /// on the bus nor write to its memory). `device` is only read; it is `borrowing` so the
    /// caller's value is used in place.
    static func plan(_ device: borrowing ModbusDevice, setpoint: Watts, lastWritten: Watts?, lastPlain: [(address: Int, values: [UInt16])]?,
                     lastArmedAt: MonotonicInstant, revert: Duration, now: MonotonicInstant) throws(DeviceError) -> WritePlan? {
        let rearm = lastWritten == nil || atLeastHalf(now - lastArmedAt, of: revert)
        if !rearm, let last = lastWritten, abs(last.value - setpoint.value) < 1 { return nil }
        let plain = try device.writes(setpoint, revert: revert, rearm: false)
        guard rearm else {
            if let sent = lastPlain, sent.elementsEqual(plain, by: { $0.address == $1.address && $0.values == $1.values }) { return nil }
            return WritePlan(setpoint: setpoint, rearm: false, writes: plain, plain: plain)
        }
        return WritePlan(setpoint: setpoint, rearm: true, writes: try device.writes(setpoint, revert: revert, rearm: true),
                         plain: plain)
    }
}
