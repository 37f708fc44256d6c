import Foundation
import Glibc
import Service
import Cycle
import Config
import Testing

/// `sd_notify` is tested against a datagram socket the test owns, standing in for systemd.
@Suite("systemd notification", .serialized)
struct SystemdNotifyTests {
    @Test("READY and STATUS arrive on the notify socket; nothing is sent without one")
    func notifySocket() throws {
        let path = NSTemporaryDirectory() + "bessd-notify-\(getpid()).sock"
        unlink(path)
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        #expect(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (i, byte) in path.utf8.enumerated() where i < buffer.count - 1 { buffer[i] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        #expect(bound == 0)

        unsetenv("NOTIFY_SOCKET")
        #expect(SystemdNotify.send("READY=1") == false)

        setenv("NOTIFY_SOCKET", path, 1)
        defer { unsetenv("NOTIFY_SOCKET") }
        #expect(SystemdNotify.send("READY=1\nSTATUS=simulation, 2 units online"))
        var buffer = [UInt8](repeating: 0, count: 512)
        let received = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
        #expect(received > 0)
        let message = String(decoding: buffer.prefix(max(0, received)), as: UTF8.self)
        #expect(message == "READY=1\nSTATUS=simulation, 2 units online")

        setenv("WATCHDOG_USEC", "2000000", 1)
        setenv("WATCHDOG_PID", String(getpid()), 1)
        defer {
            unsetenv("WATCHDOG_USEC")
            unsetenv("WATCHDOG_PID")
        }
        #expect(SystemdNotify.watchdogInterval() == .seconds(2))
        unsetenv("WATCHDOG_USEC")
        #expect(SystemdNotify.watchdogInterval() == nil)
    }
}
