public import ControlCore
import Fieldbus

/// A unit's contactor as bessd drives it (SunSpec model 123 `Conn`; docs/design/0009-utility-limits.md).
public enum ContactorState: UInt8, Sendable, Equatable, CustomStringConvertible {
    /// Not asked to open, or closed again.
    case closed
    /// Asked to open: the unit is at 0 W and bessd waits for its power to fall before opening.
    case opening
    /// `Conn` = 0 written and acknowledged, its revert timer armed.
    case open
    /// Asked to open, but the inverter has no model 123 (or no SunSpec at all), no `Conn_RvrtTms`, or
    /// refused `Conn` in this control: held at 0 W instead.
    case cannotOpen

    /// Available to operate as the status reports it: closed, or asked to open but unable to.
    public var closed: Bool { self == .closed || self == .cannotOpen }
    /// Connected to the grid as the status reports it (2030.5 `genConnectStatus` bit 0): anything
    /// but `.open`. A unit being opened is connected until its open is acknowledged (and, with a
    /// readback, until the inverter says it is open: `reported`).
    public var connected: Bool { self != .open }

    /// The state a unit's status shows: `driven` as bessd drives it, corrected by what the inverter
    /// says (`connected`: 701 `ConnSt`, 101–103 `St`; nil when it does not say). The readback wins:
    /// an inverter reading open is open; one reading connected is not, whatever bessd wrote.
    public static func reported(driven: ContactorState, connected: Bool?) -> ContactorState {
        switch connected {
        case false?: .open
        case true? where driven == .open: .opening
        default: driven
        }
    }

    public var description: String {
        switch self {
        case .closed: "closed"
        case .opening: "opening"
        case .open: "open"
        case .cannotOpen: "cannot_open"
        }
    }
}

/// When a unit's contactor is opened and closed again: decided on the bus thread at each round's
/// writes, from the cycle's request (`DeviceSlot.setConnect`), what is on the wire and the latest
/// reading. Pure, like `WritePlanner`.
///
/// The rule (docs/design/0009-utility-limits.md): the contactor opens only once 0 W is on the wire
/// (the cycle zeroes every unit while `opModConnect` or `opModEnergize` is false), and then as soon
/// as a reading taken since shows |W| at most `threshold` (50 W, or 1 % of the unit's rating if
/// more), or `openAfter` after the zero was acknowledged whatever the unit reads: a unit that
/// measures noise around zero, or none, is not left connected. The open is always armed
/// (`Conn_RvrtTms`) and re-written at least every half of its own revert time while the cycle hands
/// over; an open whose timer has run out, or that reads connected again, is opened afresh by the
/// zero rule.
/// Once the request ends, `Conn` = 1 is written; the limits then rise ramped as they do anyway.
enum ContactorPlanner {
    /// The longest bessd waits for a unit's power to fall before opening it anyway.
    static let openAfter: Duration = .seconds(5)
    /// |W| at or below which a unit is at zero: 50 W, or 1 % of its rating when that is more. The
    /// rating is the lower of the device's own (`WRtg`/`WMax`) and the configured unit's: a device
    /// that overstates its rating does not widen "at zero".
    static func threshold(rated: Watts?, unit: Watts? = nil) -> Double {
        let rating = switch (rated, unit) {
        case let (r?, u?): min(r.value, u.value)
        case let (r?, nil): r.value
        case let (nil, u?): u.value
        case (nil, nil): 0.0
        }
        return max(50, 0.01 * rating)
    }
    /// How long after an acknowledged open a reading saying "connected" is believed: the contactor
    /// has had time to open, so the unit reverted (reboot, its own timer) and is no longer open.
    static let readbackAfter: Duration = .seconds(1)

    enum Step: Equatable {
        case none
        /// Write `Conn` = 0 with `Conn_RvrtTms` (first open, or re-arm).
        case open
        /// Write `Conn` = 1.
        case close
        /// Asked to open a unit that cannot be.
        case cannotOpen
    }

    /// - Parameters:
    ///   - conn: the `Conn` last written and acknowledged (nil: none since bessd started).
    ///   - armedAt: when an open was last acknowledged.
    ///   - zeroSince: since when 0 W has been acknowledged on the wire (nil: a non-zero setpoint is).
    ///   - onWire: the setpoint the round's plan leaves on the wire: a first open only with 0 W.
    ///   - unitRating: the configured unit's rating (bounds the device's own in `threshold`).
    ///   - stalled: the cycle's hand-over is stale (`WritePlanner.stalled`): its request is not
    ///     refreshed, so nothing is opened or re-armed; the revert timer closes an open unit.
    static func step(wantOpen: Bool, canOpen: Bool, conn: UInt16?, armedAt: MonotonicInstant, zeroSince: MonotonicInstant?,
                     reading: Timestamped<InverterReading>?, revert: Duration, now: MonotonicInstant,
                     onWire: Watts = .zero, unitRating: Watts? = nil, stalled: Bool = false) -> Step {
        guard wantOpen else { return conn == SunSpec.Controls.disconnect ? .close : .none }
        guard canOpen else { return .cannotOpen }
        if conn == SunSpec.Controls.disconnect {
            // Still open only while its revert timer runs and the unit does not read connected; an
            // expired open (outage, reboot, late re-arm) may carry power again: it is a first open,
            // under the zero rule below, never a re-arm.
            let readConnected = reading.map { $0.value.connected == true && $0.takenAt >= armedAt + readbackAfter } ?? false
            if now - armedAt < revert, !readConnected {
                return !stalled && WritePlanner.atLeastHalf(now - armedAt, of: revert) ? .open : .none
            }
        }
        guard !stalled, onWire == .zero, let zeroSince else { return .none }
        if let reading, reading.takenAt >= zeroSince,
           abs(reading.value.activePower.value) <= threshold(rated: reading.value.ratedPower, unit: unitRating) {
            return .open
        }
        return now - zeroSince >= openAfter ? .open : .none
    }

    /// What the status shows for a unit in that state; `expired`: the open's revert has run out
    /// (the unit has reconnected on its own: not open, whatever was last written).
    static func state(wantOpen: Bool, canOpen: Bool, conn: UInt16?, expired: Bool = false) -> ContactorState {
        if conn == SunSpec.Controls.disconnect, !expired { return .open }
        guard wantOpen else { return .closed }
        return canOpen ? .opening : .cannotOpen
    }
}
