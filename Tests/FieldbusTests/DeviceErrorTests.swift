@testable import Fieldbus
import Glibc
import Testing

@Suite("Modbus error codes")
struct DeviceErrorTests {
    /// libmodbus's MODBUS_ENOBASE.
    static let enobase: Int32 = 112_345_678

    @Test("a late reply refused by libmodbus (another transaction or unit id) is a malformed answer, not an exception")
    func lateReplies() {
        // EMBBADDATA (TCP: another transaction id) and EMBBADSLAVE (RTU: another unit answered).
        for value in [Self.enobase + 13, Self.enobase + 17] {
            #expect(DeviceError.modbus(errno: value, doing: "reading").code.description == "MODBUS_BAD_RESPONSE")
        }
        #expect(DeviceError.modbus(errno: Self.enobase + 4, doing: "reading").code.description == "MODBUS_EXCEPTION_4")
        #expect(DeviceError.modbus(errno: ETIMEDOUT, doing: "reading").code.description == "MODBUS_TIMEOUT")
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

    @Test("only a refused or lost connection asks for a reconnect; an I/O error is a link failure but not a lost connection")
    func connectionLost() {
        #expect(DeviceError(.connectionLost, message: "").isConnectionLost)
        #expect(DeviceError(.connectFailed, message: "").isConnectionLost)
        #expect(!DeviceError(.io, message: "").isConnectionLost)
        #expect(!DeviceError(.timeout, message: "").isConnectionLost)
        #expect(DeviceError.Code.exception(6).exceptionNumber == 6 && DeviceError.Code.timeout.exceptionNumber == nil)
    }
}
