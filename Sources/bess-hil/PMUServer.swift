import ArgumentParser
import BessSystem
import ControlCore
import Foundation
import Glibc
import Synchronization
import Synchrophasor

// bess-hil as a PMU: the C37.118.2-2011 stream it sends (`PMUStream`) and the TCP server that sends
// it (`PMUSender`), shared by `bench pmu-wire`, `bench pmu-decode` and the scenarios' `pmu` steps.

/// A PMU's C37.118.2-2011 stream as bess-hil sends it in the benches: CFG-2 and data frames for
/// `pmus` PMUs (IDCODE `idcode`, `idcode + 1`, …), each with two phasors, one analog and one digital
/// word, in integer form (FREQ in mHz from 50 Hz, DFREQ × 100) or float form (everything float32,
/// polar phasors, FREQ in Hz).
struct PMUStream {
    var idcode: UInt16
    var pmus: Int
    var float: Bool
    var dataRate: Int16 = 50
    static let timeBase: UInt32 = 1_000_000

    /// The CFG-2 frame describing the stream.
    func configuration2(secondOfCentury: UInt32 = 1_700_000_000) -> [UInt8] {
        var body: [UInt8] = []
        body.appendWord(PMUStream.timeBase)
        body.appendHalf(UInt16(pmus))
        for index in 0..<pmus {
            body += name("PMU \(index + 1)")
            body.appendHalf(idcode &+ UInt16(index))
            body.appendHalf(float ? 0x000F : 0x0000)
            body.appendHalf(2); body.appendHalf(1); body.appendHalf(1)  // PHNMR, ANNMR, DGNMR
            for channel in ["VA", "IA", "P"] + (0..<16).map({ "BREAKER \($0)" }) { body += name(channel) }
            body.appendWord(915_527); body.appendWord(0x0100_0000 | 45_776)  // PHUNIT: volts, amperes
            body.appendWord(0x0100_0001)                                       // ANUNIT: RMS, scale 1
            body.appendWord(0x0000_FFFF)                                       // DIGUNIT
            body.appendHalf(1); body.appendHalf(1)                             // FNOM 50 Hz, CFGCNT 1
        }
        body.appendHalf(UInt16(bitPattern: dataRate))
        return Frame.encode(type: .configuration2, idcode: idcode, secondOfCentury: secondOfCentury, fractionOfSecond: 0, body: body)
    }

    /// The CFG-3 frame describing the same stream (C37.118.2-2011 Table 10, version 2): names with a
    /// length byte, G_PMU_ID, PHSCALE, ANSCALE, DIGUNIT, location unspecified, class M.
    func configuration3(secondOfCentury: UInt32 = 1_700_000_000) -> [UInt8] {
        var body: [UInt8] = [0, 0]  // CONT_IDX: the only frame
        body.appendWord(PMUStream.timeBase)
        body.appendHalf(UInt16(pmus))
        for index in 0..<pmus {
            body += prefixed("PMU \(index + 1)")
            body.appendHalf(idcode &+ UInt16(index))
            body += (0..<16).map { UInt8(truncatingIfNeeded: index &* 16 &+ $0) }
            body.appendHalf(float ? 0x000F : 0x0000)
            body.appendHalf(2); body.appendHalf(1); body.appendHalf(1)
            for channel in ["VA", "IA", "P"] + (0..<16).map({ "BREAKER \($0)" }) { body += prefixed(channel) }
            for (kind, scale) in [(UInt32(0x0000_0400), Float(9.15527)), (0x0000_0C00, 0.45776)] {  // phase A voltage, current
                body.appendWord(kind); body.appendWord(scale.bitPattern); body.appendWord(Float(0).bitPattern)
            }
            body.appendWord(Float(1).bitPattern); body.appendWord(Float(0).bitPattern)  // ANSCALE
            body.appendWord(0x0000_FFFF)                                                // DIGUNIT
            for _ in 0..<3 { body.appendWord(Float.infinity.bitPattern) }               // PMU_LAT, LON, ELEV
            body.append(UInt8(ascii: "M"))
            body.appendWord(40_000); body.appendWord(0)                                 // WINDOW, GRP_DLY (µs)
            body.appendHalf(1); body.appendHalf(1)                                      // FNOM 50 Hz, CFGCNT 1
        }
        body.appendHalf(UInt16(bitPattern: dataRate))
        return Frame.encode(type: .configuration3, version: 2, idcode: idcode, secondOfCentury: secondOfCentury, fractionOfSecond: 0, body: body)
    }

    /// One data frame: every PMU reporting `frequencyHz` and `rocof` with STAT `status`.
    func data(frequencyHz: Double, rocof: Double, status: UInt16 = 0, secondOfCentury: UInt32, fraction: UInt32) -> [UInt8] {
        var body: [UInt8] = []
        for _ in 0..<pmus {
            body.appendHalf(status)
            if float {
                for value: Float in [230.5, 0.25, 12.5, -2.0] { body.appendWord(value.bitPattern) }
                body.appendWord(Float(frequencyHz).bitPattern)
                body.appendWord(Float(rocof).bitPattern)
                body.appendWord(Float(1500).bitPattern)
            } else {
                for value: Int16 in [25_000, 300, 1_200, -40] { body.appendHalf(UInt16(bitPattern: value)) }
                body.appendHalf(UInt16(bitPattern: Int16(clamping: Int(((frequencyHz - 50) * 1000).rounded()))))
                body.appendHalf(UInt16(bitPattern: Int16(clamping: Int((rocof * 100).rounded()))))
                body.appendHalf(1500)
            }
            body.appendHalf(0x0001)  // the digital word
        }
        return Frame.encode(type: .data, idcode: idcode, secondOfCentury: secondOfCentury, fractionOfSecond: fraction, body: body)
    }

    private func prefixed(_ text: String) -> [UInt8] { [UInt8(text.utf8.count)] + Array(text.utf8) }

    private func name(_ text: String) -> [UInt8] {
        Array((text + String(repeating: " ", count: 16)).utf8.prefix(16))
    }
}

extension [UInt8] {
    mutating func appendHalf(_ value: UInt16) { append(contentsOf: [UInt8(value >> 8), UInt8(value & 0xFF)]) }
    mutating func appendWord(_ value: UInt32) { appendHalf(UInt16(value >> 16)); appendHalf(UInt16(value & 0xFFFF)) }
}

/// bess-hil as a PMU (`bench pmu-wire`, a scenario's `pmu` steps): a C37.118.2-2011 server on
/// loopback TCP that answers bessd's command frames (CFG-2, CFG-3, start, stop) and, once started,
/// sends data frames at the stream's rate on absolute deadlines of the monotonic clock. A frequency
/// step goes out in the next frame; the instant just before that frame's `send` is stamped on the
/// clock the inverters' writes are stamped on. The STAT word each frame carries is `status`; while
/// `stopped` the PMU is down: its connection is closed and every new one is closed as it comes.
/// With `badFrames` each data frame is followed by a bad one measuring `badFrameHz`. With `udp` it
/// also answers on a datagram socket of the same port number (C37.118.2 Annex F's UDP: commands
/// to the PMU's port, configuration and data sent back to the address the last command came from);
/// stopped, it answers and sends nothing there. A TCP peer that stops reading holds a send at most
/// `sendTimeout`: its connection is then closed and the next one served.
final class PMUSender: @unchecked Sendable {
    /// Frames a PMU's client must refuse, sent between the good ones.
    enum BadFrames: String, CaseIterable {
        /// The frame's CHK is wrong (its last byte inverted).
        case crc
        /// Another stream's IDCODE, CRC right.
        case idcode
    }

    /// What a bad frame measures: a frequency bessd would trip on if it took it.
    static let badFrameHz = 47.0

    /// The STAT words a scenario's `pmu` step names (C37.118.2-2011 Table 7).
    enum Status: String, CaseIterable {
        /// Bits 15–14 = 0, synchronised.
        case valid
        /// Bits 15–14 = 3: PMU error, do not use the data.
        case invalid
        /// Bit 13: the PMU lost time synchronisation (the data itself is marked good).
        case unsynchronised
        /// No PMU: the server closes its connection and every new one.
        case stopped

        /// The STAT word a data frame carries (`stopped` sends none).
        var word: UInt16 {
            switch self {
            case .valid, .stopped: 0x0000
            case .invalid: 0xC000
            case .unsynchronised: 0x2000
            }
        }
    }

    struct State {
        var hz = 50.0
        var status: UInt16 = 0
        var stopped = false
        var badFrames: BadFrames?
        var generation = 0
        var stepPending = false
        var stepSentAt: MonotonicInstant?
        var streaming = false
        var frames = 0
        var connections = 0
        /// Connections closed because a send found no room within `sendTimeout`.
        var sendTimeouts = 0
    }

    let stream: PMUStream
    let state = Mutex(State())
    let port: UInt16
    /// The longest a TCP send waits for room in the socket before the connection is given up.
    let sendTimeout: Duration
    /// BessSystem's listener on 127.0.0.1; nil once stopped.
    private var listener: TCPListener?
    /// The datagram socket (`udp`), -1 without one.
    private var datagrams: Int32 = -1
    private let running = Atomic<Bool>(true)
    /// Serving threads not yet finished.
    private let serving = Atomic<Int>(0)

    init(stream: PMUStream, udp: Bool = false, sendTimeout: Duration = .seconds(1)) throws {
        self.stream = stream
        self.sendTimeout = sendTimeout
        let listener: TCPListener
        do throws(SystemCallError) {
            listener = try TCPListener(host: "127.0.0.1", port: 0, backlog: 4)
        } catch {
            throw ValidationError("PMU sender: \(error.call == "socket" ? "socket" : "bind or listen") failed (errno \(error.errno))")
        }
        self.listener = listener
        port = UInt16(listener.port)
        guard udp else { return }
        // The datagrams on the same port number.
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        datagrams = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        let udpBound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(datagrams, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard datagrams >= 0, udpBound == 0 else {
            self.listener = nil
            if datagrams >= 0 { close(datagrams) }
            throw ValidationError("PMU sender: UDP port \(port) not bound (errno \(errno))")
        }
    }

    func start() {
        for udp in [false, true] where !udp || datagrams >= 0 {
            serving.add(1, ordering: .relaxed)
            Thread { [self] in
                if udp { serveDatagrams() } else { serve() }
                serving.subtract(1, ordering: .releasing)
            }.start()
        }
    }

    func stop() {
        running.store(false, ordering: .relaxed)
        while serving.load(ordering: .acquiring) > 0 { usleep(1_000) }
        listener = nil
        if datagrams >= 0 { close(datagrams) }
    }

    /// Sets the frequency the next frame carries and forgets the previous stamp.
    func step(to hz: Double) {
        state.withLock {
            $0.hz = hz
            $0.generation += 1
            $0.stepPending = true
            $0.stepSentAt = nil
        }
    }

    var frames: Int { state.withLock { $0.frames } }

    /// What the PMU measures and says from the next frame on (nil: unchanged), without a step's stamp.
    /// `badFrames`: `.some(nil)` stops them.
    func set(hz: Double? = nil, status: Status? = nil, badFrames: BadFrames?? = nil) {
        state.withLock {
            if let hz { $0.hz = hz }
            if let badFrames { $0.badFrames = badFrames }
            if let status {
                $0.status = status.word
                $0.stopped = status == .stopped
            }
        }
    }

    private func serve() {
        guard let listener else { return }
        while running.load(ordering: .relaxed) {
            var pending = pollfd(fd: listener.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&pending, 1, 100) > 0 else { continue }
            // Non-blocking with Nagle off.
            guard let connection = listener.acceptConnection() else { continue }
            // A PMU that is down: the connection ends at once.
            if state.withLock({ $0.stopped }) { continue }
            state.withLock {
                $0.connections += 1
                $0.streaming = false
            }
            session(connection.socket.rawValue)
            try? connection.takeSocket().close()
        }
    }

    /// One connection: commands in, configuration and data frames out, until it closes or we stop.
    private func session(_ connection: Int32) {
        let period = Duration.nanoseconds(1_000_000_000 / Int64(max(1, Int(stream.dataRate))))
        var next = SystemClock.shared.now() + period
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while running.load(ordering: .relaxed), !state.withLock({ $0.stopped }) {
            let now = SystemClock.shared.now()
            if now >= next {
                guard sendFrame({ send(connection, $0) }) else { return }
                while next <= now { next = next + period }
                continue
            }
            // Whole milliseconds, rounded up: a frame goes out at most 1 ms after its deadline.
            var pending = pollfd(fd: connection, events: Int16(POLLIN), revents: 0)
            guard poll(&pending, 1, Int32(((next - now).nanosecondsClamped + 999_999) / 1_000_000)) > 0 else { continue }
            let count = recv(connection, &chunk, chunk.count, 0)
            guard count > 0 else { return }
            buffer += chunk[0..<count]
            while !buffer.isEmpty {
                let size: Int?
                do {
                    size = try Frame.size(atStartOf: buffer)
                } catch {
                    buffer.removeAll()  // not a frame: drop what came
                    break
                }
                guard let size, size <= buffer.count else { break }
                let bytes = Array(buffer.prefix(size))
                buffer.removeFirst(size)
                guard answer(bytes, { send(connection, $0) }) else { return }
            }
        }
    }

    /// One command frame (anything else is ignored): data on or off, or the configuration asked for
    /// sent with `reply`. False when the reply could not be sent.
    private func answer(_ bytes: [UInt8], _ reply: ([UInt8]) -> Bool) -> Bool {
        guard let frame = try? Frame(decoding: bytes), frame.header.type == .command, frame.body.count >= 2 else { return true }
        let start = frame.body.startIndex
        switch UInt16(frame.body[start]) << 8 | UInt16(frame.body[start + 1]) {
        case Command.stopData.rawValue: state.withLock { $0.streaming = false }
        case Command.startData.rawValue: state.withLock { $0.streaming = true }
        case Command.sendConfiguration2.rawValue: return reply(stream.configuration2(secondOfCentury: wallClock().seconds))
        case Command.sendConfiguration3.rawValue: return reply(stream.configuration3(secondOfCentury: wallClock().seconds))
        default: break
        }
        return true
    }

    /// UDP: each datagram one command; the answer and the data go to where the last command came from.
    private func serveDatagrams() {
        let period = Duration.nanoseconds(1_000_000_000 / Int64(max(1, Int(stream.dataRate))))
        var next = SystemClock.shared.now() + period
        var peer: sockaddr_in?
        var chunk = [UInt8](repeating: 0, count: 4096)
        func transmit(_ bytes: [UInt8], to address: sockaddr_in) -> Bool {
            var address = address
            return withUnsafePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { to in
                    bytes.withUnsafeBytes { sendto(datagrams, $0.baseAddress, $0.count, 0, to, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            } == bytes.count
        }
        while running.load(ordering: .relaxed) {
            let now = SystemClock.shared.now()
            if now >= next {
                if let peer, !state.withLock({ $0.stopped }) { _ = sendFrame { transmit($0, to: peer) } }
                while next <= now { next = next + period }
                continue
            }
            var pending = pollfd(fd: datagrams, events: Int16(POLLIN), revents: 0)
            guard poll(&pending, 1, Int32(((next - now).nanosecondsClamped + 999_999) / 1_000_000)) > 0 else { continue }
            var from = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let count = withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(datagrams, &chunk, chunk.count, 0, $0, &length) }
            }
            // A stopped PMU answers nothing.
            guard count > 0, !state.withLock({ $0.stopped }) else { continue }
            peer = from
            _ = answer(Array(chunk[0..<count])) { transmit($0, to: from) }
        }
    }

    /// The data frame due now, when data is on, sent with `transmit`; stamps a pending step as it goes out.
    private func sendFrame(_ transmit: ([UInt8]) -> Bool) -> Bool {
        let (streaming, hz, status, bad, generation) = state.withLock { ($0.streaming, $0.hz, $0.status, $0.badFrames, $0.generation) }
        guard streaming else { return true }
        let (seconds, fraction) = wallClock()
        let frame = stream.data(frequencyHz: hz, rocof: 0, status: status, secondOfCentury: seconds, fraction: fraction)
        let stamp = SystemClock.shared.now()
        guard transmit(frame) else { return false }
        if let bad {
            var other = stream
            if bad == .idcode { other.idcode &+= 1 }
            var wrong = other.data(frequencyHz: Self.badFrameHz, rocof: 0, status: status, secondOfCentury: seconds, fraction: fraction)
            if bad == .crc { wrong[wrong.count - 1] ^= 0xFF }
            guard transmit(wrong) else { return false }
        }
        state.withLock {
            $0.frames += 1
            if $0.stepPending, $0.generation == generation {
                $0.stepPending = false
                $0.stepSentAt = stamp
            }
        }
        return true
    }

    /// Sends all of `bytes`; false when the connection failed, or when the peer left no room for
    /// `sendTimeout` (a client that stopped reading must not hold the server).
    private func send(_ connection: Int32, _ bytes: [UInt8]) -> Bool {
        let deadline = SystemClock.shared.now() + sendTimeout
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK {
                // The socket is non-blocking: wait for room until the deadline.
                guard SystemClock.shared.now() < deadline else {
                    state.withLock { $0.sendTimeouts += 1 }
                    return false
                }
                var room = pollfd(fd: connection, events: Int16(POLLOUT), revents: 0)
                _ = SystemClock.shared.poll(&room, count: 1, until: deadline)
                continue
            }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// SOC and FRACSEC (TIME_BASE 1,000,000) from the wall clock.
    private func wallClock() -> (seconds: UInt32, fraction: UInt32) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return (UInt32(truncatingIfNeeded: now.tv_sec), UInt32(now.tv_nsec / 1_000))
    }
}
