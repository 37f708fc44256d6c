import BessBase
import CModbus
import ControlCore
import CSocketCAN
import Fieldbus
import Foundation
import Glibc
import Testing

@Suite("C libraries are linked and answer")
struct LinkedLibraryTests {
    @Test("libmodbus: version is 3.1 or newer")
    func modbusVersion() {
        let parts = ModbusLibrary.version.split(separator: ".").compactMap { Int($0) }
        #expect(parts.count == 3)
        #expect(parts[0] == 3 && parts[1] >= 1)
    }

    @Test("libmodbus: a TCP client reads holding registers from a libmodbus server on loopback")
    func modbusLoopback() async throws {
        // Server: registers 40000… hold 0x5375 0x6E53 ("SunS") then 1, 66.
        let server = try #require(modbus_new_tcp("127.0.0.1", 0))
        let mapping = try #require(modbus_mapping_new_start_address(0, 0, 0, 0, 40000, 4, 0, 0))
        mapping.pointee.tab_registers[0] = 0x5375
        mapping.pointee.tab_registers[1] = 0x6E53
        mapping.pointee.tab_registers[2] = 1
        mapping.pointee.tab_registers[3] = 66
        let listener = modbus_tcp_listen(server, 1)
        #expect(listener >= 0)
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) }
        }
        let port = Int32(UInt16(bigEndian: address.sin_port))
        #expect(port > 0)

        let serverBox = UncheckedBox((server, mapping, listener))
        let finished = DispatchSemaphore(value: 0)
        let serverThread = Thread {
            defer { finished.signal() }
            var socket = serverBox.value.2
            guard modbus_tcp_accept(serverBox.value.0, &socket) >= 0 else { return }
            var request = [UInt8](repeating: 0, count: 260)
            while true {
                let count = modbus_receive(serverBox.value.0, &request)
                if count <= 0 { break }
                _ = modbus_reply(serverBox.value.0, request, count, serverBox.value.1)
            }
        }
        serverThread.start()

        let client = try #require(modbus_new_tcp("127.0.0.1", port))
        defer { modbus_free(client) }
        modbus_set_response_timeout(client, 2, 0)
        #expect(modbus_connect(client) == 0)
        var registers = [UInt16](repeating: 0, count: 4)
        let read = modbus_read_registers(client, 40000, 4, &registers)
        #expect(read == 4)
        #expect(registers == [0x5375, 0x6E53, 1, 66])
        // An address outside the map is a Modbus exception, not a crash.
        var outside = [UInt16](repeating: 0, count: 1)
        #expect(modbus_read_registers(client, 30000, 1, &outside) == -1)
        // libmodbus reports the exception as MODBUS_ENOBASE + 2 (illegal data address), not a timeout.
        #expect(errno == 112_345_678 + 2)
        modbus_close(client)
        // The server thread sees the connection close and returns; only then are its handles freed.
        #expect(finished.wait(timeout: .now() + 5) == .success)
        close(listener)
        modbus_mapping_free(mapping)
        modbus_free(server)
    }

    @Test("libsocketcan: a missing interface and a non-CAN interface are coded errors, not crashes")
    func socketcanErrors() {
        #expect(throws: FieldbusError(.interfaceMissing, message: "no network interface named bessd-none0", errno: ENODEV)) {
            _ = try CANInterface.state(of: "bessd-none0")
        }
        do {
            let state = try CANInterface.state(of: "lo")
            Issue.record("loopback reported a CAN state: \(state)")
        } catch {
            #expect(error.code.description == "CAN_INTERFACE_NOT_CAN")
            #expect(error.kind == .setup)
        }
    }

    @Test("SocketCAN headers: frame layout and flags are what the kernel uses")
    func canHeaders() {
        #expect(MemoryLayout<can_frame>.size == 16)
        #expect(CAN_EFF_FLAG == 0x8000_0000)
        #expect(CAN_ERR_FLAG == 0x2000_0000)
        #expect(CAN_SFF_MASK == 0x7FF)
    }
}

/// Carries non-Sendable C handles into the test's server thread; the test joins the exchange before
/// freeing them, so only one thread uses them at a time.
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
