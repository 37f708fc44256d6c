public import BessBase
import ControlCore
public import Fieldbus

/// Why a run could not start, a device could not be opened, or a reload was refused: a typed code
/// and a message for a person, printed `CODE: message`. The code's `description` is the stable
/// name the journal (`BESS_CODE=`), the start-up line and operators' scripts read
/// (`ALREADY_RUNNING`, …); a failure of a CAN interface or a Modbus server keeps its own code
/// (`CAN_BUS_OFF`).
public typealias RunError = CodedError<RunErrorCode>

/// The stable code of a `RunError` (`RunError.Code`): a struct over a private enum, so the set is
/// closed and matched by value, never by text.
public struct RunErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case alreadyRunning, stateDirectoryFailed, controlSocketInUse, controlSocketFailed, metricsListenFailed
        case simulationRequired, reloadRefused, rigEmpty
        case fieldbus(FieldbusError.Code)
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `ALREADY_RUNNING`: another bessd holds the state directory's lock.
    public static let alreadyRunning = Self(.alreadyRunning)
    /// `STATE_DIRECTORY_FAILED`: the state directory or its lock file cannot be made, opened or locked.
    public static let stateDirectoryFailed = Self(.stateDirectoryFailed)
    /// `CONTROL_SOCKET_IN_USE`: a live process answers on the control socket.
    public static let controlSocketInUse = Self(.controlSocketInUse)
    /// `CONTROL_SOCKET_FAILED`: the control socket cannot be made, bound or listened on.
    public static let controlSocketFailed = Self(.controlSocketFailed)
    /// `METRICS_LISTEN_FAILED`: `metrics_listen` is malformed or its port cannot be listened on.
    public static let metricsListenFailed = Self(.metricsListenFailed)
    /// `SIMULATION_REQUIRED`: the configuration simulates something, and the site is real devices only.
    public static let simulationRequired = Self(.simulationRequired)
    /// `RELOAD_REFUSED`: the reloaded configuration changes what only a restart may change.
    public static let reloadRefused = Self(.reloadRefused)
    /// `RIG_EMPTY`: the HIL rig has no device for the plant to serve.
    public static let rigEmpty = Self(.rigEmpty)
    /// A CAN interface or a Modbus server that could not be opened, under its own name.
    public static func fieldbus(_ code: FieldbusError.Code) -> Self { Self(.fieldbus(code)) }

    /// The stable name the journal and the scripts read.
    public var description: String {
        switch value {
        case .alreadyRunning: "ALREADY_RUNNING"
        case .stateDirectoryFailed: "STATE_DIRECTORY_FAILED"
        case .controlSocketInUse: "CONTROL_SOCKET_IN_USE"
        case .controlSocketFailed: "CONTROL_SOCKET_FAILED"
        case .metricsListenFailed: "METRICS_LISTEN_FAILED"
        case .simulationRequired: "SIMULATION_REQUIRED"
        case .reloadRefused: "RELOAD_REFUSED"
        case .rigEmpty: "RIG_EMPTY"
        case .fieldbus(let code): code.description
        }
    }
}

extension CodedError where StableCode == RunErrorCode {
    /// A CAN interface's or Modbus server's failure, its code kept and `context` (the unit, the
    /// meter) before its message.
    public init(_ error: FieldbusError, context: String) {
        self.init(.fieldbus(error.code), message: "\(context): \(error.message)")
    }
}
