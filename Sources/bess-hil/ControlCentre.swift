import BessSystem
import ControlCore
import Foundation
import Glibc
import IEC104

/// A small IEC 60870-5-104 controlling station (the grid operator's control centre) for the HIL
/// rig, built on the project's own codec (Sources/IEC104): it connects to bessd's outstation, starts
/// data transfer, sends single and set-point commands (direct execute) and waits for their
/// activation confirmation, positive or negative.
///
/// A thread of its own reads the link: it acknowledges received I-frames (an S-frame after w of
/// them, or within a second), answers TESTFR act, confirms STARTDT and the commands, and tests an
/// idle link itself so the outstation's t0/t3 never close it while a scenario waits. Spontaneous
/// and interrogation data are acknowledged and dropped: this station only commands. Every failure
/// is a `ScenarioError` `SCENARIO_IEC104_FAILED` saying what (connect, STARTDT, confirmation, link).
final class ControlCentre: @unchecked Sendable {
    /// A command's activation confirmation: the ASDU the outstation sent back with COT 7.
    struct Confirmation: CustomStringConvertible {
        /// P/N = 0: the outstation accepted the command.
        var positive: Bool
        /// The confirmation as received.
        var asdu: ASDU

        var description: String { positive ? "ACT_CON positive" : "ACT_CON negative" }
    }

    /// The station's common address (the outstation's `iec104.common_address`).
    let commonAddress: UInt16
    /// Received I-frames acknowledged at the latest after this many (the standard's w).
    let w = 8

    private let fd: Int32
    private let state = NSCondition()
    // Guarded by `state`:
    private var started = false
    private var closedBecause: ScenarioError?
    private var sendNumber = SequenceNumber.zero
    private var receiveNumber = SequenceNumber.zero
    private var unacknowledgedReceived = 0
    private var firstUnacknowledgedAt: MonotonicInstant?
    private var lastSentAt: MonotonicInstant
    private var lastReceivedAt: MonotonicInstant
    private var testSentAt: MonotonicInstant?
    private var pending: (type: TypeID, address: UInt32)?
    private var confirmation: Confirmation?
    private var readerRunning = true
    private var stopping = false
    private var socketClosed = false

    /// Connects to `host:port`, starts the reader thread and data transfer (STARTDT act, waits for
    /// its con within `timeout`).
    init(host: String = "127.0.0.1", port: Int, commonAddress: UInt16, timeout: Duration = .seconds(3)) throws(ScenarioError) {
        self.commonAddress = commonAddress
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socketFD >= 0 else { throw ScenarioError(.iec104, "socket(): errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr(host)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(socketFD, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            let error = errno
            Glibc.close(socketFD)
            throw ScenarioError(.iec104, "connect to \(host):\(port): errno \(error)")
        }
        var one: Int32 = 1
        setsockopt(socketFD, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        fd = socketFD
        let now = SystemClock.shared.now()
        lastSentAt = now
        lastReceivedAt = now
        let thread = Thread { [self] in readLoop() }
        thread.name = "hil-control-centre"
        thread.start()
        state.lock()
        write(.unnumbered(.startDataTransferActivation))
        let deadline = Date(timeIntervalSinceNow: timeout.secondsDouble)
        while !started, closedBecause == nil, state.wait(until: deadline) {}
        let failure = started ? nil : closedBecause ?? ScenarioError(.iec104, "no STARTDT con within \(timeout)")
        state.unlock()
        if let failure {
            close()
            throw failure
        }
    }

    /// True while the connection is open and started.
    var isOpen: Bool {
        state.lock()
        defer { state.unlock() }
        return started && closedBecause == nil
    }

    /// C_SC_NA_1 (45), direct execute, to `address`; the activation confirmation.
    func singleCommand(_ address: UInt32, on: Bool, timeout: Duration = .seconds(3)) throws(ScenarioError) -> Confirmation {
        try command(address, .singleCommand(SingleCommand(on: on)), timeout: timeout)
    }

    /// C_SE_NC_1 (50), direct execute, of `value` (engineering units: MW) to `address`; the
    /// activation confirmation.
    func setpoint(_ address: UInt32, _ value: Float, timeout: Duration = .seconds(3)) throws(ScenarioError) -> Confirmation {
        try command(address, .setpointFloat(value, SetpointQualifier(select: false)), timeout: timeout)
    }

    /// Sends one command object with COT 6 (activation) and waits for its COT 7 of the same type
    /// and address.
    func command(_ address: UInt32, _ element: InformationElement, timeout: Duration) throws(ScenarioError) -> Confirmation {
        let asdu = ASDU(type: element.type, cause: CauseOfTransmission(cause: .activation), commonAddress: commonAddress,
                        objects: [InformationObject(address: address, element: element)])
        let octets: [UInt8]
        do { octets = try asdu.encoded() } catch { throw ScenarioError(.iec104, "\(error)") }
        state.lock()
        defer { state.unlock() }
        if let closedBecause { throw closedBecause }
        guard started else { throw ScenarioError(.iec104, "data transfer not started") }
        pending = (element.type, address)
        confirmation = nil
        write(.information(send: sendNumber, receive: receiveNumber, asdu: octets))
        sendNumber = sendNumber.next
        unacknowledgedReceived = 0
        firstUnacknowledgedAt = nil
        let deadline = Date(timeIntervalSinceNow: timeout.secondsDouble)
        while confirmation == nil, closedBecause == nil, state.wait(until: deadline) {}
        pending = nil
        if let confirmation { return confirmation }
        if let closedBecause { throw closedBecause }
        throw ScenarioError(.iec104, "no activation confirmation of \(element.type) to IOA \(address) within \(timeout)")
    }

    /// Ends the connection: stops the reader thread, waits for it, closes the socket. Call it
    /// once done (the reader thread holds the station until then); later calls do nothing.
    func close() {
        state.lock()
        defer { state.unlock() }
        if !stopping {
            stopping = true
            if closedBecause == nil { closedBecause = ScenarioError(.iec104, "closed by the scenario") }
            shutdown(fd, Int32(SHUT_RDWR))
        }
        while readerRunning { state.wait() }
        if !socketClosed {
            socketClosed = true
            Glibc.close(fd)
        }
    }

    // MARK: the reader thread

    private func readLoop() {
        var splitter = FrameSplitter()
        var buffer = [UInt8](repeating: 0, count: 4096)
        defer {
            state.lock()
            readerRunning = false
            state.broadcast()
            state.unlock()
        }
        while true {
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // A signal that ends the wait early counts as the timeout (`pollOnce`).
            let polled = Result { () throws(SystemCallError) in try pollOnce(&poller, count: 1, timeoutMilliseconds: 100) }
            state.lock()
            if closedBecause != nil {
                state.unlock()
                return
            }
            keepAlive(now: SystemClock.shared.now())
            state.unlock()
            let ready: Int32
            switch polled {
            case .success(let count): ready = count
            case .failure(let error):
                fail(ScenarioError(.iec104, "poll(): errno \(error.errno)"))
                return
            }
            guard ready > 0 else { continue }
            let count = read(fd, &buffer, buffer.count)
            guard count > 0 else {
                fail(ScenarioError(.iec104, count == 0 ? "the outstation closed the connection" : "read(): errno \(errno)"))
                return
            }
            splitter.append(buffer.prefix(count))
            do {
                while let frame = try splitter.next() { handle(frame) }
            } catch {
                fail(ScenarioError(.iec104, "\(error)"))
                return
            }
        }
    }

    /// Acts on one received frame (called on the reader thread).
    private func handle(_ frame: Frame) {
        state.lock()
        defer { state.unlock() }
        let now = SystemClock.shared.now()
        lastReceivedAt = now
        switch frame {
        case let .information(send, _, octets):
            guard send == receiveNumber else {
                closeLocked(ScenarioError(.iec104, "I-frame N(S) \(send), \(receiveNumber) expected"))
                return
            }
            receiveNumber = receiveNumber.next
            unacknowledgedReceived += 1
            if firstUnacknowledgedAt == nil { firstUnacknowledgedAt = now }
            if unacknowledgedReceived >= w { acknowledgeReceived() }
            guard let asdu = try? ASDU(decoding: octets) else { return }
            if let pending, asdu.cause.cause == .activationConfirmation, asdu.type == pending.type,
               asdu.objects.first?.address == pending.address {
                confirmation = Confirmation(positive: !asdu.cause.negative, asdu: asdu)
                state.broadcast()
            }
        case .supervisory:
            break
        case .unnumbered(.startDataTransferConfirmation):
            started = true
            state.broadcast()
        case .unnumbered(.testFrameActivation):
            write(.unnumbered(.testFrameConfirmation))
        case .unnumbered(.testFrameConfirmation):
            testSentAt = nil
        case .unnumbered(let function):
            closeLocked(ScenarioError(.iec104, "unexpected U-frame \(function)"))
        }
    }

    /// Acknowledges received I-frames within a second and tests a link idle for 10 s (under `state`).
    private func keepAlive(now: MonotonicInstant) {
        if let since = firstUnacknowledgedAt, now - since >= .seconds(1) { acknowledgeReceived() }
        if let testSentAt {
            if now - testSentAt >= .seconds(15) { closeLocked(ScenarioError(.iec104, "TESTFR act unconfirmed for 15 s")) }
        } else if now - lastSentAt >= .seconds(10) || now - lastReceivedAt >= .seconds(10) {
            testSentAt = now
            write(.unnumbered(.testFrameActivation))
        }
    }

    private func acknowledgeReceived() {
        unacknowledgedReceived = 0
        firstUnacknowledgedAt = nil
        write(.supervisory(receive: receiveNumber))
    }

    private func fail(_ error: ScenarioError) {
        state.lock()
        closeLocked(error)
        state.unlock()
    }

    private func closeLocked(_ error: ScenarioError) {
        if closedBecause == nil { closedBecause = error }
        shutdown(fd, Int32(SHUT_RDWR))
        state.broadcast()
    }

    /// Writes one frame whole (under `state`); a failed write closes the connection.
    private func write(_ frame: Frame) {
        // A connection already closing takes no more frames (the send would only fail and close it again).
        guard closedBecause == nil else { return }
        let bytes = frame.encoded()
        let fd = fd
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { raw in
                Result { () throws(SystemCallError) in try systemCall("send") { send(fd, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL)) } }
            }
            guard case .success(let written) = sent, written > 0 else {
                let code: Int32 = if case .failure(let error) = sent { error.errno } else { errno }
                closeLocked(ScenarioError(.iec104, "send(): errno \(code)"))
                return
            }
            offset += written
        }
        lastSentAt = SystemClock.shared.now()
    }
}
