import BessBase
import ControlCore
import Fieldbus
import Testing

@Suite("CAN and server error codes: typed, with the stable names operators read")
struct FieldbusErrorCodeTests {
    static let rows: [(FieldbusError.Code, String, FieldbusError.Kind)] = [
        (.interfaceMissing, "CAN_INTERFACE_MISSING", .linkLost),
        (.interfaceNotCAN, "CAN_INTERFACE_NOT_CAN", .setup),
        (.interfaceDown, "CAN_INTERFACE_DOWN", .linkLost),
        (.stateUnknown, "CAN_STATE_UNKNOWN", .valueInvalid),
        (.socketFailed, "CAN_SOCKET_FAILED", .setup),
        (.bindFailed, "CAN_BIND_FAILED", .setup),
        (.transmitQueueFull, "CAN_TX_QUEUE_FULL", .congested),
        (.busOff, "CAN_BUS_OFF", .linkLost),
        (.sendFailed, "CAN_SEND_FAILED", .linkLost),
        (.receiveFailed, "CAN_RECEIVE_FAILED", .linkLost),
        (.frameShort, "CAN_FRAME_SHORT", .valueInvalid),
        (.restartFailed, "CAN_RESTART_FAILED", .setup),
        (.configureFailed, "CAN_CONFIGURE_FAILED", .setup),
        (.scadaServerFailed, "SCADA_SERVER_FAILED", .setup),
        (.scadaSerialFailed, "SCADA_SERIAL_FAILED", .setup),
        (.scadaListenFailed, "SCADA_LISTEN_FAILED", .setup),
        (.modbusServerFailed, "MODBUS_SERVER_FAILED", .setup),
        (.modbusSerialFailed, "MODBUS_SERIAL_FAILED", .setup),
        (.modbusListenFailed, "MODBUS_LISTEN_FAILED", .setup),
    ]

    @Test("each code prints its stable name and has its kind", arguments: rows)
    func names(code: FieldbusError.Code, name: String, kind: FieldbusError.Kind) {
        #expect(code.description == name)
        #expect(code.kind == kind)
        #expect(FieldbusError(code, message: "m").description == "\(name): m")
    }

    @Test("every code has a name of its own")
    func distinct() {
        #expect(Set(Self.rows.map(\.1)).count == Self.rows.count)
        #expect(Set(Self.rows.map(\.0)).count == Self.rows.count)
    }
}
