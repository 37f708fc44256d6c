public import BessBase
import ControlCore

/// A failure of a CAN interface, or of a Modbus server bessd serves (SCADA, the plant): a typed code
/// and the errno behind it.
///
/// The code is typed (`FieldbusError.Code.busOff`); the journal (`BESS_CODE=`), `bessctl status` and
/// the control socket print its stable name (`CAN_BUS_OFF`), which operators' recipes read. What the
/// caller does about it follows from the code's `kind`.
public typealias FieldbusError = CodedError<FieldbusErrorCode>

/// The stable code of a `FieldbusError` (`FieldbusError.Code`): a struct over a private enum, so the set
/// is closed and matched by value, never by text.
public struct FieldbusErrorCode: Hashable, Sendable, CustomStringConvertible, ErrorCodeWithKind, ErrorCodeWithErrno {
    /// What a failure says about the interface, and so what its owner does next.
    public enum Kind: Sendable, Equatable {
        /// The interface is missing, down or bus-off, or reading it failed: reopen with back-off.
        case linkLost
        /// The bus does not drain: a frame was dropped, the interface itself is up.
        case congested
        /// Something arrived or was reported that cannot be used (a short frame, an unknown state).
        case valueInvalid
        /// The host refused to open, configure or serve it: a socket, a bind, a bitrate, a
        /// listening port, or an interface that is not CAN.
        case setup
    }

    private enum Value: Hashable, Sendable {
        case interfaceMissing, interfaceNotCAN, interfaceDown, stateUnknown, socketFailed, bindFailed
        case transmitQueueFull, busOff, sendFailed, receiveFailed, frameShort, restartFailed, configureFailed
        case scadaServerFailed, scadaSerialFailed, scadaListenFailed
        case modbusServerFailed, modbusSerialFailed, modbusListenFailed
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `CAN_INTERFACE_MISSING`: no network interface of that name.
    public static let interfaceMissing = Self(.interfaceMissing)
    /// `CAN_INTERFACE_NOT_CAN`: the interface exists but is not CAN (or its state cannot be read).
    public static let interfaceNotCAN = Self(.interfaceNotCAN)
    /// `CAN_INTERFACE_DOWN`: the interface went away or down while it was read.
    public static let interfaceDown = Self(.interfaceDown)
    /// `CAN_STATE_UNKNOWN`: the controller reports a state bessd does not know.
    public static let stateUnknown = Self(.stateUnknown)
    /// `CAN_SOCKET_FAILED`: a CAN socket could not be opened or set up.
    public static let socketFailed = Self(.socketFailed)
    /// `CAN_BIND_FAILED`: the socket could not be bound to the interface.
    public static let bindFailed = Self(.bindFailed)
    /// `CAN_TX_QUEUE_FULL`: the transmit queue is full; the frame was dropped.
    public static let transmitQueueFull = Self(.transmitQueueFull)
    /// `CAN_BUS_OFF`: the controller left the bus (or the interface is down).
    public static let busOff = Self(.busOff)
    /// `CAN_SEND_FAILED`: any other failure to queue a frame.
    public static let sendFailed = Self(.sendFailed)
    /// `CAN_RECEIVE_FAILED`: waiting for or reading a frame failed.
    public static let receiveFailed = Self(.receiveFailed)
    /// `CAN_FRAME_SHORT`: a read returned less than a whole frame.
    public static let frameShort = Self(.frameShort)
    /// `CAN_RESTART_FAILED`: a bus-off controller could not be restarted.
    public static let restartFailed = Self(.restartFailed)
    /// `CAN_CONFIGURE_FAILED`: bitrate, restart-ms or start of a managed interface refused.
    public static let configureFailed = Self(.configureFailed)
    /// `SCADA_SERVER_FAILED`: the SCADA Modbus server's context or register map could not be made.
    public static let scadaServerFailed = Self(.scadaServerFailed)
    /// `SCADA_SERIAL_FAILED`: the SCADA serial line could not be opened.
    public static let scadaSerialFailed = Self(.scadaSerialFailed)
    /// `SCADA_LISTEN_FAILED`: the SCADA server could not listen on its port.
    public static let scadaListenFailed = Self(.scadaListenFailed)
    /// `MODBUS_SERVER_FAILED`: a simulated device's server context or register map could not be made.
    public static let modbusServerFailed = Self(.modbusServerFailed)
    /// `MODBUS_SERIAL_FAILED`: a simulated device's serial line could not be opened.
    public static let modbusSerialFailed = Self(.modbusSerialFailed)
    /// `MODBUS_LISTEN_FAILED`: a simulated device could not listen on its port.
    public static let modbusListenFailed = Self(.modbusListenFailed)

    /// What the failure says about the interface.
    public var kind: Kind {
        switch value {
        case .interfaceMissing, .interfaceDown, .busOff, .sendFailed, .receiveFailed: .linkLost
        case .transmitQueueFull: .congested
        case .stateUnknown, .frameShort: .valueInvalid
        case .interfaceNotCAN, .socketFailed, .bindFailed, .restartFailed, .configureFailed,
             .scadaServerFailed, .scadaSerialFailed, .scadaListenFailed,
             .modbusServerFailed, .modbusSerialFailed, .modbusListenFailed: .setup
        }
    }

    /// The stable name the journal and the control socket print.
    public var description: String {
        switch value {
        case .interfaceMissing: "CAN_INTERFACE_MISSING"
        case .interfaceNotCAN: "CAN_INTERFACE_NOT_CAN"
        case .interfaceDown: "CAN_INTERFACE_DOWN"
        case .stateUnknown: "CAN_STATE_UNKNOWN"
        case .socketFailed: "CAN_SOCKET_FAILED"
        case .bindFailed: "CAN_BIND_FAILED"
        case .transmitQueueFull: "CAN_TX_QUEUE_FULL"
        case .busOff: "CAN_BUS_OFF"
        case .sendFailed: "CAN_SEND_FAILED"
        case .receiveFailed: "CAN_RECEIVE_FAILED"
        case .frameShort: "CAN_FRAME_SHORT"
        case .restartFailed: "CAN_RESTART_FAILED"
        case .configureFailed: "CAN_CONFIGURE_FAILED"
        case .scadaServerFailed: "SCADA_SERVER_FAILED"
        case .scadaSerialFailed: "SCADA_SERIAL_FAILED"
        case .scadaListenFailed: "SCADA_LISTEN_FAILED"
        case .modbusServerFailed: "MODBUS_SERVER_FAILED"
        case .modbusSerialFailed: "MODBUS_SERIAL_FAILED"
        case .modbusListenFailed: "MODBUS_LISTEN_FAILED"
        }
    }
}
