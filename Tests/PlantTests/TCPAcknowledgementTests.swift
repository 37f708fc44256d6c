import ControlCore
import Fieldbus
import Foundation
import Simulation
import HILPlant
import TestSupport
import Testing

/// What bessd's Modbus TCP session puts on the wire besides its requests.
@Suite("Modbus TCP acknowledgements")
struct TCPAcknowledgementTests {
    @Test("an answer is acknowledged by the next request, not by a packet of its own, also after an idle gap")
    func acknowledgementsRideOnRequests() throws {
        let server = try SunSpecServer(host: "127.0.0.1", port: 0,
                                       profile: SunSpecDeviceProfile(measurementModel: 701, controlModel: 704, ratingW: 100_000))
        try server.start()
        defer { server.stop() }
        var unit = SimulatedUnit(capacityKWh: 250, maxPowerKW: 100, initialSOCPercent: 60)
        SunSpecPlantLink(server: server).exchange(&unit, frequencyHz: 50)
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), timeout: .seconds(2))
        var device = connection.unit(1)
        let inverter = try SunSpecInverter.open(&device)
        // The socket's own count of segments sent and of those that carried data (struct tcp_info
        // of <linux/tcp.h>: tcpi_segs_out at byte 136, tcpi_data_segs_out at 156, since Linux 4.6).
        func segments() throws -> (all: UInt32, data: UInt32) {
            var info = [UInt8](repeating: 0, count: 232)
            var length = socklen_t(info.count)
            let result = info.withUnsafeMutableBytes { getsockopt(connection.socket, Int32(IPPROTO_TCP), TCP_INFO, $0.baseAddress, &length) }
            try #require(result == 0 && length >= 160)
            func word(_ at: Int) -> UInt32 { info.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: at, as: UInt32.self) } }
            return (word(136), word(156))
        }
        // A 100 ms cycle's exchange: the reading, then the setpoint a moment later, then the link is
        // quiet until the kernel's delayed-ACK timer (≥ 40 ms) acknowledges the setpoint's answer on
        // its own: the idle gap after which the next reading's answer used to be acknowledged at once.
        func cycle(_ n: Int) throws {
            _ = try inverter.readStatus(&device)
            try inverter.command(.kilowatts(Double(n % 7)), revert: .seconds(10), rearm: false, &device)
            let answered = try segments().all
            #expect(try waitFor(seconds: 2) { try segments().all > answered }, "the setpoint's answer was never acknowledged")
        }
        for n in 0..<2 { try cycle(n) }
        let before = try segments()
        let rounds = 8
        for n in 0..<rounds { try cycle(n) }
        let after = try segments()
        let data = Int(after.data &- before.data)
        let acks = Int(after.all &- before.all) - data
        #expect(data == 2 * rounds)
        // The read's answer rides on the setpoint's request; the setpoint's answer has only the gap's
        // timer (one packet a round). Acknowledging each answer at once costs two.
        #expect(acks <= rounds + 1, "\(acks) ACK-only packets for \(rounds) rounds of two exchanges")
    }
}
