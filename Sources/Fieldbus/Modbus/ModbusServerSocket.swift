import BessSystem
import CModbus
import Glibc

/// The listening side of a Modbus TCP server built on libmodbus (the plant's simulated devices and
/// bessd's SCADA server).
public enum ModbusServerSocket {
    /// Listens on a libmodbus TCP context. Returns the socket and the port bound: the one asked for,
    /// or the one the kernel picked when `port` is 0. nil with `errno` set when listening fails.
    public static func listen(_ context: OpaquePointer, port: Int, backlog: Int32 = 16) -> (fd: Int32, port: Int)? {
        let fd = modbus_tcp_listen(context, backlog)
        guard fd >= 0 else { return nil }
        guard port == 0 else { return (fd, port) }
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
