public import Synchronization

/// The outstation's counters for /metrics (docs/iec104.md), written by its thread, read by any.
public final class OutstationCounters: Sendable {
    public let commandsAccepted = Atomic<UInt64>(0)
    public let commandsRefused = Atomic<UInt64>(0)
    public let connectionsRefused = Atomic<UInt64>(0)
    public let connectionsClosed = Atomic<UInt64>(0)
    public let protocolErrors = Atomic<UInt64>(0)
    public let negativeAnswers = Atomic<UInt64>(0)
    public let eventsQueued = Atomic<UInt64>(0)
    public let eventsDropped = Atomic<UInt64>(0)
    public let interrogations = Atomic<UInt64>(0)
    /// Connections open now.
    public let connected = Atomic<Int>(0)
    /// TLS sessions begun on accepted connections (only for peers a group admits).
    package let tlsSessionsBegun = Atomic<UInt64>(0)

    init() {}
}
