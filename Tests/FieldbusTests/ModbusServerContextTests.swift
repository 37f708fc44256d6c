import BessBase
import BessSystem
import CModbus
import ControlCore
import Fieldbus
import Foundation
import Glibc
import Synchronization
import Testing

/// The libmodbus server context and mapping that the SCADA server and the HIL plant's devices share.
@Suite("ModbusServerContext")
struct ModbusServerContextTests {
    @Test("a TCP client reads and writes the mapping; libmodbus only borrows the connection's socket")
    func servesLoadedRegisters() throws {
        let served = ServedModbus(try ModbusServerContext(.tcp(host: "127.0.0.1", port: 0), holdingRegistersFrom: 40000, count: 4,
                                                    failure: .modbusServerFailed))
        served.server.load([0x5375, 0x6E53, 1, 66])
        let listener = try TCPListener(host: "127.0.0.1", port: 0, backlog: 1)
        let port = listener.port
        #expect(port > 0)
        let forgotten = Atomic<Bool>(false)
        let finished = served.serveOne(listener) { served in
            // The context holds no descriptor between requests: only the connection closes it.
            forgotten.store(modbus_get_socket(served.server.context) == -1, ordering: .relaxed)
        }

        let client = try #require(modbus_new_tcp("127.0.0.1", Int32(port)))
        defer { modbus_free(client) }
        modbus_set_response_timeout(client, 2, 0)
        #expect(modbus_connect(client) == 0)
        var registers = [UInt16](repeating: 0, count: 4)
        #expect(modbus_read_registers(client, 40000, 4, &registers) == 4)
        #expect(registers == [0x5375, 0x6E53, 1, 66])
        #expect(modbus_write_register(client, 40003, 704) == 1)
        // Outside the block: a Modbus exception (illegal data address), the mapping untouched.
        var outside = [UInt16](repeating: 0, count: 1)
        #expect(modbus_read_registers(client, 40004, 1, &outside) == -1)
        modbus_close(client)
        #expect(finished.wait(timeout: .now() + 5) == .success)
        let socketForgotten = forgotten.load(ordering: .relaxed)
        #expect(socketForgotten)

        var words = [UInt16](repeating: 0, count: 4)
        served.server.store(into: &words)
        #expect(words == [0x5375, 0x6E53, 1, 704])
    }

    @Test("a reply the full send buffer of a non-blocking socket does not take: receive returns -1, the caller closes")
    func replyNotSentWhole() throws {
        let server = try ModbusServerContext(.tcp(host: "127.0.0.1", port: 0), holdingRegistersFrom: 40000, count: 4,
                                             failure: .modbusServerFailed)
        server.load([1, 2, 3, 4])
        var pair: [Int32] = [-1, -1]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &pair) == 0)
        let served = Socket(owning: pair[0]), client = Socket(owning: pair[1])
        let servedFD = served.rawValue, clientFD = client.rawValue
        // The server's send buffer filled by bytes the client never reads: nothing more goes out.
        let filler = [UInt8](repeating: 0, count: 4096)
        for size in [4096, 1] {
            while filler.withUnsafeBytes({ send(servedFD, $0.baseAddress, size, Int32(MSG_NOSIGNAL)) }) > 0 {}
            #expect(errno == EAGAIN || errno == EWOULDBLOCK, "the send buffer is full: \(errno)")
        }
        // Read holding registers 40000…40001, unit 1 (MBAP header, function 03).
        let request: [UInt8] = [0, 1, 0, 0, 0, 6, 1, 0x03, 0x9C, 0x40, 0, 2]
        #expect(request.withUnsafeBytes { send(clientFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == request.count)
        var query = [UInt8](repeating: 0, count: 260)
        var answered: Int32 = 0
        let count = server.receive(on: servedFD, into: &query) { query, count in
            answered = count
            return server.reply(query, length: count)
        }
        #expect(answered == 12, "the request was read and answered")
        #expect(count == -1, "the reply was not sent whole, so the connection is reported failed")
        #expect(modbus_get_socket(server.context) == -1, "the context kept no descriptor")
        #expect(fcntl(servedFD, F_GETFD) != -1, "libmodbus left the descriptor open: its owner closes it")
    }

    @Test("a context libmodbus refuses is the caller's coded error, with errno")
    func refusedContext() {
        // libmodbus refuses an RTU context with no device name (EINVAL) before opening anything.
        do {
            _ = try ModbusServerContext(.rtu(device: "", baud: 9600, parity: "N", dataBits: 8, stopBits: 1, unitID: 1),
                                        holdingRegistersFrom: 40000, count: 4, failure: .scadaServerFailed)
            Issue.record("libmodbus made a context for no device")
        } catch {
            #expect(error.code == .scadaServerFailed)
            #expect(error.errno == EINVAL)
        }
    }
}
