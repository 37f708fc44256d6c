public import BessBase
public import ControlCore

/// The link parameters of IEC 60870-5-104 §5 for one connection.
public struct LinkSettings: Hashable, Sendable {
    /// k: I-frames this station may have sent and not yet had acknowledged (1…32767).
    public let k: Int
    /// w: received I-frames after which this station acknowledges at the latest (1…k).
    public let w: Int
    /// t1: how long a sent I-frame or TESTFR act may stay unacknowledged before the connection closes.
    public let t1: Duration
    /// t2: how long received I-frames may stay unacknowledged when there is nothing to send (t2 < t1).
    public let t2: Duration
    /// t3: how long the link may be idle (nothing received) before this station sends TESTFR act.
    public let t3: Duration

    /// Parameters within the standard's rules (k 1…32767, w 1…k, 0 < t2 < t1, t3 > 0); nil otherwise.
    public init?(k: Int = 12, w: Int = 8, t1: Duration = .seconds(15), t2: Duration = .seconds(10), t3: Duration = .seconds(20)) {
        guard (1...32767).contains(k), (1...k).contains(w), t2 > .zero, t1 > t2, t3 > .zero else { return nil }
        self.k = k
        self.w = w
        self.t1 = t1
        self.t2 = t2
        self.t3 = t3
    }

    /// The standard's defaults: k 12, w 8, t1 15 s, t2 10 s, t3 20 s.
    public static let standard = LinkSettings()!
}

/// What the caller of `Link` does next.
public enum LinkAction: Hashable, Sendable {
    /// Put this frame on the wire.
    case send(Frame)
    /// An accepted I-frame's ASDU: decode it (`ASDU(decoding:)`) and handle it.
    case deliver([UInt8])
    /// Close the connection, for this reason (log its code).
    case close(IEC104Error)
}

/// The link layer of one IEC 104 connection on the controlled station's (outstation's) side, as a
/// pure state machine: no socket, no thread, no clock. The caller passes every received frame and
/// the monotonic instant, asks before each I-frame it sends, and calls `tick(at:)` when
/// `nextDeadline` passes; it performs the actions returned, in order.
///
/// - Data transfer starts with STARTDT act (answered STARTDT con) and stops with STOPDT act: received
///   I-frames are acknowledged at once, and STOPDT con is sent when every sent I-frame is acknowledged.
///   An I-frame received while stopped closes the connection (`IEC104_NOT_STARTED`).
/// - TESTFR act is answered TESTFR con in any state.
/// - V(S) and V(R) count modulo 32768. A received N(R) outside the sent and unacknowledged frames
///   (`IEC104_BAD_ACK`) or an N(S) other than V(R) (`IEC104_BAD_SEQUENCE`) closes the connection.
/// - At most k I-frames are unacknowledged; received I-frames are acknowledged by an S-frame after w
///   of them, or after t2 when nothing carried the acknowledgement; nothing received for t3 sends
///   TESTFR act; a sent I-frame or TESTFR act unacknowledged for t1 closes the connection.
public struct Link: Sendable {
    /// The parameters.
    public let settings: LinkSettings
    /// STARTDT received and no STOPDT since: I-frames may flow.
    public private(set) var isStarted = false
    /// V(S): the N(S) of the next I-frame sent.
    public private(set) var sendNumber = SequenceNumber.zero
    /// V(R): the N(S) expected of the next I-frame received.
    public private(set) var receiveNumber = SequenceNumber.zero
    /// The N(S) of the oldest sent I-frame not acknowledged (V(S) when all are).
    public private(set) var acknowledgedNumber = SequenceNumber.zero
    /// Why the connection was closed; once set, every call answers with it.
    public private(set) var closeReason: IEC104Error?

    private var sentAt: [MonotonicInstant] = []
    private var unacknowledgedReceived = 0
    private var firstUnacknowledgedReceivedAt: MonotonicInstant?
    private var lastReceivedAt: MonotonicInstant
    private var testSentAt: MonotonicInstant?
    private var stopConfirmationOwed = false

    /// A link for a connection accepted at `now`.
    public init(settings: LinkSettings = .standard, now: MonotonicInstant) {
        self.settings = settings
        lastReceivedAt = now
        sentAt.reserveCapacity(settings.k)
    }

    /// Sent I-frames not yet acknowledged.
    public var unacknowledgedCount: Int { sentAt.count }

    /// Received I-frames not yet acknowledged.
    public var unacknowledgedReceivedCount: Int { unacknowledgedReceived }

    /// True when an I-frame may be sent now: started, not closed, fewer than k unacknowledged.
    public var canSend: Bool { isStarted && closeReason == nil && sentAt.count < settings.k }

    /// The earliest instant `tick(at:)` has something to do; nil when only a received frame can.
    public var nextDeadline: MonotonicInstant? {
        guard closeReason == nil else { return nil }
        var deadlines: [MonotonicInstant] = []
        if let first = sentAt.first { deadlines.append(first + settings.t1) }
        if let testSentAt { deadlines.append(testSentAt + settings.t1) } else { deadlines.append(lastReceivedAt + settings.t3) }
        if let firstUnacknowledgedReceivedAt { deadlines.append(firstUnacknowledgedReceivedAt + settings.t2) }
        return deadlines.min()
    }

    /// Handles a frame received at `now`.
    public mutating func received(_ frame: Frame, at now: MonotonicInstant) -> [LinkAction] {
        if let closeReason { return [.close(closeReason)] }
        lastReceivedAt = now
        var actions: [LinkAction] = []
        switch frame {
        case let .information(send, receive, asdu):
            guard isStarted else {
                return close(IEC104Error(.notStarted, message: "I-frame N(S) \(send) received while data transfer is stopped"))
            }
            guard send == receiveNumber else {
                return close(IEC104Error(.badSequence, message: "I-frame N(S) \(send) received, \(receiveNumber) expected"))
            }
            if let error = acknowledge(receive) { return close(error) }
            receiveNumber = receiveNumber.next
            unacknowledgedReceived += 1
            if firstUnacknowledgedReceivedAt == nil { firstUnacknowledgedReceivedAt = now }
            actions.append(.deliver(asdu))
            if unacknowledgedReceived >= settings.w { actions.append(.send(acknowledgeReceived())) }
        case let .supervisory(receive):
            if let error = acknowledge(receive) { return close(error) }
        case .unnumbered(.startDataTransferActivation):
            isStarted = true
            stopConfirmationOwed = false
            actions.append(.send(.unnumbered(.startDataTransferConfirmation)))
        case .unnumbered(.stopDataTransferActivation):
            isStarted = false
            if unacknowledgedReceived > 0 { actions.append(.send(acknowledgeReceived())) }
            stopConfirmationOwed = true
        case .unnumbered(.testFrameActivation):
            actions.append(.send(.unnumbered(.testFrameConfirmation)))
        case .unnumbered(.testFrameConfirmation):
            testSentAt = nil
        case .unnumbered(.startDataTransferConfirmation), .unnumbered(.stopDataTransferConfirmation):
            return close(IEC104Error(.unexpectedFrame, message: "a STARTDT/STOPDT confirmation, though this station sends no activation"))
        }
        if stopConfirmationOwed, sentAt.isEmpty {
            stopConfirmationOwed = false
            actions.append(.send(.unnumbered(.stopDataTransferConfirmation)))
        }
        return actions
    }

    /// The I-frame carrying `asdu` (its octets, from `ASDU.encoded()`), numbered V(S) and carrying
    /// V(R) as acknowledgement. Refused with `IEC104_NOT_STARTED` while stopped, `IEC104_WINDOW_FULL`
    /// at k unacknowledged (check `canSend` first), `IEC104_TOO_LARGE` for an ASDU outside 6…249 octets.
    public mutating func send(_ asdu: [UInt8], at now: MonotonicInstant) throws(IEC104Error) -> Frame {
        if let closeReason { throw closeReason }
        guard isStarted else { throw IEC104Error(.notStarted, message: "data transfer is stopped") }
        guard sentAt.count < settings.k else { throw IEC104Error(.windowFull, message: "\(sentAt.count) I-frames unacknowledged (k = \(settings.k))") }
        guard asdu.count >= ASDU.headerLength, asdu.count <= iec104MaxASDULength else {
            throw IEC104Error(.tooLarge, message: "ASDU of \(asdu.count) octets outside 6…\(iec104MaxASDULength)")
        }
        let frame = Frame.information(send: sendNumber, receive: receiveNumber, asdu: asdu)
        sendNumber = sendNumber.next
        sentAt.append(now)
        unacknowledgedReceived = 0
        firstUnacknowledgedReceivedAt = nil
        return frame
    }

    /// The timers at `now`: t1 expiry closes; t2 sends an S-frame; t3 sends TESTFR act.
    public mutating func tick(at now: MonotonicInstant) -> [LinkAction] {
        if let closeReason { return [.close(closeReason)] }
        if let first = sentAt.first, now >= first + settings.t1 {
            return close(IEC104Error(.t1Expired, message: "I-frame N(S) \(acknowledgedNumber) unacknowledged for t1 = \(settings.t1)"))
        }
        if let testSentAt, now >= testSentAt + settings.t1 {
            return close(IEC104Error(.t1Expired, message: "TESTFR act unconfirmed for t1 = \(settings.t1)"))
        }
        var actions: [LinkAction] = []
        if let since = firstUnacknowledgedReceivedAt, now >= since + settings.t2 {
            actions.append(.send(acknowledgeReceived()))
        }
        if testSentAt == nil, now >= lastReceivedAt + settings.t3 {
            testSentAt = now
            actions.append(.send(.unnumbered(.testFrameActivation)))
        }
        return actions
    }

    /// Takes a received N(R): the frames before it are acknowledged. Nil, or why it is impossible.
    private mutating func acknowledge(_ receive: SequenceNumber) -> IEC104Error? {
        let outstanding = sendNumber.distance(from: acknowledgedNumber)
        let acknowledged = receive.distance(from: acknowledgedNumber)
        guard acknowledged <= outstanding else {
            return IEC104Error(.badAcknowledgement, message: "N(R) \(receive) received, frames \(acknowledgedNumber)…\(sendNumber) outstanding")
        }
        sentAt.removeFirst(acknowledged)
        acknowledgedNumber = receive
        return nil
    }

    /// The S-frame acknowledging everything received.
    private mutating func acknowledgeReceived() -> Frame {
        unacknowledgedReceived = 0
        firstUnacknowledgedReceivedAt = nil
        return .supervisory(receive: receiveNumber)
    }

    private mutating func close(_ error: IEC104Error) -> [LinkAction] {
        closeReason = error
        return [.close(error)]
    }
}
