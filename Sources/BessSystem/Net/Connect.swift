public import ControlCore
import Glibc

/// Why `Socket.connect` gave no connection.
public enum ConnectFailure: Error, Equatable {
    /// A call failed: `socket`, `connect` (the errno the connection ended with), `getsockopt`,
    /// `setsockopt`.
    case failed(SystemCallError)
    /// The peer did not answer by the deadline.
    case timedOut
    /// The caller was stopped while waiting (`running` turned false).
    case stopped
}

extension Socket {
    /// A TCP connection to `address`, non-blocking, with Nagle's algorithm off: the one
    /// non-blocking connect. The connection is waited for until `deadline` on `clock`; with a
    /// `wakeup`, a signal on it ends the wait early when `running()` has turned false.
    public static func connect(to address: SocketAddress, _ subject: String, until deadline: MonotonicInstant,
                               clock: any MonotonicClock, wakeup: Wakeup? = nil,
                               running: () -> Bool = { true }) throws(ConnectFailure) -> Socket {
        let socket = try failing { () throws(SystemCallError) in try Socket(family: address.family, type: SOCK_STREAM) }
        if try !failing({ () throws(SystemCallError) in try socket.startConnect(address, subject) }) {
            var fds = [pollfd(fd: socket.rawValue, events: Int16(POLLOUT), revents: 0)]
            if let wakeup { fds.append(pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)) }
            while fds[0].revents == 0 {
                guard running() else { throw .stopped }
                guard clock.now() < deadline else { throw .timedOut }
                if fds.count > 1 { fds[1].revents = 0 }
                _ = fds.withUnsafeMutableBufferPointer { clock.poll($0.baseAddress!, count: $0.count, until: deadline) }
            }
            let failed = try failing { () throws(SystemCallError) in try socket.pendingError(subject) }
            guard failed == 0 else { throw .failed(SystemCallError(call: "connect", subject: subject, errno: failed)) }
        }
        try failing { () throws(SystemCallError) in try socket.noDelay("TCP_NODELAY") }
        return socket
    }
}

/// `body`'s failure as `ConnectFailure.failed`.
private func failing<Result: ~Copyable>(_ body: () throws(SystemCallError) -> Result) throws(ConnectFailure) -> Result {
    do throws(SystemCallError) { return try body() } catch { throw .failed(error) }
}
