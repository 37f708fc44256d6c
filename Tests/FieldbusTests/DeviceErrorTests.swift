import BessBase
import ControlCore
@testable import Fieldbus
import Glibc
import Testing

@Suite("Modbus error codes")
struct DeviceErrorTests {
    /// libmodbus's MODBUS_ENOBASE.
    static let enobase: Int32 = 112_345_678

    /// libmodbus's errno and the code it becomes. EMBBADDATA (TCP: another transaction id) and
    /// EMBBADSLAVE (RTU: another unit answered) are late replies; exception 4 and a timeout for contrast.
    static let codes: [(errno: Int32, code: String)] = [
        (enobase + 13, "MODBUS_BAD_RESPONSE"), (enobase + 17, "MODBUS_BAD_RESPONSE"),
        (enobase + 4, "MODBUS_EXCEPTION_4"), (ETIMEDOUT, "MODBUS_TIMEOUT"),
    ]

    /// Another transaction or unit id.
    @Test("a late reply refused by libmodbus is a malformed answer, not an exception",
          arguments: codes)
    func lateReplies(errno: Int32, code: String) {
        #expect(DeviceError.modbus(errno: errno, doing: "reading").code.description == code)
    }
}

@Suite("Device error codes: typed, with the stable names operators read")
struct DeviceErrorCodeTests {
    static let rows: [(DeviceError.Code, String, DeviceError.Kind)] = [
        (.timeout, "MODBUS_TIMEOUT", .timeout),
        (.exception(2), "MODBUS_EXCEPTION_2", .deviceRefused),
        (.connectionLost, "MODBUS_CONNECTION_LOST", .linkLost),
        (.connectFailed, "MODBUS_CONNECT_FAILED", .linkLost),
        (.invalidRequest, "MODBUS_INVALID_REQUEST", .deviceRefused),
        (.badResponse, "MODBUS_BAD_RESPONSE", .deviceRefused),
        (.io, "MODBUS_IO", .linkLost),
        (.sunspecNotFound, "SUNSPEC_NOT_FOUND", .deviceRefused),
        (.sunspecChainBroken, "SUNSPEC_CHAIN_BROKEN", .deviceRefused),
        (.sunspecModelMissing, "SUNSPEC_MODEL_MISSING", .deviceRefused),
        (.sunspecValueInvalid, "SUNSPEC_VALUE_INVALID", .valueInvalid),
        (.registerValueInvalid, "REGISTER_VALUE_INVALID", .valueInvalid),
    ]

    @Test("each code prints its stable name and has the kind the worker acts on", arguments: rows)
    func names(code: DeviceError.Code, name: String, kind: DeviceError.Kind) {
        #expect(code.description == name)
        #expect(code.kind == kind)
        #expect(DeviceError(code, message: "m").description == "\(name): m")
    }

    @Test("only a refused or lost connection asks a reconnect; an I/O error is a link failure only")
    func connectionLost() {
        #expect(DeviceError(.connectionLost, message: "").isConnectionLost)
        #expect(DeviceError(.connectFailed, message: "").isConnectionLost)
        #expect(!DeviceError(.io, message: "").isConnectionLost)
        #expect(!DeviceError(.timeout, message: "").isConnectionLost)
        #expect(DeviceError.Code.exception(6).exceptionNumber == 6 && DeviceError.Code.timeout.exceptionNumber == nil)
    }
}
