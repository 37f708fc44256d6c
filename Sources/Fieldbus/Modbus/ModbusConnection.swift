public import BessBase
public import BessSystem
import CModbus
public import ControlCore
import Glibc

/// Where a Modbus device is.
public enum ModbusEndpoint: Sendable, Equatable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case rtu(device: String, baud: Int, parity: Character, dataBits: Int, stopBits: Int, rs485: Bool)

    /// What one context stands for: the TCP endpoint, or the serial device whatever its settings
    /// (two contexts on one tty would read each other's replies).
    public var line: String {
        switch self {
        case .tcp: description
        case .rtu(let device, _, _, _, _, _): "rtu://\(device)"
        }
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port): "tcp://\(host):\(port)"
        case .rtu(let device, let baud, let parity, let dataBits, let stopBits, _):
            "rtu://\(device)?\(baud)\(parity)\(dataBits)\(stopBits)"
        }
    }
}

/// What a request asks, for its error messages: kept as numbers and put into words only when an
/// error needs them (a poll round makes hundreds of requests a second; none of them formats text).
public struct ModbusRequestLabel: Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        case readRegisters, readInputRegisters, readCoils, readDiscreteInputs, writeRegisters
        /// The read of `table`'s registers (function 0x03 or 0x04).
        public init(reading table: ModbusTable) { self = table == .holding ? .readRegisters : .readInputRegisters }
    }
    public let kind: Kind
    public let unit: Int
    public let address: Int
    public let count: Int

    public init(_ kind: Kind, unit: Int, address: Int, count: Int) {
        self.kind = kind
        self.unit = unit
        self.address = address
        self.count = count
    }

    public var description: String {
        switch kind {
        case .readRegisters: "reading \(count) registers at \(address) of unit \(unit)"
        case .readInputRegisters: "reading \(count) input registers at \(address) of unit \(unit)"
        case .readCoils: "reading \(count) coils at \(address) of unit \(unit)"
        case .readDiscreteInputs: "reading \(count) discrete inputs at \(address) of unit \(unit)"
        case .writeRegisters: "writing \(count) registers at \(address) of unit \(unit)"
        }
    }
}

/// A libmodbus client context with one owner: one per TCP endpoint or serial line, shared by every
/// unit id on it.
///
/// Not `Sendable`: the handle lives on the worker thread that created it. libmodbus's own link
/// recovery stays off (it blocks); callers reconnect with back-off.
///
/// Every request names its unit id (`modbus_set_slave` before the request), so many devices behind
/// one gateway or on one RS-485 line share a single TCP session or a single open of the tty. After a
/// timeout or a malformed answer the stream may still deliver the late reply: the context is flushed
/// at once and, before its next request, waits until the line is quiet (at most one response
/// timeout after the failure, flushing whatever arrives). A reply later than that is still refused
/// by libmodbus, which checks the transaction id (TCP) and the answering unit id (RTU) of every
/// answer, and the stream is flushed again. A late reply therefore never becomes another unit's
/// reading.
public final class ModbusConnection: RegisterAccess {
    public let endpoint: ModbusEndpoint
    private let context: OpaquePointer
    public private(set) var isConnected = false
    /// Round-trip time of the last successful request.
    public private(set) var lastRoundTrip: Duration = .zero
    /// The unit id `readRegisters(at:count:)`/`writeRegisters(at:_:)` address (the `RegisterAccess`
    /// view). Requests through `unit(_:)` name their own.
    public var unitID: Int
    /// The unit id the context is set to (`modbus_set_slave`), -1 before the first request.
    private var selectedUnit: Int32 = -1
    private let timeout: Duration
    /// The time and the waits of the thread that owns the connection.
    private let clock: any MonotonicClock
    /// Set after a timeout or a malformed answer: wait for quiet before the next request.
    private var settleFrom: MonotonicInstant?
    /// Requests sent since `connect()` (tests and request budgets).
    public private(set) var requestCount: UInt64 = 0
    /// Connections opened so far (`modbus_connect` calls that succeeded).
    public private(set) var connectCount: UInt64 = 0

    /// Creates the context (no I/O yet).
    /// The corresponding C functions are `modbus_new_tcp_pi` and `modbus_new_rtu`.
    /// - Parameter clock: where its requests are stamped and its deadlines read (tests step a
    ///   `ManualClock`).
    public init(endpoint: ModbusEndpoint, unitID: Int = 1, timeout: Duration,
                clock: any MonotonicClock = SystemClock.shared) throws(DeviceError) {
        self.endpoint = endpoint
        self.clock = clock
        self.unitID = unitID
        let created: OpaquePointer?
        switch endpoint {
        case .tcp(let host, let port):
            created = modbus_new_tcp_pi(host, String(port))
        case .rtu(let device, let baud, let parity, let dataBits, let stopBits, _):
            created = modbus_new_rtu(device, Int32(baud), CChar(parity.asciiValue ?? 0x4E), Int32(dataBits), Int32(stopBits))
        }
        guard let created else {
            throw DeviceError.modbus(errno: errno, doing: "creating a Modbus context for \(endpoint)")
        }
        context = created
        inbound = .allocate(capacity: Self.frameCapacity)
        inbound.initialize(repeating: 0, count: Self.frameCapacity)
        outbound = .allocate(capacity: Self.frameCapacity)
        outbound.initialize(repeating: 0, count: Self.frameCapacity)
        let micros = max(1000, timeout.nanosecondsClamped / 1000)
        self.timeout = .microseconds(micros)
        modbus_set_response_timeout(context, UInt32(micros / 1_000_000), UInt32(micros % 1_000_000))
        modbus_set_error_recovery(context, MODBUS_ERROR_RECOVERY_NONE)
    }

    deinit {
        if isConnected { modbus_close(context) }
        modbus_free(context)
        inbound.deallocate()
        outbound.deallocate()
    }

    /// Opens the TCP connection or the serial line.
    /// The corresponding C function is `modbus_connect`.
    public func connect() throws(DeviceError) {
        if isConnected { return }
        guard modbus_connect(context) == 0 else {
            let error = DeviceError.modbus(errno: errno, doing: "connecting to \(endpoint)")
            throw DeviceError(.connectFailed, message: error.message, errno: error.errno)
        }
        if case .rtu(_, _, _, _, _, true) = endpoint {
            if modbus_rtu_set_serial_mode(context, MODBUS_RTU_RS485) != 0 {
                let error = DeviceError.modbus(errno: errno, doing: "switching \(endpoint) to RS-485 mode")
                modbus_close(context)
                throw error
            }
        }
        if case .tcp = endpoint {
            // Requests on TCP are framed here (`exchange`): a blocking socket whose receive timeout
            // is the response timeout, so a request is one send and, as a rule, one receive.
            let fd = modbus_get_socket(context)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
            let micros = timeout.nanosecondsClamped / 1000
            var tv = timeval(tv_sec: Int(micros / 1_000_000), tv_usec: Int(micros % 1_000_000))
            _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
            var one: Int32 = 1
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(4))
        }
        isConnected = true
        connectCount &+= 1
        lastSentAt = .zero
        settleFrom = nil
        inboundCount = 0
    }

    /// Closes the connection (the context stays usable for `connect()`).
    public func close() {
        if isConnected { modbus_close(context) }
        isConnected = false
        settleFrom = nil
    }

    /// The device with `id` on this connection, as a `RegisterAccess` (a view: no I/O, no copy of
    /// the context).
    public func unit(_ id: Int) -> ModbusUnit { ModbusUnit(connection: self, id: id) }

    /// Reads holding registers (function code 0x03) from `unitID`.
    /// The corresponding C function is `modbus_read_registers`.
    public func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        try readRegisters(unit: unitID, at: address, count: count)
    }

    /// Writes holding registers (function code 0x10) to `unitID`.
    /// The corresponding C function is `modbus_write_registers`.
    public func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        try writeRegisters(unit: unitID, at: address, values)
    }

    /// Reads holding registers (function code 0x03), or input registers (0x04) of `table` `.input`, from unit `unit`.
    /// The corresponding C functions are `modbus_set_slave`, `modbus_read_registers`, `modbus_read_input_registers`.
    public func readRegisters(unit: Int, table: ModbusTable = .holding, at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        try Self.checkRead(at: address, count: count)
        try prepare(unit: unit)
        var values = [UInt16](repeating: 0, count: count)
        let started = clock.now()
        if case .tcp = endpoint {
            let pending = try frameRead(unit: unit, table: table, at: address, count: count)
            guard Self.decode(try exchange(pending), count: count, into: &values) else { throw malformed(pending.label.description) }
        } else {
            requestCount &+= 1
            let result = table == .holding ? modbus_read_registers(context, Int32(address), Int32(count), &values)
                : modbus_read_input_registers(context, Int32(address), Int32(count), &values)
            guard result == Int32(count) else { throw failure(ModbusRequestLabel(.init(reading: table), unit: unit, address: address, count: count).description) }
        }
        lastRoundTrip = clock.now() - started
        return values
    }

    /// Reads `count` coils (function 0x01) or discrete inputs (0x02) of unit `unit` from `address`.
    /// The corresponding C functions are `modbus_read_bits` and `modbus_read_input_bits`.
    public func readBits(unit: Int, function: UInt8, at address: Int, count: Int) throws(DeviceError) -> [Bool] {
        guard function == 0x01 || function == 0x02, (1...2000).contains(count), (0...65535).contains(address),
              address + count <= 65536 else {
            throw DeviceError(.invalidRequest, message: "read of \(count) bits at \(address) (function \(function))")
        }
        try prepare(unit: unit)
        let label = ModbusRequestLabel(function == 0x01 ? .readCoils : .readDiscreteInputs, unit: unit, address: address, count: count)
        let started = clock.now()
        var bits = [Bool](repeating: false, count: count)
        if case .tcp = endpoint {
            let reply = try exchange(try begin(unit: unit, [function, UInt8(address >> 8), UInt8(address & 0xFF), UInt8(count >> 8), UInt8(count & 0xFF)],
                                               label))
            let bytes = (count + 7) / 8
            guard reply.count == 2 + bytes, Int(reply[1]) == bytes else { throw malformed(label.description) }
            for i in 0..<count { bits[i] = reply[2 + i / 8] >> UInt8(i % 8) & 1 == 1 }
        } else {
            requestCount &+= 1
            var raw = [UInt8](repeating: 0, count: count)
            let result = function == 0x01 ? modbus_read_bits(context, Int32(address), Int32(count), &raw)
                : modbus_read_input_bits(context, Int32(address), Int32(count), &raw)
            guard result == Int32(count) else { throw failure(label.description) }
            for i in 0..<count { bits[i] = raw[i] != 0 }
        }
        lastRoundTrip = clock.now() - started
        return bits
    }

    /// Writes holding registers (function code 0x10) to unit `unit`.
    /// The corresponding C functions are `modbus_set_slave` and `modbus_write_registers`.
    public func writeRegisters(unit: Int, at address: Int, _ values: [UInt16]) throws(DeviceError) {
        try Self.checkWrite(at: address, count: values.count)
        try prepare(unit: unit)
        let started = clock.now()
        if case .tcp = endpoint {
            let pending = try frameWrite(unit: unit, at: address, values)
            let reply = try exchange(pending)
            // The answer echoes the address and the quantity.
            guard Self.echoes(reply, address: address, count: values.count) else { throw malformed(pending.label.description) }
            lastRoundTrip = clock.now() - started
            return
        }
        requestCount &+= 1
        let result = values.withUnsafeBufferPointer {
            modbus_write_registers(context, Int32(address), Int32(values.count), $0.baseAddress)
        }
        guard result == Int32(values.count) else {
            throw failure("writing \(values.count) registers at \(address) of unit \(unit)")
        }
        lastRoundTrip = clock.now() - started
    }

    /// The transaction id of the next TCP request.
    private var transaction: UInt16 = 0
    /// The longest PDU a Modbus frame carries (the 256-byte serial frame less address and CRC; TCP
    /// keeps the same limit).
    static let maxPDU = 253
    /// An MBAP header and the longest PDU.
    static let frameCapacity = 7 + maxPDU
    /// Receive buffer for TCP answers (`frameCapacity` bytes) and how much of it holds bytes not
    /// yet consumed. Owned by the connection (allocated once, freed in `deinit`): reading and
    /// writing it needs neither a uniqueness check nor an exclusivity check per byte, as an array
    /// property would.
    private let inbound: UnsafeMutablePointer<UInt8>
    private var inboundCount = 0
    /// Send buffer for TCP requests (`begin`), the same size and kind.
    private let outbound: UnsafeMutablePointer<UInt8>
    /// When the last TCP request was sent (monotonic ns).
    private var lastSentAt = MonotonicInstant.zero
    /// Half of Linux's shortest delayed-ACK timeout (TCP_DELACK_MIN, 40 ms): a request sent sooner
    /// than this after the previous one finds the socket still holding its ACKs.
    static let delayedAckFloor: Duration = .milliseconds(20)

    /// A Modbus TCP request on the wire whose answer has not been taken yet.
    public struct Pending: Sendable {
        public let unit: Int
        public let function: UInt8
        public let transaction: UInt16
        /// What the request asks (for an error's message).
        public let label: ModbusRequestLabel
        /// When the answer must be complete by.
        public let deadline: MonotonicInstant
        /// When the request went out.
        public let started: MonotonicInstant
    }

    /// The socket of a connected TCP context (for poll), or -1.
    public var socket: Int32 { isConnected ? modbus_get_socket(context) : -1 }

    /// Sends one Modbus TCP request (`pdu`: function code first) on a connected, settled session,
    /// without waiting for the answer. A session that is not connected or still settling after a
    /// failure is refused (`MODBUS_CONNECTION_LOST`): that is the worker's to recover, not a poller's.
    public func begin(unit: Int, _ pdu: [UInt8], _ label: ModbusRequestLabel) throws(DeviceError) -> Pending {
        try begin(unit: unit, size: pdu.count, label) { frame in
            for k in pdu.indices { frame[7 + k] = pdu[k] }
        }
    }

    /// Sends a read-holding-registers request (0x03), or read-input-registers (0x04) of `table` `.input`,
    /// like `begin`, its PDU written straight into the send buffer (no array per request).
    public func beginRead(unit: Int, table: ModbusTable = .holding, at address: Int, count: Int) throws(DeviceError) -> Pending {
        try Self.checkRead(at: address, count: count)
        return try frameRead(unit: unit, table: table, at: address, count: count)
    }

    /// Sends a write-multiple-registers request (0x10) like `begin`, its PDU written straight into
    /// the send buffer (no array per request).
    public func beginWrite(unit: Int, at address: Int, _ values: [UInt16]) throws(DeviceError) -> Pending {
        try Self.checkWrite(at: address, count: values.count)
        return try frameWrite(unit: unit, at: address, values)
    }

    /// The protocol's bounds of a register read: 1 to 125 registers (the most an answer carries),
    /// all inside the 16-bit address space.
    private static func checkRead(at address: Int, count: Int) throws(DeviceError) {
        guard (1...125).contains(count), (0...65535).contains(address), address + count <= 65536 else {
            throw DeviceError(.invalidRequest, message: "read of \(count) registers at \(address)")
        }
    }

    /// The protocol's bounds of a register write: 1 to 123 registers (the most a request carries),
    /// all inside the 16-bit address space.
    private static func checkWrite(at address: Int, count: Int) throws(DeviceError) {
        guard (1...123).contains(count), (0...65535).contains(address), address + count <= 65536 else {
            throw DeviceError(.invalidRequest, message: "write of \(count) registers at \(address)")
        }
    }

    /// Sends a 0x03 (holding) or 0x04 (input) request whose bounds were checked.
    private func frameRead(unit: Int, table: ModbusTable, at address: Int, count: Int) throws(DeviceError) -> Pending {
        try begin(unit: unit, size: 5, ModbusRequestLabel(.init(reading: table), unit: unit, address: address, count: count)) { frame in
            frame[7] = table == .holding ? 0x03 : 0x04
            frame[8] = UInt8(truncatingIfNeeded: address >> 8)
            frame[9] = UInt8(truncatingIfNeeded: address)
            frame[10] = UInt8(truncatingIfNeeded: count >> 8)
            frame[11] = UInt8(truncatingIfNeeded: count)
        }
    }

    /// Sends a 0x10 request whose bounds were checked.
    private func frameWrite(unit: Int, at address: Int, _ values: [UInt16]) throws(DeviceError) -> Pending {
        let label = ModbusRequestLabel(.writeRegisters, unit: unit, address: address, count: values.count)
        return try begin(unit: unit, size: 6 + 2 * values.count, label) { frame in
            frame[7] = 0x10
            frame[8] = UInt8(truncatingIfNeeded: address >> 8)
            frame[9] = UInt8(truncatingIfNeeded: address)
            frame[10] = UInt8(truncatingIfNeeded: values.count >> 8)
            frame[11] = UInt8(truncatingIfNeeded: values.count)
            frame[12] = UInt8(truncatingIfNeeded: 2 * values.count)
            for (k, value) in values.enumerated() {
                frame[13 + 2 * k] = UInt8(value >> 8)
                frame[14 + 2 * k] = UInt8(value & 0xFF)
            }
        }
    }

    /// The frame of every request: MBAP header, then the PDU of `size` bytes that `pdu` writes
    /// from index 7 of the connection's own send buffer (no allocation per request).
    private func begin(unit: Int, size pduSize: Int, _ label: ModbusRequestLabel,
                       _ pdu: (UnsafeMutablePointer<UInt8>) -> Void) throws(DeviceError) -> Pending {
        guard case .tcp = endpoint, isConnected, settleFrom == nil else {
            throw DeviceError(.connectionLost, message: "\(label) on \(endpoint): session not ready")
        }
        guard (1...Self.maxPDU).contains(pduSize) else {
            throw DeviceError(.invalidRequest, message: "\(label) on \(endpoint): a PDU of \(pduSize) bytes")
        }
        let fd = modbus_get_socket(context)
        transaction &+= 1
        // The frame is built in the connection's own send buffer: no allocation per request.
        let length = pduSize + 1
        outbound[0] = UInt8(transaction >> 8)
        outbound[1] = UInt8(transaction & 0xFF)
        outbound[2] = 0
        outbound[3] = 0
        outbound[4] = UInt8(length >> 8)
        outbound[5] = UInt8(length & 0xFF)
        outbound[6] = UInt8(truncatingIfNeeded: unit)
        pdu(outbound)
        let size = 7 + pduSize
        let started = clock.now()
        requestCount &+= 1
        // After an idle gap Linux acknowledges the answer to come with a segment of its own (its
        // delayed-ACK timer fired in the gap and took the socket out of the mode that holds ACKs
        // for the next request). Asking for held ACKs again puts the acknowledgement on the next
        // request instead: one packet less per exchange for both ends (at 100 ms, half the ACKs).
        // A gap under `delayedAckFloor` never lets the timer fire, so a 10 ms cycle makes no call.
        if started - lastSentAt >= Self.delayedAckFloor {
            var held: Int32 = 0
            _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_QUICKACK, &held, socklen_t(4))
        }
        lastSentAt = started
        let sent = send(fd, outbound, size, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        guard sent == size else { throw failure(label.description, errno: sent < 0 ? errno : EIO) }
        return Pending(unit: unit, function: outbound[7], transaction: transaction, label: label,
                       deadline: started + timeout, started: started)
    }

    /// Takes what has arrived for `pending`: its answer's PDU (function code first) once complete,
    /// nil while incomplete. With `wait`, blocks until the answer is complete or the receive timeout
    /// runs out. An answer with another transaction id (a late reply to an earlier request) is
    /// skipped; an exception answer, a wrong unit or function, a short or overlong frame are errors
    /// with the same codes as libmodbus's (`DeviceError.from`).
    public func collect(_ pending: Pending, wait: Bool) throws(DeviceError) -> [UInt8]? {
        guard let pdu = try receive(pending, wait: wait) else { return nil }
        return Array(pdu)
    }

    /// Takes what has arrived for the 0x03 or 0x04 request `pending` like `collect(_:wait:)`, without
    /// waiting: true once the answer is complete, its `count` registers then in `words` (replaced,
    /// in the array's own storage: no allocation when it has the capacity). An answer whose length
    /// does not match `count` is `MODBUS_BAD_RESPONSE`.
    public func collectRegisters(_ pending: Pending, count: Int, into words: inout [UInt16]) throws(DeviceError) -> Bool {
        guard let pdu = try receive(pending, wait: false) else { return false }
        guard Self.decode(pdu, count: count, into: &words) else { throw malformed(pending.label.description) }
        return true
    }

    /// Takes what has arrived for the 0x10 request `pending` like `collect(_:wait:)`, without
    /// waiting: true once the answer is complete and echoes `address` and `count`; any other
    /// answer is `MODBUS_BAD_RESPONSE`.
    public func collectEcho(_ pending: Pending, address: Int, count: Int) throws(DeviceError) -> Bool {
        guard let pdu = try receive(pending, wait: false) else { return false }
        guard Self.echoes(pdu, address: address, count: count) else { throw malformed(pending.label.description) }
        return true
    }

    /// `collect`'s work: the answer's PDU where it lies in the receive buffer (valid until the
    /// connection's next receive), or nil while incomplete.
    private func receive(_ pending: Pending, wait: Bool) throws(DeviceError) -> UnsafeBufferPointer<UInt8>? {
        let fd = modbus_get_socket(context)
        while true {
            // A whole frame in the buffer: check it, or skip it when it answers another request.
            if inboundCount >= 7 {
                let size = 6 + (Int(inbound[4]) << 8 | Int(inbound[5]))
                guard inbound[2] == 0, inbound[3] == 0, size >= 8, size <= Self.frameCapacity else { throw malformed(pending.label.description) }
                if inboundCount >= size {
                    let id = UInt16(inbound[0]) << 8 | UInt16(inbound[1])
                    if id != pending.transaction {
                        let rest = inboundCount - size
                        _ = memmove(inbound, inbound + size, rest)
                        inboundCount = rest
                        continue
                    }
                    guard inboundCount == size, Int(inbound[6]) == pending.unit & 0xFF else { throw malformed(pending.label.description) }
                    inboundCount = 0
                    let function = inbound[7]
                    if function == pending.function | 0x80 {
                        guard size >= 9 else { throw malformed(pending.label.description) }
                        throw failure(pending.label.description, errno: DeviceError.enobase + Int32(inbound[8]))
                    }
                    guard function == pending.function else { throw malformed(pending.label.description) }
                    lastRoundTrip = clock.now() - pending.started
                    return UnsafeBufferPointer(start: inbound + 7, count: size - 7)
                }
            }
            if wait, clock.now() > pending.deadline { throw failure(pending.label.description, errno: ETIMEDOUT) }
            // No socket (the session closed): what recv(2) says of it, before `systemCall` would stop on EBADF.
            guard fd >= 0 else { throw failure(pending.label.description, errno: EBADF) }
            let received: Int
            do throws(SystemCallError) {
                let (buffer, room, flags) = (inbound + inboundCount, Self.frameCapacity - inboundCount, wait ? 0 : Int32(MSG_DONTWAIT))
                received = try systemCall("recv") { recv(fd, buffer, room, flags) }
            } catch {
                guard error.errno == EAGAIN || error.errno == EWOULDBLOCK else { throw failure(pending.label.description, errno: error.errno) }
                if !wait { return nil }
                throw failure(pending.label.description, errno: ETIMEDOUT)
            }
            guard received > 0 else { throw failure(pending.label.description, errno: ECONNRESET) }
            inboundCount += received
        }
    }

    /// The error for a request whose answer did not come by its deadline; the session settles
    /// before its next request, as after any timeout.
    public func expired(_ pending: Pending) -> DeviceError { failure(pending.label.description, errno: ETIMEDOUT) }

    /// The registers of a 0x03 or 0x04 answer, or nil when its length does not match `count`.
    public static func registers(_ reply: [UInt8], count: Int) -> [UInt16]? {
        var words: [UInt16] = []
        return reply.withUnsafeBufferPointer { decode($0, count: count, into: &words) } ? words : nil
    }

    /// True when `reply` is the echo of a 0x10 request writing `count` registers at `address`.
    public static func echoes(_ reply: [UInt8], address: Int, count: Int) -> Bool {
        reply.withUnsafeBufferPointer { echoes($0, address: address, count: count) }
    }

    /// The one decoder of a 0x03 or 0x04 answer's PDU: its `count` registers replace `words`' contents;
    /// false (and `words` untouched) when the PDU's length does not match `count`.
    private static func decode(_ pdu: UnsafeBufferPointer<UInt8>, count: Int, into words: inout [UInt16]) -> Bool {
        guard pdu.count == 2 + 2 * count, Int(pdu[1]) == 2 * count else { return false }
        words.removeAll(keepingCapacity: true)
        for k in 0..<count { words.append(UInt16(pdu[2 + 2 * k]) << 8 | UInt16(pdu[3 + 2 * k])) }
        return true
    }

    /// The one check of a 0x10 answer's PDU: it echoes the request's address and quantity.
    private static func echoes(_ pdu: UnsafeBufferPointer<UInt8>, address: Int, count: Int) -> Bool {
        pdu.count == 5 && Int(pdu[1]) << 8 | Int(pdu[2]) == address && Int(pdu[3]) << 8 | Int(pdu[4]) == count
    }

    /// Waits for the answer's PDU of a request just sent (as a rule, one receive); it lies in the
    /// receive buffer until the next receive.
    private func exchange(_ pending: Pending) throws(DeviceError) -> UnsafeBufferPointer<UInt8> {
        while true {
            if let pdu = try receive(pending, wait: true) { return pdu }
        }
    }

    private func malformed(_ what: String) -> DeviceError {
        failure(what, errno: DeviceError.enobase + 13)  // EMBBADDATA
    }

    /// Connects if needed, lets a late reply drain, and addresses `unit`.
    private func prepare(unit: Int) throws(DeviceError) {
        if selectedUnit != Int32(clamping: unit) {
            // libmodbus takes 0…255 on TCP and 0…247 on RTU.
            guard (0...255).contains(unit), modbus_set_slave(context, Int32(unit)) == 0 else {
                throw DeviceError(.invalidRequest, message: "unit id \(unit) is not valid on \(endpoint)")
            }
            selectedUnit = Int32(unit)
        }
        try connect()
        if let since = settleFrom {
            settleFrom = nil
            settle(until: since + timeout)
        }
    }

    /// Waits until `deadline` for a late reply; whatever arrives is flushed, and once something has
    /// arrived the wait ends at the first 20 ms of quiet (a slow serial reply may run past
    /// `deadline`, by at most one more response timeout).
    private func settle(until deadline: MonotonicInstant) {
        let fd = modbus_get_socket(context)
        guard fd >= 0 else { return }
        let hardEnd = deadline + timeout
        var end = deadline
        while true {
            if clock.now() >= end { return }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // Nothing ready, or the wait failed (a signal): look at the clock again.
            guard clock.poll(&pfd, count: 1, until: end + .milliseconds(1)) > 0 else { continue }
            if pfd.revents & Int16(POLLIN) == 0 || modbus_flush(context) <= 0 {
                return  // hung up or nothing to read: the next request reports the link
            }
            end = min(clock.now() + .milliseconds(20), hardEnd)
        }
    }

    private func failure(_ what: String, errno code: Int32 = errno) -> DeviceError {
        inboundCount = 0
        let error = DeviceError.modbus(errno: code, doing: "\(what) on \(endpoint)")
        if error.isConnectionLost {
            close()
        } else if error.code == .timeout || error.code == .badResponse {
            // The stream may hold, or still receive, an answer meant for this request: start clean.
            modbus_flush(context)
            settleFrom = clock.now()
        }
        return error
    }
}

/// One device (unit id) on a shared `ModbusConnection`: every request sets the unit id first.
public struct ModbusUnit: InputRegisterAccess {
    public let connection: ModbusConnection
    public let id: Int

    public init(connection: ModbusConnection, id: Int) {
        self.connection = connection
        self.id = id
    }

    public mutating func readRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        try connection.readRegisters(unit: id, at: address, count: count)
    }

    public mutating func readInputRegisters(at address: Int, count: Int) throws(DeviceError) -> [UInt16] {
        try connection.readRegisters(unit: id, table: .input, at: address, count: count)
    }

    public mutating func writeRegisters(at address: Int, _ values: [UInt16]) throws(DeviceError) {
        try connection.writeRegisters(unit: id, at: address, values)
    }
}
