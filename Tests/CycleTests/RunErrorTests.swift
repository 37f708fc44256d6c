import BessBase
import ControlCore
import Cycle
import Fieldbus
import Testing

@Suite("Start-up error codes: typed, with the stable names the journal and scripts read")
struct RunErrorCodeTests {
    static let rows: [(RunError.Code, String)] = [
        (.alreadyRunning, "ALREADY_RUNNING"),
        (.stateDirectoryFailed, "STATE_DIRECTORY_FAILED"),
        (.controlSocketInUse, "CONTROL_SOCKET_IN_USE"),
        (.controlSocketFailed, "CONTROL_SOCKET_FAILED"),
        (.metricsListenFailed, "METRICS_LISTEN_FAILED"),
        (.simulationRequired, "SIMULATION_REQUIRED"),
        (.reloadRefused, "RELOAD_REFUSED"),
        (.rigEmpty, "RIG_EMPTY"),
        (.fieldbus(.busOff), "CAN_BUS_OFF"),
        (.fieldbus(.modbusListenFailed), "MODBUS_LISTEN_FAILED"),
    ]

    @Test("each code prints its stable name", arguments: rows)
    func names(code: RunError.Code, name: String) {
        #expect(code.description == name)
        #expect(RunError(code, message: "m").description == "\(name): m")
    }

    @Test("every code has a name of its own, and a wrapped code is its own")
    func distinct() {
        #expect(Set(Self.rows.map(\.1)).count == Self.rows.count)
        #expect(Set(Self.rows.map(\.0)).count == Self.rows.count)
        #expect(RunError.Code.fieldbus(.busOff) == .fieldbus(.busOff))
    }

    @Test("a CAN or Modbus server failure keeps its code, with the context before its message")
    func wrapsFieldbus() {
        let error = RunError(FieldbusError(.interfaceMissing, message: "no can9"), context: "unit U1 BMS")
        #expect(error.code == .fieldbus(.interfaceMissing))
        #expect(error.description == "CAN_INTERFACE_MISSING: unit U1 BMS: no can9")
    }
}
