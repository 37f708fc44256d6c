public import BessBase
import CModbus
import ControlCore
import Glibc

/// A libmodbus server's context and its register mapping, owned together: one block of holding
/// registers from `base` and, when asked, one block of input registers; the rest of the Modbus data
/// model empty. What bessd's SCADA server and the HIL plant's simulated SunSpec devices both serve from.
///
/// `~Copyable`: the context and mapping are freed exactly once, when the owner lets go. The owner
/// keeps it to one thread at a time (libmodbus contexts are not thread-safe).
public struct ModbusServerContext: ~Copyable {
    /// Where a server answers.
    public enum Endpoint: Sendable, Equatable {
        /// Modbus TCP on `host:port` (the server listens with BessSystem's `TCPListener` and hands
        /// each connection to `receive(on:into:answer:)`).
        case tcp(host: String, port: Int)
        /// Modbus RTU on a serial device, answering `unitID` (open with `modbus_connect`).
        case rtu(device: String, baud: Int, parity: Character, dataBits: Int, stopBits: Int, unitID: Int)
    }

    /// The libmodbus context, for the server's receive, reply and connection calls.
    public let context: OpaquePointer
    private let mapping: UnsafeMutablePointer<modbus_mapping_t>
    /// How many holding registers are served (from the base address given at creation).
    public let count: Int
    /// How many input registers are served (function 0x04; 0 unless asked at creation).
    public let inputCount: Int

    /// Creates the context for `endpoint` and a mapping of `count` holding registers from `base`
    /// and `inputCount` input registers from `inputBase` (zeroed). Throws `failure` with errno when
    /// libmodbus cannot create either.
    public init(_ endpoint: Endpoint, holdingRegistersFrom base: Int, count: Int, inputRegistersFrom inputBase: Int = 0,
                inputCount: Int = 0, failure: FieldbusError.Code) throws(FieldbusError) {
        let created: OpaquePointer?
        switch endpoint {
        case .tcp(let host, let port):
            created = modbus_new_tcp(host, Int32(port))
        case .rtu(let device, let baud, let parity, let dataBits, let stopBits, let unitID):
            created = modbus_new_rtu(device, Int32(baud), CChar(parity.asciiValue ?? 0x4E), Int32(dataBits), Int32(stopBits))
            if let created { modbus_set_slave(created, Int32(unitID)) }
        }
        guard let context = created else {
            throw FieldbusError(failure, message: "cannot create a Modbus server context for \(endpoint)", errno: errno)
        }
        guard let mapping = modbus_mapping_new_start_address(0, 0, 0, 0, UInt32(base), UInt32(count), UInt32(inputBase), UInt32(inputCount)) else {
            let error = errno
            modbus_free(context)
            throw FieldbusError(failure, message: "cannot allocate the register map", errno: error)
        }
        // libmodbus must never close or reopen a connection it was lent (`receive`): no link
        // recovery, as is libmodbus's default, said here so no one turns it on.
        modbus_set_error_recovery(context, MODBUS_ERROR_RECOVERY_NONE)
        self.context = context
        self.mapping = mapping
        self.count = count
        self.inputCount = inputCount
    }

    deinit {
        modbus_mapping_free(mapping)
        modbus_free(context)
    }

    /// Copies `words` into the served registers, the first at the base address (at most `count`).
    public func load(_ words: [UInt16]) {
        words.withUnsafeBufferPointer { source in
            guard let start = source.baseAddress else { return }
            mapping.pointee.tab_registers.update(from: start, count: min(source.count, count))
        }
    }

    /// Copies `words` into the served input registers, the first at their base address (at most `inputCount`).
    public func loadInput(_ words: [UInt16]) {
        for (i, word) in words.prefix(inputCount).enumerated() { mapping.pointee.tab_input_registers[i] = word }
    }

    /// Copies the served registers (as the last write left them) back into `words`.
    public func store(into words: inout [UInt16]) {
        for i in words.indices.prefix(count) { words[i] = mapping.pointee.tab_registers[i] }
    }

    /// Reads one request from the TCP connection `socket` into `query` and, when one came, calls
    /// `answer` with it and its length while the context answers on that connection; `answer`
    /// returns whether its reply went out whole (or none was due). libmodbus only borrows the
    /// descriptor for this call (the context forgets it after): its owner closes it, once.
    /// libmodbus must never close it itself: link error recovery would, and `Socket` would then
    /// close the number again, by then perhaps another connection's (`init` turns recovery off).
    /// Returns what `modbus_receive` returned: the length, 0 (ignored), -1 (the connection failed
    /// or the peer closed it); and -1 when the reply was not sent whole: libmodbus sends once, so
    /// a non-blocking socket whose send buffer is full takes none or part of the frame, the
    /// client's stream is out of step, and the caller closes the connection.
    public func receive(on socket: Int32, into query: inout [UInt8], answer: ([UInt8], Int32) -> Bool) -> Int32 {
        modbus_set_socket(context, socket)
        defer { modbus_set_socket(context, -1) }
        let count = modbus_receive(context, &query)
        if count > 0, !answer(query, count) { return -1 }
        return count
    }

    /// Answers `query` (`length` bytes, as `modbus_receive` returned it) from the mapping: reads from
    /// it, writes into it. True when the reply was sent whole or none was due (an RTU broadcast);
    /// false when the send failed or took part of it (libmodbus then returns -1).
    @discardableResult
    public func reply(_ query: [UInt8], length: Int32) -> Bool {
        modbus_reply(context, query, length, mapping) >= 0
    }

    /// Answers `query` with Modbus exception `code`. True when the reply was sent whole or none was
    /// due, as `reply`.
    @discardableResult
    public func replyException(_ query: [UInt8], _ code: UInt8) -> Bool {
        modbus_reply_exception(context, query, UInt32(code)) >= 0
    }
}
