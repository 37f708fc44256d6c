import BessSystem
import Glibc

/// A Modbus failure with a stable code.
public struct ModbusError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `MODBUS_TIMEOUT`, `MODBUS_EXCEPTION_<n>`, `MODBUS_CONNECTION_LOST`, `MODBUS_CONNECT_FAILED`,
    /// `MODBUS_INVALID_REQUEST`, `MODBUS_BAD_RESPONSE` or `MODBUS_IO`.
    public var code: String
    public var message: String
    public var errno: Int32

    public init(code: String, message: String, errno: Int32 = 0) {
        self.code = code
        self.message = message
        self.errno = errno
    }

    public var description: String { "\(code): \(message)" }

    /// True when the connection must be re-established.
    public var isConnectionLost: Bool { code == "MODBUS_CONNECTION_LOST" || code == "MODBUS_CONNECT_FAILED" }

    /// libmodbus reports protocol exceptions as errno MODBUS_ENOBASE + exception code.
    static let enobase: Int32 = 112_345_678

    /// Classifies an errno left by a failed libmodbus call.
    static func from(errno value: Int32, doing what: String) -> ModbusError {
        if value > enobase, value < enobase + 32 {
            let exception = value - enobase
            let names = [1: "illegal function", 2: "illegal data address", 3: "illegal data value",
                         4: "server device failure", 5: "acknowledge", 6: "server device busy",
                         8: "memory parity error", 10: "gateway path unavailable", 11: "gateway target failed to respond"]
            if (12...17).contains(exception) {
                // EMBBADCRC, EMBBADDATA (e.g. another transaction id: a late reply), EMBBADEXC,
                // EMBUNKEXC, EMBMDATA, EMBBADSLAVE (another unit id answered: a late reply on RTU)
                return ModbusError(code: "MODBUS_BAD_RESPONSE", message: "\(what): malformed or unexpected response", errno: value)
            }
            return ModbusError(code: "MODBUS_EXCEPTION_\(exception)",
                               message: "\(what): device answered exception \(exception) (\(names[Int(exception)] ?? "unknown"))",
                               errno: value)
        }
        switch value {
        case ETIMEDOUT:
            return ModbusError(code: "MODBUS_TIMEOUT", message: "\(what): no answer in time", errno: value)
        case ECONNRESET, EPIPE, ENOTCONN, EBADF, ECONNREFUSED:
            return ModbusError(code: "MODBUS_CONNECTION_LOST",
                               message: "\(what): connection lost (\(SystemError.text(value)))", errno: value)
        case EINVAL:
            return ModbusError(code: "MODBUS_INVALID_REQUEST", message: "\(what): invalid request", errno: value)
        default:
            return ModbusError(code: "MODBUS_IO", message: "\(what): \(SystemError.text(value))", errno: value)
        }
    }
}
