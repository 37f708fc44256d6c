public import BessBase
import BessSystem
import ControlCore
import Glibc

/// A failure of a Modbus device or of the link to it, SunSpec discovery and register maps
/// included: one error type from the socket to the worker, so nothing is re-wrapped on the way and
/// nothing is classified again by its text.
///
/// The code is typed (`DeviceError.Code.timeout`); the journal, `bessctl status` and the control
/// socket print its stable name (`MODBUS_TIMEOUT`), which operators' recipes read. What the worker
/// does about it follows from the code's `kind`.
public typealias DeviceError = CodedError<DeviceErrorCode>

/// The stable code of a `DeviceError` (`DeviceError.Code`): a struct over a private enum, so the set
/// is closed and matched by value, never by text.
public struct DeviceErrorCode: Hashable, Sendable, CustomStringConvertible, ErrorCodeWithKind, ErrorCodeWithErrno {
    /// What a failure says about the wire, and so what the worker does next.
    public enum Kind: Sendable, Equatable {
        /// The connection itself is gone (refused, reset, closed, an I/O error): reconnect.
        case linkLost
        /// No answer in time.
        case timeout
        /// The device answered, but not usefully: a Modbus exception, a malformed answer, a model
        /// chain that does not walk, a request it cannot serve.
        case deviceRefused
        /// The device answered with, or was asked for, a value that cannot be used (W not
        /// implemented, a setpoint that does not fit its register).
        case valueInvalid
    }

    private enum Value: Hashable, Sendable {
        case timeout, exception(Int32), connectionLost, connectFailed, invalidRequest, badResponse, io
        case sunspecNotFound, sunspecChainBroken, sunspecModelMissing, sunspecValueInvalid, registerValueInvalid
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `MODBUS_TIMEOUT`: no answer within the request's timeout.
    public static let timeout = Self(.timeout)
    /// `MODBUS_CONNECTION_LOST`: the connection was reset, closed or refused.
    public static let connectionLost = Self(.connectionLost)
    /// `MODBUS_CONNECT_FAILED`: the connection could not be opened (a wrong address, nothing listening).
    public static let connectFailed = Self(.connectFailed)
    /// `MODBUS_INVALID_REQUEST`: a request bessd will not send (out of range, unit id not valid).
    public static let invalidRequest = Self(.invalidRequest)
    /// `MODBUS_BAD_RESPONSE`: a malformed or unexpected answer (a late reply, another unit answered).
    public static let badResponse = Self(.badResponse)
    /// `MODBUS_IO`: any other failure of the link.
    public static let io = Self(.io)
    /// `SUNSPEC_NOT_FOUND`: no `SunS` marker at 40000, 0 or 50000.
    public static let sunspecNotFound = Self(.sunspecNotFound)
    /// `SUNSPEC_CHAIN_BROKEN`: the model chain does not walk to its end model.
    public static let sunspecChainBroken = Self(.sunspecChainBroken)
    /// `SUNSPEC_MODEL_MISSING`: a model bessd needs is not on the device.
    public static let sunspecModelMissing = Self(.sunspecModelMissing)
    /// `SUNSPEC_VALUE_INVALID`: a SunSpec value is unusable or a setpoint does not fit.
    public static let sunspecValueInvalid = Self(.sunspecValueInvalid)
    /// `REGISTER_VALUE_INVALID`: a register map's value is unusable or a setpoint does not fit.
    public static let registerValueInvalid = Self(.registerValueInvalid)
    /// `MODBUS_EXCEPTION_<n>`: the device answered Modbus exception `n`.
    public static func exception(_ number: Int32) -> Self { Self(.exception(number)) }

    /// The Modbus exception number, for `MODBUS_EXCEPTION_<n>`.
    public var exceptionNumber: Int32? {
        if case .exception(let number) = value { return number }
        return nil
    }

    public var kind: Kind {
        switch value {
        case .connectionLost, .connectFailed, .io: .linkLost
        case .timeout: .timeout
        case .sunspecValueInvalid, .registerValueInvalid: .valueInvalid
        case .exception, .invalidRequest, .badResponse, .sunspecNotFound, .sunspecChainBroken, .sunspecModelMissing: .deviceRefused
        }
    }

    /// The stable name the journal and the control socket print.
    public var description: String {
        switch value {
        case .timeout: "MODBUS_TIMEOUT"
        case .exception(let number): "MODBUS_EXCEPTION_\(number)"
        case .connectionLost: "MODBUS_CONNECTION_LOST"
        case .connectFailed: "MODBUS_CONNECT_FAILED"
        case .invalidRequest: "MODBUS_INVALID_REQUEST"
        case .badResponse: "MODBUS_BAD_RESPONSE"
        case .io: "MODBUS_IO"
        case .sunspecNotFound: "SUNSPEC_NOT_FOUND"
        case .sunspecChainBroken: "SUNSPEC_CHAIN_BROKEN"
        case .sunspecModelMissing: "SUNSPEC_MODEL_MISSING"
        case .sunspecValueInvalid: "SUNSPEC_VALUE_INVALID"
        case .registerValueInvalid: "REGISTER_VALUE_INVALID"
        }
    }
}

extension CodedError where StableCode == DeviceErrorCode {
    /// Any error of a device exchange: itself when it is one; anything else unexpected is a value
    /// the device gave that bessd cannot use.
    public init(wrapping error: any Error) {
        self = error as? DeviceError ?? DeviceError(.sunspecValueInvalid, message: "\(error)")
    }


    /// True when the connection must be re-established.
    public var isConnectionLost: Bool { kind == .linkLost && code != .io }

    /// libmodbus reports protocol exceptions as errno MODBUS_ENOBASE + exception code.
    static let enobase: Int32 = 112_345_678

    /// Classifies an errno left by a failed libmodbus call or socket call.
    static func modbus(errno value: Int32, doing what: String) -> DeviceError {
        if value > enobase, value < enobase + 32 {
            let exception = value - enobase
            let names = [1: "illegal function", 2: "illegal data address", 3: "illegal data value",
                         4: "server device failure", 5: "acknowledge", 6: "server device busy",
                         8: "memory parity error", 10: "gateway path unavailable", 11: "gateway target failed to respond"]
            if (12...17).contains(exception) {
                // EMBBADCRC, EMBBADDATA (e.g. another transaction id: a late reply), EMBBADEXC,
                // EMBUNKEXC, EMBMDATA, EMBBADSLAVE (another unit id answered: a late reply on RTU)
                return DeviceError(.badResponse, message: "\(what): malformed or unexpected response", errno: value)
            }
            return DeviceError(.exception(exception),
                               message: "\(what): device answered exception \(exception) (\(names[Int(exception)] ?? "unknown"))",
                               errno: value)
        }
        switch value {
        case ETIMEDOUT:
            return DeviceError(.timeout, message: "\(what): no answer in time", errno: value)
        case ECONNRESET, EPIPE, ENOTCONN, EBADF, ECONNREFUSED:
            return DeviceError(.connectionLost, message: "\(what): connection lost (\(SystemError.text(value)))", errno: value)
        case EINVAL:
            return DeviceError(.invalidRequest, message: "\(what): invalid request", errno: value)
        default:
            return DeviceError(.io, message: "\(what): \(SystemError.text(value))", errno: value)
        }
    }
}
