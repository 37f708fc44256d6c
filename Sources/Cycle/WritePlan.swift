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
        now - lastHandOver > max(stallAfter, period * 5)
    }

    /// The setpoint a device gets: the cycle's, or zero when the cycle stalled or the device's last
    /// reading was unusable.
    static func setpoint(decided: Watts, stalled: Bool, valueFault: Bool) -> Watts {
        stalled || valueFault ? .zero : decided
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
        let rearm = lastWritten == nil || now - lastArmedAt >= revert / 2
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
