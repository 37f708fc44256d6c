import CModbus
import ControlCore
import Glibc

/// Where a Modbus device is.
public enum ModbusEndpoint: Sendable, Equatable, CustomStringConvertible {
    case tcp(host: String, port: Int)
    case rtu(device: String, baud: Int, parity: Character, dataBits: Int, stopBits: Int, rs485: Bool)

    public var description: String {
        switch self {
        case .tcp(let host, let port): "tcp://\(host):\(port)"
        case .rtu(let device, let baud, let parity, let dataBits, let stopBits, _):
            "rtu://\(device)?\(baud)\(parity)\(dataBits)\(stopBits)"
        }
    }
}

/// A libmodbus client context with one owner.
///
/// Not `Sendable`: the handle lives on the worker thread that created it. libmodbus's own link
/// recovery stays off (it blocks); callers reconnect with back-off.
public final class ModbusConnection: RegisterAccess {
    public let endpoint: ModbusEndpoint
    private let context: OpaquePointer
    public private(set) var isConnected = false
    /// Round-trip time of the last successful request.
    public private(set) var lastRoundTrip: Duration = .zero

    /// Creates the context (no I/O yet).
    /// The corresponding C functions are `modbus_new_tcp_pi` and `modbus_new_rtu`.
    public init(endpoint: ModbusEndpoint, unitID: Int, timeout: Duration) throws(ModbusError) {
        self.endpoint = endpoint
        let created: OpaquePointer?
        switch endpoint {
        case .tcp(let host, let port):
            created = modbus_new_tcp_pi(host, String(port))
        case .rtu(let device, let baud, let parity, let dataBits, let stopBits, _):
            created = modbus_new_rtu(device, Int32(baud), CChar(parity.asciiValue ?? 0x4E), Int32(dataBits), Int32(stopBits))
        }
        guard let created else {
            throw ModbusError.from(errno: errno, doing: "creating a Modbus context for \(endpoint)")
        }
        context = created
        modbus_set_slave(context, Int32(unitID))
        let micros = max(1000, timeout.nanosecondsClamped / 1000)
        modbus_set_response_timeout(context, UInt32(micros / 1_000_000), UInt32(micros % 1_000_000))
        modbus_set_error_recovery(context, MODBUS_ERROR_RECOVERY_NONE)
    }

    deinit {
        if isConnected { modbus_close(context) }
        modbus_free(context)
    }

    /// Opens the TCP connection or the serial line.
    /// The corresponding C function is `modbus_connect`.
    public func connect() throws(ModbusError) {
        if isConnected { return }
        guard modbus_connect(context) == 0 else {
            let error = ModbusError.from(errno: errno, doing: "connecting to \(endpoint)")
            throw ModbusError(code: "MODBUS_CONNECT_FAILED", message: error.message, errno: error.errno)
        }
        if case .rtu(_, _, _, _, _, true) = endpoint {
            if modbus_rtu_set_serial_mode(context, MODBUS_RTU_RS485) != 0 {
                let error = ModbusError.from(errno: errno, doing: "switching \(endpoint) to RS-485 mode")
                modbus_close(context)
                throw error
            }
        }
        isConnected = true
    }

    /// Closes the connection (the context stays usable for `connect()`).
    public func close() {
        if isConnected { modbus_close(context) }
        isConnected = false
    }

    /// Reads holding registers (function code 0x03).
    /// The corresponding C function is `modbus_read_registers`.
    public func readRegisters(at address: Int, count: Int) throws(ModbusError) -> [UInt16] {
        guard (1...125).contains(count), (0...65535).contains(address), address + count <= 65536 else {
            throw ModbusError(code: "MODBUS_INVALID_REQUEST", message: "read of \(count) registers at \(address)")
        }
        try connect()
        var values = [UInt16](repeating: 0, count: count)
        let started = MonotonicClockReading.now()
        let result = modbus_read_registers(context, Int32(address), Int32(count), &values)
        guard result == Int32(count) else { throw failure("reading \(count) registers at \(address)") }
        lastRoundTrip = .nanoseconds(MonotonicClockReading.now() - started)
        return values
    }

    /// Writes holding registers (function code 0x10).
    /// The corresponding C function is `modbus_write_registers`.
    public func writeRegisters(at address: Int, _ values: [UInt16]) throws(ModbusError) {
        guard (1...123).contains(values.count), (0...65535).contains(address), address + values.count <= 65536 else {
            throw ModbusError(code: "MODBUS_INVALID_REQUEST", message: "write of \(values.count) registers at \(address)")
        }
        try connect()
        let started = MonotonicClockReading.now()
        let result = values.withUnsafeBufferPointer {
            modbus_write_registers(context, Int32(address), Int32(values.count), $0.baseAddress)
        }
        guard result == Int32(values.count) else { throw failure("writing \(values.count) registers at \(address)") }
        lastRoundTrip = .nanoseconds(MonotonicClockReading.now() - started)
    }

    private func failure(_ what: String) -> ModbusError {
        let error = ModbusError.from(errno: errno, doing: "\(what) on \(endpoint)")
        // After a timeout or a broken link the stream may hold a late answer: start clean.
        if error.isConnectionLost || error.code == "MODBUS_TIMEOUT" || error.code == "MODBUS_BAD_RESPONSE" {
            if error.code == "MODBUS_TIMEOUT" { modbus_flush(context) }
            if error.isConnectionLost { close() }
        }
        return error
    }
}

/// Nanoseconds on CLOCK_MONOTONIC (Fieldbus cannot see Runtime's clock).
public enum MonotonicClockReading {
    public static func now() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
