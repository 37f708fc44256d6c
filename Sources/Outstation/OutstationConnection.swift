import ControlCore
import IEC104

/// One accepted connection of the outstation: its stream (plain TCP, or TLS over it), its link
/// state machine and the octets and ASDUs on their way out. Owned by the server thread.
final class OutstationConnection {
    let id: Int
    let stream: any ByteStream
    /// The same stream as TLS, when the connection is TLS (IEC 62351-3).
    let tls: TLSStream?
    /// Its index in the groups: by address at accept, by certificate too once authenticated, again at a reload.
    var group: Int
    var splitter = FrameSplitter()
    var link: Link
    var output: [UInt8] = []
    /// ASDUs to send before the group's events (answers, confirmations), encoded.
    var answers: [[UInt8]] = []
    /// I-frames sent and not yet acknowledged, oldest first: the ASDU and whether it is an event.
    var sent: [(asdu: [UInt8], event: Bool)] = []
    let acceptedAt: MonotonicInstant
    var spoke = false
    var initialised = false
    var closeReason: String?
    /// The TLS handshake is done (always true without TLS): until then no frame is read and the
    /// connection is closed when `iec104.tls.handshake_timeout_s` passes.
    var authenticated: Bool

    /// A plain TCP connection (or a stream in memory).
    init(id: Int, stream: any ByteStream, group: Int, link: Link, now: MonotonicInstant) {
        self.id = id
        self.stream = stream
        tls = nil
        self.group = group
        self.link = link
        acceptedAt = now
        authenticated = true
    }

    /// A TLS connection, authenticated once its handshake is done.
    init(id: Int, tls: TLSStream, group: Int, link: Link, now: MonotonicInstant) {
        self.id = id
        stream = tls
        self.tls = tls
        self.group = group
        self.link = link
        acceptedAt = now
        authenticated = false
    }

    /// The peer's address and port for the journal (with TLS, beside the certificate's subject).
    var address: String { tls?.address ?? stream.peer }

    /// Answers waiting behind the window, and octets waiting for the socket, a connection may have.
    static let maxAnswers = 512
    static let maxOutput = 64 * 1024

    /// Whether the peer asks and never reads: more answers or octets waiting than it may have.
    var isBacklogged: Bool { answers.count > Self.maxAnswers || output.count > Self.maxOutput }

    /// Sends one I-frame carrying `asdu` (an event or not), as the link's window allows.
    func send(_ asdu: [UInt8], event: Bool, at now: MonotonicInstant) throws(IEC104Error) {
        let frame = try link.send(asdu, at: now)
        output += frame.encoded()
        sent.append((asdu, event))
    }

    /// Drops the sent frames the link has had acknowledged.
    func trimAcknowledged() {
        let acknowledged = sent.count - link.unacknowledgedCount
        if acknowledged > 0 { sent.removeFirst(acknowledged) }
    }

    /// The events sent and not acknowledged, in order, taken once: their entries stay in `sent`, no
    /// longer marked as events, so that `sent` still matches the link's unacknowledged frames of a
    /// connection that stays open.
    func takeUnacknowledgedEvents() -> [[UInt8]] {
        var events: [[UInt8]] = []
        for index in sent.indices where sent[index].event {
            events.append(sent[index].asdu)
            sent[index].event = false
        }
        return events
    }

    /// Writes what the stream takes of the output; a failed write closes the connection.
    func flush() {
        guard !output.isEmpty else { return }
        guard let written = stream.write(output[...]) else {
            closeReason = "write failed"
            return
        }
        output.removeFirst(written)
    }
}
