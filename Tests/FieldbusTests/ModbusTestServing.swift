import BessSystem
import Fieldbus
import Foundation
import Glibc

/// A libmodbus server context held for a test's serving thread (the test stands in for the one owner).
final class ServedModbus: @unchecked Sendable {
    let server: ModbusServerContext
    init(_ server: consuming ModbusServerContext) { self.server = server }

    /// Serves the first connection to `listener` on a thread of its own until the client closes it,
    /// then runs `after` on that thread; the semaphore is signalled when the thread ends.
    func serveOne(_ listener: TCPListener, after: @escaping @Sendable (ServedModbus) -> Void = { _ in }) -> DispatchSemaphore {
        let finished = DispatchSemaphore(value: 0)
        Thread { [self] in
            defer { finished.signal() }
            var waiting = pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 5000) > 0, let connection = listener.acceptConnection() else { return }
            var query = [UInt8](repeating: 0, count: 260)
            while server.receive(on: connection.socket.rawValue, into: &query, answer: { query, count in
                self.server.reply(query, length: count)
            }) > 0 {}
            after(self)
        }.start()
        return finished
    }
}
