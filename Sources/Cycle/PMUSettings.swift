/// `grid_integration.pmu` as the cycle runs it (Config maps the YAML into it; Cycle does not import Config).
public struct PMUSettings: Sendable, Equatable {
    /// How bessd talks to the PMU (C37.118.2-2011 Annex F; docs/pmu.md).
    public enum Transport: String, Sendable, CaseIterable {
        /// Commands and frames over one TCP connection.
        case tcp
        /// Commands as datagrams to the PMU's port; configuration and data back as datagrams (to
        /// `localPort` when set, else to the port the commands came from).
        case udp
        /// Annex F's mixed mode: commands (and the configuration they ask for) over TCP, data as
        /// datagrams to `localPort`.
        case tcpUDP = "tcp_udp"
        /// No commands: the PMU streams datagrams unasked to `localPort`, its configuration among them.
        case udpSpontaneous = "udp_spontaneous"

        /// Whether bessd sends command frames (stop, configuration, start).
        public var sendsCommands: Bool { self != .udpSpontaneous }
        /// Whether there is a TCP connection to the PMU.
        public var usesTCP: Bool { self == .tcp || self == .tcpUDP }
        /// Whether frames come as datagrams.
        public var usesUDP: Bool { self != .tcp }
    }

    /// `grid_integration.pmu.host`: the PMU's address or host name.
    public var host: String
    /// `.port`: TCP, the PMU's command and data port; UDP, the port commands go to; `tcp_udp`, the
    /// PMU's command port; `udp_spontaneous`, none (0).
    public var port: UInt16
    /// `.transport`.
    public var transport: Transport
    /// `.local_port`: the port bessd takes datagrams on (`tcp_udp` and `udp_spontaneous`: required;
    /// `udp`: commands go out from it too; nil: a port the system picks).
    public var localPort: UInt16?
    /// `.idcode`: the data stream's IDCODE (command frames are sent to it, only its frames accepted).
    public var idcode: UInt16
    /// `.pmu_idcode`: which PMU of a multi-PMU frame; nil, the PMU whose IDCODE is the stream's, else the first.
    public var pmuIdcode: UInt16?
    /// `.max_age_ms`: a sample older than this is absent (default 100 ms).
    public var maxAge: Duration
    /// `.reconnect_s`: the first pause before reconnecting (default 2 s), doubling up to 30 s.
    public var reconnectDelay: Duration

    /// Settings; the defaults are the keys' defaults.
    public init(host: String, port: UInt16, transport: Transport = .tcp, localPort: UInt16? = nil, idcode: UInt16,
                pmuIdcode: UInt16? = nil, maxAge: Duration = .milliseconds(100), reconnectDelay: Duration = .seconds(2)) {
        self.host = host
        self.port = port
        self.transport = transport
        self.localPort = localPort
        self.idcode = idcode
        self.pmuIdcode = pmuIdcode
        self.maxAge = maxAge
        self.reconnectDelay = reconnectDelay
    }
}
