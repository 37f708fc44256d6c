public import ControlCore

/// A way to deliver the spool to the aggregator and take its commands back: HTTP (`UplinkSender`)
/// or MQTT 5 (`MQTTUplinkSender`). Both are built from the same collaborators (the spool queue,
/// where their messages go, what takes the aggregator's commands), so the daemon builds, starts,
/// stops and shows either through this one protocol.
public protocol UplinkTransport: AnyObject, Sendable {
    /// Starts delivering on the transport's own task or thread; the cycle never waits for it.
    func start() throws(UplinkError)
    /// Stops delivering; what is not acknowledged stays in the spool for the next start.
    func stop()
    /// The link as `bessctl status` shows it.
    var link: UplinkLink { get }
}

/// An uplink's connection as an operator sees it.
public struct UplinkLink: Sendable, Equatable {
    /// Connected (MQTT), or the last delivery went through (HTTP).
    public var connected: Bool
    /// When the aggregator last acknowledged a batch (MQTT: the broker's PUBACK), nil when unknown.
    public var lastAckUnix: Double?
    /// The last failure's code, nil after a success.
    public var lastError: String?

    public init(connected: Bool, lastAckUnix: Double? = nil, lastError: String? = nil) {
        self.connected = connected
        self.lastAckUnix = lastAckUnix
        self.lastError = lastError
    }
}

extension MQTTUplinkSender {
    /// The broker connection, its last PUBACK and last failure.
    public var link: UplinkLink {
        let s = stats
        return UplinkLink(connected: s.connected, lastAckUnix: s.lastPubackUnix, lastError: s.lastError)
    }
}
