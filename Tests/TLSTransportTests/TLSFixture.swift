import Foundation
import Glibc
import TestSupport
import TLSTransport

extension TLSFixture {
    /// The server context the tests listen with: this fixture's server certificate and CA.
    func serverContext(allowedPeers: [String]? = nil, crl: Bool = false) throws -> TLSServerContext {
        try TLSServerContext(certificateFile: path("server.pem"), privateKeyFile: path("server.key"), caFile: path("ca.pem"),
                             allowedPeers: allowedPeers, crlFile: crl ? path("crl.pem") : nil)
    }
}

/// Loopback sockets for the tests: a listener on a port the kernel picks, accept and connect with a
/// deadline, and the poll loop that drives a handshake.
enum TestSocket {
    /// A listening socket on 127.0.0.1 and the port the kernel gave it.
    static func listen() throws -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw FixtureFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound, Glibc.listen(fd, 4) == 0 else {
            close(fd)
            throw FixtureFailure("bind/listen: \(errno)")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// The next connection on `listener`, non-blocking, or nil when none came within `seconds`.
    static func accept(_ listener: Int32, within seconds: Double = 10) -> Int32? {
        guard wait(listener, Int16(POLLIN), within: seconds) else { return nil }
        let fd = Glibc.accept(listener, nil, nil)
        guard fd >= 0 else { return nil }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// A non-blocking socket connected to 127.0.0.1:`port`.
    static func connect(_ port: Int) throws -> Int32 {
        guard let fd = Loopback.connect(port) else { throw FixtureFailure("connect to \(port): \(errno)") }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    /// True once `fd` is ready for `events` within `seconds`.
    static func wait(_ fd: Int32, _ events: Int16, within seconds: Double) -> Bool {
        var entry = pollfd(fd: fd, events: events, revents: 0)
        return poll(&entry, 1, Int32(seconds * 1000)) == 1
    }

    /// Drives the handshake to its end, polling as each step asks; nil when `seconds` pass first.
    static func handshake(_ connection: TLSConnection, within seconds: Double = 10) throws(TLSError) -> Bool {
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < end {
            switch try connection.handshake() {
            case .complete: return true
            case .wantRead: _ = wait(connection.fileDescriptor, Int16(POLLIN), within: 1)
            case .wantWrite: _ = wait(connection.fileDescriptor, Int16(POLLOUT), within: 1)
            }
        }
        return false
    }

    /// Reads until `terminator` arrives, the stream ends or `seconds` pass; the bytes read.
    static func read(_ connection: TLSConnection, until terminator: UInt8 = 0x0A, within seconds: Double = 10) throws(TLSError) -> [UInt8] {
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 512)
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while ContinuousClock.now < end, !received.contains(terminator) {
            let outcome = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(TLSError) -> TLSTransfer in try connection.read(into: raw) }
            }.get()
            switch outcome {
            case .transferred(let count): received += buffer.prefix(count)
            case .wantRead: _ = wait(connection.fileDescriptor, Int16(POLLIN), within: 1)
            case .wantWrite: _ = wait(connection.fileDescriptor, Int16(POLLOUT), within: 1)
            case .endOfStream: return received
            }
        }
        return received
    }

    /// Writes all of `bytes`, polling while the socket is full.
    static func write(_ connection: TLSConnection, _ bytes: [UInt8], within seconds: Double = 10) throws(TLSError) -> Bool {
        var written = 0
        let end = ContinuousClock.now + .milliseconds(Int(seconds * 1000))
        while written < bytes.count, ContinuousClock.now < end {
            let outcome = try bytes[written...].withUnsafeBytes { raw in
                Result { () throws(TLSError) -> TLSTransfer in try connection.write(raw) }
            }.get()
            switch outcome {
            case .transferred(let count): written += count
            case .wantRead: _ = wait(connection.fileDescriptor, Int16(POLLIN), within: 1)
            case .wantWrite: _ = wait(connection.fileDescriptor, Int16(POLLOUT), within: 1)
            case .endOfStream: return false
            }
        }
        return written == bytes.count
    }
}
