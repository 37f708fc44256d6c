public import BessBase
import ControlCore
import CSocketCAN
import Glibc

/// The state of a CAN controller as the kernel reports it (`enum can_state`).
public enum CANBusState: Int32, Sendable, CustomStringConvertible {
    case errorActive = 0, errorWarning, errorPassive, busOff, stopped, sleeping

    public var description: String {
        switch self {
        case .errorActive: "error-active"
        case .errorWarning: "error-warning"
        case .errorPassive: "error-passive"
        case .busOff: "bus-off"
        case .stopped: "stopped"
        case .sleeping: "sleeping"
        }
    }
}

/// Read-only queries of a SocketCAN interface through libsocketcan.
public enum CANInterface {
    /// The controller state of interface `name`; throws `CAN_INTERFACE_MISSING`, `CAN_INTERFACE_NOT_CAN`
    /// (a virtual interface, or netlink not allowed) or `CAN_STATE_UNKNOWN`.
    /// The corresponding C function is `can_get_state`.
    public static func state(of name: String) throws(FieldbusError) -> CANBusState {
        guard if_nametoindex(name) != 0 else {
            throw FieldbusError(.interfaceMissing, message: "no network interface named \(name)", errno: ENODEV)
        }
        var raw: Int32 = 0
        guard can_get_state(name, &raw) == 0 else {
            throw FieldbusError(.interfaceNotCAN, message: "\(name) is not a CAN interface (or its state cannot be read)",
                                errno: errno)
        }
        guard let state = CANBusState(rawValue: raw) else {
            throw FieldbusError(.stateUnknown, message: "\(name) reports state \(raw)")
        }
        return state
    }
}
