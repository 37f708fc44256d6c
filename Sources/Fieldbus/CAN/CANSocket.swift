public import BessBase
import BessSystem
import ControlCore
import CSocketCAN
import Glibc

/// What an error frame says (`linux/can/error.h`).
public struct CANErrorReport: Sendable, Equatable {
    public var busOff = false
    public var restarted = false
    public var errorPassive = false
    public var errorWarning = false
    public var backToActive = false
    public var noAcknowledge = false
    public var transmitTimeout = false
    public var protocolViolation = false
    public var controllerOverflow = false
    public init() {}

    /// Decodes an error frame; nil for an ordinary data frame.
    public init?(_ frame: CANFrame) {
        guard frame.isError else { return nil }
        let cls = frame.id
        busOff = cls & 0x040 != 0
        restarted = cls & 0x100 != 0
        transmitTimeout = cls & 0x001 != 0
        noAcknowledge = cls & 0x020 != 0
        protocolViolation = cls & 0x008 != 0
        if cls & 0x004 != 0 {
            let status = frame.byte(1)
            controllerOverflow = status & 0x03 != 0
            errorWarning = status & 0x0C != 0
            errorPassive = status & 0x30 != 0
            backToActive = status & 0x40 != 0
        }
    }
}

/// A raw SocketCAN socket bound to one interface.
///
/// Not `Sendable`: the descriptor belongs to the worker thread that opened it.
public final class CANSocket {
    public let interface: String
    private let fd: Int32
    /// Frames that could not be queued because the interface's transmit queue was full.
    public private(set) var transmitDrops: UInt64 = 0

    // SO_TIMESTAMPNS / SCM_TIMESTAMPNS on 64-bit Linux (the header spells them as expressions Swift
    // does not import).
    static let timestampOption: Int32 = 35

    /// Error classes delivered as error frames: TX timeout, controller, protocol, no ACK, bus-off,
    /// restarted (bus errors left out: they can flood).
    public static let defaultErrorMask: UInt32 = 0x001 | 0x004 | 0x008 | 0x020 | 0x040 | 0x100

    /// Opens a raw CAN socket on `interface` receiving only standard data frames that match
    /// `filters` (id, mask), plus the error classes in `errorMask`.
    /// The corresponding C calls are `socket(PF_CAN, SOCK_RAW, CAN_RAW)`, `setsockopt(CAN_RAW_FILTER)`
    /// and `bind`.
    public init(interface: String, filters: [(id: UInt32, mask: UInt32)], errorMask: UInt32 = CANSocket.defaultErrorMask)
        throws(FieldbusError)
    {
        self.interface = interface
        let index = if_nametoindex(interface)
        guard index != 0 else {
            throw FieldbusError(.interfaceMissing, message: "no network interface named \(interface)", errno: ENODEV)
        }
        fd = socket(PF_CAN, Int32(SOCK_RAW.rawValue), CAN_RAW)
        guard fd >= 0 else {
            throw FieldbusError(.socketFailed, message: "cannot open a CAN socket: \(SystemError.text(errno))",
                                errno: errno)
        }
        // Standard data frames only: the EFF and RTR bits must be clear.
        var kernelFilters = filters.map {
            can_filter(can_id: $0.id, can_mask: $0.mask | CAN_EFF_FLAG | CAN_RTR_FLAG)
        }
        var mask = errorMask
        let sol = Int32(SOL_CAN_BASE + CAN_RAW)
        var on: Int32 = 1
        let ok = setsockopt(fd, sol, Int32(CAN_RAW_FILTER), &kernelFilters,
                            socklen_t(MemoryLayout<can_filter>.stride * kernelFilters.count)) == 0
            && setsockopt(fd, sol, Int32(CAN_RAW_ERR_FILTER), &mask, socklen_t(MemoryLayout<UInt32>.size)) == 0
            && setsockopt(fd, SOL_SOCKET, Self.timestampOption, &on, socklen_t(MemoryLayout<Int32>.size)) == 0
        guard ok else {
            let e = errno
            close(fd)
            throw FieldbusError(.socketFailed, message: "cannot set CAN socket options: \(SystemError.text(e))",
                                errno: e)
        }
        var address = sockaddr_can()
        address.can_family = sa_family_t(AF_CAN)
        address.can_ifindex = Int32(index)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_can>.size)) }
        }
        guard bound == 0 else {
            let e = errno
            close(fd)
            throw FieldbusError(.bindFailed, message: "cannot bind to \(interface): \(SystemError.text(e))",
                                errno: e)
        }
    }

    deinit { close(fd) }

    /// Queues a frame without waiting. A full transmit queue (the bus is not draining) is counted
    /// and reported as `CAN_TX_QUEUE_FULL`; a bus-off controller as `CAN_BUS_OFF`.
    public func send(_ frame: CANFrame) throws(FieldbusError) {
        var raw = can_frame()
        raw.can_id = frame.id | (frame.isExtended ? CAN_EFF_FLAG : 0) | (frame.isRemote ? CAN_RTR_FLAG : 0)
        raw.len = frame.length
        withUnsafeMutableBytes(of: &raw.data) { bytes in
            for i in 0..<8 { bytes[i] = frame.byte(i) }
        }
        let sent = withUnsafePointer(to: &raw) { Glibc.send(fd, $0, MemoryLayout<can_frame>.size, Int32(MSG_DONTWAIT)) }
        guard sent == MemoryLayout<can_frame>.size else {
            let e = errno
            if e == ENOBUFS || e == EAGAIN {
                transmitDrops &+= 1
                throw FieldbusError(.transmitQueueFull, message: "\(interface): transmit queue full; frame dropped", errno: e)
            }
            if e == ENETDOWN {
                throw FieldbusError(.busOff, message: "\(interface) is down or bus-off", errno: e)
            }
            throw FieldbusError(.sendFailed, message: "\(interface): \(SystemError.text(e))", errno: e)
        }
    }

    /// Waits up to `timeout` for a frame. Returns it with the kernel's receive time (CLOCK_REALTIME,
    /// nanoseconds), or nil when none arrived.
    public func receive(timeout: Duration) throws(FieldbusError) -> (frame: CANFrame, realtimeNanoseconds: Int64)? {
        var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        let ms = Int32(clamping: max(0, timeout.nanosecondsClamped) / 1_000_000)
        // A signal that ends the wait early is a wait with no frame, as before (`pollOnce`).
        do throws(SystemCallError) {
            guard try pollOnce(&pfd, count: 1, timeoutMilliseconds: ms) > 0 else { return nil }
        } catch {
            throw FieldbusError(.receiveFailed, message: "\(interface): \(SystemError.text(error.errno))", errno: error.errno)
        }
        var raw = can_frame()
        var control = [UInt8](repeating: 0, count: 64)
        var received = 0
        var receiveErrno: Int32 = 0
        var stamp: Int64 = 0
        withUnsafeMutablePointer(to: &raw) { framePointer in
            var iov = iovec(iov_base: UnsafeMutableRawPointer(framePointer), iov_len: MemoryLayout<can_frame>.size)
            control.withUnsafeMutableBytes { controlBytes in
                withUnsafeMutablePointer(to: &iov) { iovPointer in
                    var message = msghdr()
                    message.msg_iov = iovPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    message.msg_controllen = controlBytes.count
                    // An interrupted call is retried (`systemCall`; MSG_DONTWAIT: a frame or EAGAIN); any other errno kept.
                    do throws(SystemCallError) {
                        received = try systemCall("recvmsg") { recvmsg(fd, &message, Int32(MSG_DONTWAIT)) }
                    } catch {
                        received = -1
                        receiveErrno = error.errno
                    }
                    // The first control message, if it is the timestamp, holds a struct timespec.
                    if received > 0, message.msg_controllen >= MemoryLayout<cmsghdr>.size {
                        let header = controlBytes.load(as: cmsghdr.self)
                        if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Self.timestampOption {
                            let offset = (MemoryLayout<cmsghdr>.size + 7) & ~7
                            let ts = controlBytes.loadUnaligned(fromByteOffset: offset, as: timespec.self)
                            stamp = Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
                        }
                    }
                }
            }
        }
        guard received == MemoryLayout<can_frame>.size else {
            if received < 0, receiveErrno == EAGAIN { return nil }
            if received < 0 {
                throw FieldbusError(.receiveFailed, message: "\(interface): \(SystemError.text(receiveErrno))",
                                    errno: receiveErrno)
            }
            throw FieldbusError(.frameShort, message: "\(interface): short read of \(received) bytes")
        }
        let id = raw.can_id
        let isError = id & CAN_ERR_FLAG != 0
        let isExtended = id & CAN_EFF_FLAG != 0
        let data = withUnsafeBytes(of: raw.data) { $0.loadUnaligned(as: UInt64.self) }
        let frame = CANFrame(
            id: isError ? id & CAN_ERR_MASK : (isExtended ? id & CAN_EFF_MASK : id & CAN_SFF_MASK),
            length: min(raw.len, 8), data: UInt64(littleEndian: data), isExtended: isExtended,
            isRemote: id & CAN_RTR_FLAG != 0, isError: isError)
        return (frame, stamp)
    }
}

extension CANInterface {
    /// Error counters and statistics of a CAN controller.
    public struct Health: Sendable, Equatable {
        public var state: CANBusState
        public var transmitErrors: Int
        public var receiveErrors: Int
        public var busOffCount: Int
        public var restarts: Int
    }

    /// State, error counters and bus-off/restart counts of `name`; throws as `state(of:)`.
    /// The corresponding C functions are `can_get_state`, `can_get_berr_counter`, `can_get_device_stats`.
    public static func health(of name: String) throws(FieldbusError) -> Health {
        let state = try state(of: name)
        var counter = can_berr_counter()
        var stats = can_device_stats()
        _ = can_get_berr_counter(name, &counter)
        _ = can_get_device_stats(name, &stats)
        return Health(state: state, transmitErrors: Int(counter.txerr), receiveErrors: Int(counter.rxerr),
                      busOffCount: Int(stats.bus_off), restarts: Int(stats.restarts))
    }

    /// Restarts a controller that is bus-off (only when restart-ms is 0); throws `CAN_RESTART_FAILED`.
    /// The corresponding C function is `can_do_restart`.
    public static func restart(_ name: String) throws(FieldbusError) {
        guard can_do_restart(name) == 0 else {
            throw FieldbusError(.restartFailed, message: "\(name): cannot restart (\(SystemError.text(errno)))", errno: errno)
        }
    }

    /// Sets bitrate and automatic bus-off restart, then brings the link up (needs CAP_NET_ADMIN); throws
    /// `CAN_INTERFACE_MISSING` or `CAN_CONFIGURE_FAILED`.
    /// The corresponding C functions are `can_do_stop`, `can_set_bitrate`, `can_set_restart_ms`, `can_do_start`.
    public static func configure(_ name: String, bitrate: Int, restartMs: Int) throws(FieldbusError) {
        guard if_nametoindex(name) != 0 else {
            throw FieldbusError(.interfaceMissing, message: "no network interface named \(name)", errno: ENODEV)
        }
        _ = can_do_stop(name)
        guard can_set_bitrate(name, UInt32(bitrate)) == 0 else {
            let hint = errno == EPERM
                ? "; bms.manage_interface needs CAP_NET_ADMIN (docs/operations.md, \"CAN interface\"), or leave the interface to systemd-networkd" : ""
            throw FieldbusError(.configureFailed,
                                message: "\(name): cannot set bitrate \(bitrate) (\(SystemError.text(errno)))\(hint)", errno: errno)
        }
        guard can_set_restart_ms(name, UInt32(restartMs)) == 0 else {
            throw FieldbusError(.configureFailed,
                                message: "\(name): cannot set restart-ms \(restartMs) (\(SystemError.text(errno)))", errno: errno)
        }
        guard can_do_start(name) == 0 else {
            throw FieldbusError(.configureFailed, message: "\(name): cannot start (\(SystemError.text(errno)))", errno: errno)
        }
    }
}
