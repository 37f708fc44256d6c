import BessSystem
import ControlCore
import Glibc
public import IEC104

/// A controlling station in raw IEC 104 frames, for the outstation's tests in and out of process: a
/// blocking loopback socket with a short receive timeout, our codec to read and write, and the
/// sequence numbers kept so the outstation's link accepts our I-frames.
public final class RawControlStation {
    /// The connected socket (closed with the station).
    public let fd: Int32
    /// The frames received and not yet taken.
    public var splitter = FrameSplitter()
    /// N(S) of our next I-frame.
    public var sendNumber = SequenceNumber.zero
    /// How many I-frames we have taken: the N(R) we acknowledge.
    public var receiveNumber = SequenceNumber.zero
    /// False: received I-frames are not acknowledged (a station that dies mid-stream, or a test
    /// that acknowledges itself with `acknowledge()`).
    public var acknowledges: Bool
    /// Set once the outstation closed the connection.
    public private(set) var closed = false

    /// Connects to 127.0.0.1:`port` from the loopback address `source` (allow-lists tell stations
    /// apart by it); throws when nothing accepts there.
    public init(port: Int, acknowledges: Bool = true, from source: String = "127.0.0.1") throws {
        self.acknowledges = acknowledges
        guard let fd = Loopback.connect(port, from: source) else {
            throw FixtureFailure("no connection to 127.0.0.1:\(port) from \(source)")
        }
        self.fd = fd
        var timeout = timeval(tv_sec: 0, tv_usec: 20_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    /// Sends `bytes` as they are (hostile frames included).
    public func send(bytes: [UInt8]) { _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }

    /// Sends `frame` as it is (sequence numbers as the caller set them).
    public func send(_ frame: Frame) { send(bytes: frame.encoded()) }

    /// Sends `asdu` as our next I-frame.
    public func send(_ asdu: ASDU) throws { send(octets: try asdu.encoded()) }

    /// Sends `octets` as the ASDU of our next I-frame.
    public func send(octets: [UInt8]) {
        send(Frame.information(send: sendNumber, receive: receiveNumber, asdu: octets))
        sendNumber = sendNumber.next
    }

    /// Acknowledges every I-frame taken so far.
    public func acknowledge() { send(.supervisory(receive: receiveNumber)) }

    /// The next frame among those received, counted (and acknowledged, if `acknowledges`) when it
    /// is an I-frame; nil when none is complete yet.
    private func take() -> Frame? {
        guard let frame = try? splitter.next() else { return nil }
        if case .information = frame {
            receiveNumber = receiveNumber.next
            if acknowledges { acknowledge() }
        }
        return frame
    }

    /// Reads what the socket holds once: waiting up to the receive timeout, or not at all when
    /// `waiting` is false. True when bytes came.
    @discardableResult
    private func receive(waiting: Bool) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, waiting ? 0 : Int32(MSG_DONTWAIT)) }
        if n == 0 { closed = true }
        if n > 0 { splitter.append(buffer[..<n]) }
        return n > 0
    }

    /// The next frame within `seconds`, nil on a timeout or a close.
    public func next(seconds: Double = 5) -> Frame? {
        let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
        while SystemClock.shared.now() < end {
            if let frame = take() { return frame }
            if closed { return nil }
            receive(waiting: true)
        }
        return nil
    }

    /// The next ASDU that satisfies `condition` (others skipped) within `seconds`.
    public func asdu(seconds: Double = 5, where condition: (ASDU) -> Bool) -> ASDU? {
        let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
        while SystemClock.shared.now() < end, !closed {
            guard case .information(_, _, let octets)? = next(seconds: 0.5), let asdu = try? ASDU(decoding: octets) else { continue }
            if condition(asdu) { return asdu }
        }
        return nil
    }

    /// True once the outstation closed the connection (within `seconds`).
    public func waitClosed(seconds: Double = 5) -> Bool {
        let end = SystemClock.shared.now() + .seconds(fromDouble: seconds)
        while SystemClock.shared.now() < end, !closed { _ = next(seconds: 0.5) }
        return closed
    }

    /// The frames received until `enough` holds of them (or the outstation closes, or `seconds` of
    /// wall time pass): a wait for what must come, never a window to see that nothing does.
    public func frames(seconds: Double = 5, until enough: ([Frame]) -> Bool) -> [Frame] {
        var frames: [Frame] = []
        _ = waitFor(seconds: seconds) {
            while let frame = take() {
                frames.append(frame)
                if enough(frames) { return true }
            }
            receive(waiting: true)
            return closed
        }
        return frames
    }

    /// The ASDUs received until `enough` holds of them.
    public func asdus(seconds: Double = 5, until enough: ([ASDU]) -> Bool) -> [ASDU] {
        Self.asdus(of: frames(seconds: seconds) { enough(Self.asdus(of: $0)) })
    }

    /// The frames that have arrived by now, read without waiting. The negative check of a test
    /// that knows the outstation has acted and gone back to waiting (its `ManualClock` is settled):
    /// what it sent meanwhile is already in our socket (loopback delivers within the send).
    public func framesArrived() -> [Frame] {
        while receive(waiting: false) {}
        var frames: [Frame] = []
        while let frame = take() { frames.append(frame) }
        return frames
    }

    /// The ASDUs among `frames`.
    public static func asdus(of frames: [Frame]) -> [ASDU] {
        frames.compactMap {
            guard case .information(_, _, let octets) = $0 else { return nil }
            return try? ASDU(decoding: octets)
        }
    }

    /// STARTDT act; true once STARTDT con arrived and, on the connection's first start, the end of
    /// initialisation.
    public func start(first: Bool = true) -> Bool {
        send(.unnumbered(.startDataTransferActivation))
        func done(_ frames: [Frame]) -> Bool {
            frames.contains(.unnumbered(.startDataTransferConfirmation)) && (!first || Self.asdus(of: frames).contains { $0.type == .endOfInitialisation })
        }
        return done(frames(until: done))
    }
}
