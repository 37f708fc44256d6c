import BessBase
import ControlCore
import Fieldbus
import Glibc
import HILPlant
import Testing

/// bessd's own Modbus TCP framing (`ModbusConnection.begin`/`collect`, what the bus poller sends),
/// against the plant's libmodbus server: frames of different sizes built one after another in the
/// connection's reused send buffer, and a PDU no frame can carry.
@Suite("Modbus TCP framing")
struct ModbusFramingTests {
    private func connected() throws -> (SunSpecServer, ModbusConnection) {
        let server = try SunSpecServer(host: "127.0.0.1", port: 0,
                                       profile: SunSpecDeviceProfile(measurementModel: 701, controlModel: 704, ratingW: 100_000))
        try server.start()
        let connection = try ModbusConnection(endpoint: .tcp(host: "127.0.0.1", port: server.port), timeout: .seconds(2))
        var device = connection.unit(1)
        _ = try SunSpecInverter.open(&device)  // connects and settles the session
        return (server, connection)
    }

    /// The test's own encoding of the two requests (Modbus Application Protocol 1.1b3, 6.3 and
    /// 6.12), written apart from the connection's.
    private static func readPDU(at address: Int, count: Int) -> [UInt8] {
        [0x03, UInt8(address >> 8), UInt8(address & 0xFF), UInt8(count >> 8), UInt8(count & 0xFF)]
    }

    private static func writePDU(at address: Int, _ values: [UInt16]) -> [UInt8] {
        var pdu: [UInt8] = [0x10, UInt8(address >> 8), UInt8(address & 0xFF), UInt8(values.count >> 8),
                            UInt8(values.count & 0xFF), UInt8(2 * values.count)]
        for value in values { pdu += [UInt8(value >> 8), UInt8(value & 0xFF)] }
        return pdu
    }

    private func answer(_ connection: ModbusConnection, _ pdu: [UInt8], _ label: ModbusRequestLabel) throws -> [UInt8] {
        try collected(connection, try connection.begin(unit: 1, pdu, label))
    }

    @Test("long write, short read, long read: each frame whole, none with the last one's bytes")
    func framesOfEverySizeInTurn() throws {
        let (server, connection) = try connected()
        defer { server.stop() }
        let base = SunSpecImage.base
        // The common model's manufacturer and model strings (32 registers), read and written back as they are.
        let long = Self.readPDU(at: base + 4, count: 32)
        let words = try #require(ModbusConnection.registers(
            try answer(connection, long, ModbusRequestLabel(.readRegisters, unit: 1, address: base + 4, count: 32)), count: 32))
        let write = Self.writePDU(at: base + 4, words)
        #expect(write.count == 6 + 64)
        let echo = try answer(connection, write, ModbusRequestLabel(.writeRegisters, unit: 1, address: base + 4, count: 32))
        // A 0x10 answer echoes the request's function, address and quantity: its first 5 bytes.
        #expect(echo == Array(write.prefix(5)))
        #expect(ModbusConnection.echoes(echo, address: base + 4, count: 32))
        // Two registers after a 77-byte frame: "SunS".
        let marker = try answer(connection, Self.readPDU(at: base, count: 2),
                                ModbusRequestLabel(.readRegisters, unit: 1, address: base, count: 2))
        #expect(ModbusConnection.registers(marker, count: 2) == [0x5375, 0x6E53])
        let again = try answer(connection, long, ModbusRequestLabel(.readRegisters, unit: 1, address: base + 4, count: 32))
        #expect(ModbusConnection.registers(again, count: 32) == words)
    }

    @Test("an empty or oversized PDU is MODBUS_INVALID_REQUEST before anything is sent")
    func oversizedPDURefused() throws {
        let (server, connection) = try connected()
        defer { server.stop() }
        let sent = connection.requestCount
        for size in [0, 254, 300] {
            let pdu = [UInt8](repeating: 0x10, count: size)
            #expect {
                _ = try connection.begin(unit: 1, pdu, ModbusRequestLabel(.writeRegisters, unit: 1, address: 0, count: 0))
            } throws: { ($0 as? DeviceError)?.code.description == "MODBUS_INVALID_REQUEST" }
        }
        #expect(connection.requestCount == sent)
        // The session is untouched: the next request is answered.
        let marker = try answer(connection, Self.readPDU(at: SunSpecImage.base, count: 2),
                                ModbusRequestLabel(.readRegisters, unit: 1, address: SunSpecImage.base, count: 2))
        #expect(ModbusConnection.registers(marker, count: 2) == [0x5375, 0x6E53])
    }

    private func collected(_ connection: ModbusConnection, _ pending: ModbusConnection.Pending) throws -> [UInt8] {
        while true {
            if let reply = try connection.collect(pending, wait: true) { return reply }
        }
    }

    /// beginRead, beginWrite; the echo checked by address and count.
    @Test("reads and writes framed in place match the array-built ones; the write echo is checked")
    func inPlaceFrames() throws {
        let (server, connection) = try connected()
        defer { server.stop() }
        let base = SunSpecImage.base
        let long = try collected(connection, try connection.beginRead(unit: 1, at: base + 4, count: 32))
        let words = try #require(ModbusConnection.registers(long, count: 32))
        // The same registers through the array-built PDU: the in-place frame asked for the same thing.
        let reference = try answer(connection, Self.readPDU(at: base + 4, count: 32),
                                   ModbusRequestLabel(.readRegisters, unit: 1, address: base + 4, count: 32))
        #expect(long == reference)
        // Written back as they are, framed in place: the server echoes address and count.
        let echo = try collected(connection, try connection.beginWrite(unit: 1, at: base + 4, words))
        #expect(ModbusConnection.echoes(echo, address: base + 4, count: 32))
        #expect(!ModbusConnection.echoes(echo, address: base + 5, count: 32))
        #expect(!ModbusConnection.echoes(echo, address: base + 4, count: 31))
        #expect(echo == Array(Self.writePDU(at: base + 4, words).prefix(5)))
        // A short read after the long write: "SunS", nothing left over from the last frame.
        let marker = try collected(connection, try connection.beginRead(unit: 1, at: base, count: 2))
        #expect(ModbusConnection.registers(marker, count: 2) == [0x5375, 0x6E53])
    }

    /// Registers past 0xFFFF, 0 or too many registers.
    @Test("out-of-bounds Modbus reads and writes are MODBUS_INVALID_REQUEST before anything is sent")
    func inPlaceFramesBounded() throws {
        let (server, connection) = try connected()
        defer { server.stop() }
        let sent = connection.requestCount
        let refused = { (error: any Error) in (error as? DeviceError)?.code.description == "MODBUS_INVALID_REQUEST" }
        for (address, count) in [(0x1_0000, 2), (-1, 2), (0, 0), (0, 126), (0xFFFF, 2)] {
            #expect { _ = try connection.beginRead(unit: 1, at: address, count: count) } throws: { refused($0) }
        }
        for (address, count) in [(0x1_0000, 1), (0, 0), (0, 124), (0xFFFF, 2)] {
            let values = [UInt16](repeating: 0, count: count)
            #expect { _ = try connection.beginWrite(unit: 1, at: address, values) } throws: { refused($0) }
        }
        #expect(connection.requestCount == sent)
        let marker = try collected(connection, try connection.beginRead(unit: 1, at: SunSpecImage.base, count: 2))
        #expect(ModbusConnection.registers(marker, count: 2) == [0x5375, 0x6E53])
    }

    /// Waits (poll on the connection's socket, 2 s at most) until `take` says the answer is in.
    private func takenInPlace(_ connection: ModbusConnection, _ take: () throws -> Bool) throws -> Bool {
        for _ in 0..<200 {
            if try take() { return true }
            var fd = pollfd(fd: connection.socket, events: Int16(POLLIN), revents: 0)
            _ = poll(&fd, 1, 10)
        }
        return false
    }

    /// collectRegisters and collectEcho.
    @Test("in-place answers match the array path; a mismatched length or echo is MODBUS_BAD_RESPONSE")
    func answersTakenInPlace() throws {
        let (server, connection) = try connected()
        defer { server.stop() }
        let base = SunSpecImage.base
        let reference = try #require(ModbusConnection.registers(
            try collected(connection, try connection.beginRead(unit: 1, at: base + 4, count: 32)), count: 32))
        // The array is refilled: what it held before is replaced, not appended to.
        var words: [UInt16] = [1, 2, 3]
        let read = try connection.beginRead(unit: 1, at: base + 4, count: 32)
        #expect(try takenInPlace(connection) { try connection.collectRegisters(read, count: 32, into: &words) })
        #expect(words == reference)
        // A short read after the long one, into the same array: "SunS" and nothing else.
        let marker = try connection.beginRead(unit: 1, at: base, count: 2)
        #expect(try takenInPlace(connection) { try connection.collectRegisters(marker, count: 2, into: &words) })
        #expect(words == [0x5375, 0x6E53])
        let write = try connection.beginWrite(unit: 1, at: base + 4, reference)
        #expect(try takenInPlace(connection) { try connection.collectEcho(write, address: base + 4, count: 32) })

        let bad = { (error: any Error) in (error as? DeviceError)?.code.description == "MODBUS_BAD_RESPONSE" }
        // An answer of 2 registers taken as if 3 were asked: refused, the array left as it was.
        let short = try connection.beginRead(unit: 1, at: base, count: 2)
        #expect { _ = try self.takenInPlace(connection) { try connection.collectRegisters(short, count: 3, into: &words) } } throws: { bad($0) }
        #expect(words == [0x5375, 0x6E53])
        // The session settles after a malformed answer (the worker's path does it before its next
        // request), then serves the next request.
        #expect(try connection.readRegisters(unit: 1, at: base, count: 2) == [0x5375, 0x6E53])
        // A write's echo checked against another address: refused.
        let other = try connection.beginWrite(unit: 1, at: base + 4, reference)
        #expect { _ = try self.takenInPlace(connection) { try connection.collectEcho(other, address: base + 5, count: 32) } } throws: { bad($0) }
    }
}
