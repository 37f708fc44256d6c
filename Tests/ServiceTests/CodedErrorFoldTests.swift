@testable import bess_hil
import BessBase
import ControlCore
import Cycle
import Fieldbus
import Glibc
import Service
import Testing
import Uplink

/// The error types folded into `CodedError<Code>`: one shape, and each code still printed under the
/// name operators' scripts read (`CODE: message`).
@Suite("Errors in the CodedError shape")
struct CodedErrorFoldTests {
    @Test("RunError is a CodedError; RELOAD_REFUSED and a fieldbus code keep their printed names")
    func runError() {
        #expect(RunError.self == CodedError<RunErrorCode>.self)
        #expect("\(RunError(.reloadRefused, message: "mode changed"))" == "RELOAD_REFUSED: mode changed")
        let bus = RunError(FieldbusError(.busOff, message: "bus off"), context: "unit U1")
        #expect(bus.description == "CAN_BUS_OFF: unit U1: bus off")
    }

    @Test("LatchStoreError is a CodedError; LATCH_STATE_UNWRITABLE keeps its name and its kind")
    func latchStoreError() {
        #expect(LatchStoreError.self == CodedError<LatchStoreErrorCode>.self)
        let error = LatchStoreError(.stateUnwritable, message: "disk full")
        #expect("\(error)" == "LATCH_STATE_UNWRITABLE: disk full" && error.kind == .io)
    }

    @Test("UplinkError is a CodedError; an HTTP status and a spool failure keep their names, kinds and message")
    func uplinkError() {
        #expect(UplinkError.self == CodedError<UplinkErrorCode>.self)
        #expect("\(UplinkError(.http(503), message: "busy"))" == "UPLINK_HTTP_503: busy")
        let spool = UplinkError(spool: SpoolError(.full, message: "no space"))
        #expect("\(spool)" == "SPOOL_FULL: no space" && spool.kind == .spool(.storageFull))
    }

    @Test("ScenarioError is a CodedError written as before, ScenarioError(code, sentence)")
    func scenarioError() {
        #expect(ScenarioError.self == CodedError<ScenarioErrorCode>.self)
        #expect("\(ScenarioError(.plotFailed, "gnuplot exited 1"))" == "SCENARIO_PLOT_FAILED: gnuplot exited 1")
    }

    @Test("SpoolError is a CodedError; SPOOL_FULL prints as before and keeps its errno, 0 meaning none")
    func spoolError() {
        #expect(SpoolError.self == CodedError<SpoolErrorCode>.self)
        let full = SpoolError(.full, message: "writing seg-1: No space left on device", errno: ENOSPC)
        #expect("\(full)" == "SPOOL_FULL: writing seg-1: No space left on device")
        #expect(full.systemError == ENOSPC && full.errno == ENOSPC && full.kind == .storageFull)
        let none = SpoolError(.io, message: "m", errno: 0)
        #expect(none.systemError == nil && none == SpoolError(.io, message: "m"))
    }

    @Test("FieldbusError is a CodedError; CAN_INTERFACE_MISSING prints as before and keeps ENODEV")
    func fieldbusError() {
        #expect(FieldbusError.self == CodedError<FieldbusErrorCode>.self)
        let missing = FieldbusError(.interfaceMissing, message: "no network interface named can9", errno: ENODEV)
        #expect("\(missing)" == "CAN_INTERFACE_MISSING: no network interface named can9")
        #expect(missing.systemError == ENODEV && missing.errno == ENODEV && missing.kind == .linkLost)
        #expect(FieldbusError(.frameShort, message: "m").errno == 0)
    }

    @Test("DeviceError is a CodedError; MODBUS_CONNECTION_LOST prints as before, its errno survives wrapping")
    func deviceError() {
        #expect(DeviceError.self == CodedError<DeviceErrorCode>.self)
        let lost = DeviceError(.connectionLost, message: "reading: connection lost (Connection reset by peer)", errno: ECONNRESET)
        #expect("\(lost)" == "MODBUS_CONNECTION_LOST: reading: connection lost (Connection reset by peer)")
        let wrapped = DeviceError(wrapping: lost)
        #expect(wrapped.systemError == ECONNRESET && wrapped.errno == ECONNRESET && wrapped.isConnectionLost)
        #expect("\(DeviceError(.exception(2), message: "m"))" == "MODBUS_EXCEPTION_2: m")
    }
}
