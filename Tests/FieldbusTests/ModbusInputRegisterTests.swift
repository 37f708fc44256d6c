import BessBase
import BessSystem
import ControlCore
import Fieldbus
import Foundation
import Glibc
import Testing

/// Input registers (function 0x04) on the wire: bessd's own TCP framing against a libmodbus server
/// that maps holding registers at 40000 and input registers at 13022 (Sungrow's SOC).
@Suite("Modbus input registers")
struct ModbusInputRegisterTests {
    /// Serves one connection on a thread until the client closes it; returns the port and a
    /// semaphore signalled when the thread ends.
    private func serve() throws -> (port: Int, finished: DispatchSemaphore) {
        let served = ServedModbus(try ModbusServerContext(.tcp(host: "127.0.0.1", port: 0), holdingRegistersFrom: 40000, count: 2,
                                                    inputRegistersFrom: 13022, inputCount: 3, failure: .modbusServerFailed))
        served.server.load([0x01F4, 0x0320])
        served.server.loadInput([0x0258, 0xFC18, 0xFFFF])
        let listener = try TCPListener(host: "127.0.0.1", port: 0, backlog: 1)
        return (listener.port, served.serveOne(listener))
    }

    @Test("readRegisters(table: .input) reads 0x04; outside the input block it is exception 2; holding unchanged")
    func blockingRead() throws {
        let (port, finished) = try serve()
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), timeout: .seconds(2))
        #expect(try connection.readRegisters(unit: 1, table: .input, at: 13022, count: 3) == [0x0258, 0xFC18, 0xFFFF])
        #expect(try connection.readRegisters(unit: 1, at: 40000, count: 2) == [0x01F4, 0x0320])
        // The holding address is not an input register: the server answers 0x84, exception 2.
        #expect { _ = try connection.readRegisters(unit: 1, table: .input, at: 40000, count: 1) } throws: {
            ($0 as? DeviceError)?.code == .exception(2)
        }
        // Through a unit as any RegisterAccess: the table-aware read reaches the unit's 0x04 read.
        var unit = connection.unit(1)
        #expect(try unit.readRegisters(.input, at: 13022, count: 1) == [0x0258])
        #expect(try unit.readRegisters(.holding, at: 40001, count: 1) == [0x0320])
        connection.close()
        #expect(finished.wait(timeout: .now() + 5) == .success)
    }

    @Test("beginRead(table: .input) frames 0x04 and collectRegisters takes its answer")
    func framedRead() throws {
        let (port, finished) = try serve()
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), timeout: .seconds(2))
        try connection.connect()
        let pending = try connection.beginRead(unit: 1, table: .input, at: 13022, count: 3)
        #expect(pending.function == 0x04)
        #expect(pending.label.description == "reading 3 input registers at 13022 of unit 1")
        var words: [UInt16] = []
        var taken = false
        for _ in 0..<200 where !taken {
            taken = try connection.collectRegisters(pending, count: 3, into: &words)
            var fd = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            if !taken { _ = poll(&fd, 1, 10) }
        }
        #expect(words == [0x0258, 0xFC18, 0xFFFF])
        connection.close()
        #expect(finished.wait(timeout: .now() + 5) == .success)
    }

    @Test("A profiled Modbus BMS polls holding and input registers over TCP: SOC 60.0 %, limits 50/80 A")
    func profiledPoll() throws {
        let (port, finished) = try serve()
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: port), timeout: .seconds(2))
        let profile = DeviceProfile(
            name: "wire", kind: .bms, vendor: "Test", products: ["T"],
            transport: .modbus(ModbusProfileTransport(link: .tcp, defaultUnitID: 1)),
            signals: [modbusSignal("soc", .soc, 13022, table: .input, scale: 0.1),
                      modbusSignal("power", nil, 13023, .int32, table: .input, lowWordFirst: true),
                      modbusSignal("ccl", .chargeCurrentLimit, 40000, scale: 0.1),
                      modbusSignal("dcl", .dischargeCurrentLimit, 40001, scale: 0.1)],
            groups: [ProfileGroup(part: .status, presence: .required, period: .seconds(1)),
                     ProfileGroup(part: .limits, presence: .required, period: .seconds(1))])
        var bms = try ProfiledModbusBMS(profile: profile)
        var unit = connection.unit(1)
        let t = MonotonicInstant(nanoseconds: 1_000_000_000)
        try bms.poll(&unit, at: t)
        #expect(connection.requestCount == 2)
        #expect(bms.snapshot.status?.value.soc == Percent(60))
        #expect(bms.value(of: "power") == -1000)
        #expect(bms.snapshot.limits?.value.chargeCurrentLimit == Amps(50))
        #expect(bms.snapshot.limits?.value.dischargeCurrentLimit == Amps(80))
        connection.close()
        #expect(finished.wait(timeout: .now() + 5) == .success)
    }
}
