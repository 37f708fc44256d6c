@testable import Fieldbus
import Glibc
import Testing

@Suite("Modbus error codes")
struct ModbusErrorTests {
    /// libmodbus's MODBUS_ENOBASE.
    static let enobase: Int32 = 112_345_678

    @Test("a late reply refused by libmodbus (another transaction or unit id) is a malformed answer, not an exception")
    func lateReplies() {
        // EMBBADDATA (TCP: another transaction id) and EMBBADSLAVE (RTU: another unit answered).
        for value in [Self.enobase + 13, Self.enobase + 17] {
            #expect(ModbusError.from(errno: value, doing: "reading").code == "MODBUS_BAD_RESPONSE")
        }
        #expect(ModbusError.from(errno: Self.enobase + 4, doing: "reading").code == "MODBUS_EXCEPTION_4")
        #expect(ModbusError.from(errno: ETIMEDOUT, doing: "reading").code == "MODBUS_TIMEOUT")
    }
}
