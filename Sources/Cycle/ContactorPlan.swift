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
    /// Asked to open, but the inverter has no model 123 (or no SunSpec at all): held at 0 W instead.
    case cannotOpen

    /// Connected to the grid as the status reports it: closed, or asked to open but unable to. A
    /// unit being opened is at zero and opens within `ContactorPlanner.openAfter`: not connected.
    public var closed: Bool { self == .closed || self == .cannotOpen }

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
/// (`Conn_RvrtTms`) and re-written at least every half of the revert time, as setpoints are.
/// Once the request ends, `Conn` = 1 is written; the limits then rise ramped as they do anyway.
enum ContactorPlanner {
    /// The longest bessd waits for a unit's power to fall before opening it anyway.
    static let openAfter: Duration = .seconds(5)
    /// |W| at or below which a unit is at zero: 50 W, or 1 % of its rating when that is more.
    static func threshold(rated: Watts?) -> Double { max(50, 0.01 * (rated?.value ?? 0)) }

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
    static func step(wantOpen: Bool, canOpen: Bool, conn: UInt16?, armedAt: MonotonicInstant, zeroSince: MonotonicInstant?,
                     reading: Timestamped<InverterReading>?, revert: Duration, now: MonotonicInstant) -> Step {
        guard wantOpen else { return conn == SunSpec.Controls.disconnect ? .close : .none }
        guard canOpen else { return .cannotOpen }
        if conn == SunSpec.Controls.disconnect { return now - armedAt >= revert / 2 ? .open : .none }
        guard let zeroSince else { return .none }
        if let reading, reading.takenAt >= zeroSince,
           abs(reading.value.activePower.value) <= threshold(rated: reading.value.ratedPower) {
            return .open
        }
        return now - zeroSince >= openAfter ? .open : .none
    }

    /// What the status shows for a unit in that state.
    static func state(wantOpen: Bool, canOpen: Bool, conn: UInt16?) -> ContactorState {
        if conn == SunSpec.Controls.disconnect { return .open }
        guard wantOpen else { return .closed }
        return canOpen ? .opening : .cannotOpen
    }
}
