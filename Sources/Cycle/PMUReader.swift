public import BessSystem
import ControlCore
public import Synchronization

/// `grid_integration.pmu` as the cycle runs it (Config maps the YAML into it; Cycle does not import Config).
public struct PMUSettings: Sendable, Equatable {
    /// How bessd talks to the PMU (C37.118.2-2011 Annex F).
    public enum Transport: String, Sendable {
        /// Commands and frames over one TCP connection.
        case tcp
        /// Commands as datagrams to the PMU's port; configuration and data back as datagrams.
        case udp
    }

    /// `grid_integration.pmu.host`: the PMU's address or host name.
    public var host: String
    /// `.port`: TCP, the PMU's command and data port; UDP, the port commands go to.
    public var port: UInt16
    /// `.transport`.
    public var transport: Transport
    /// `.idcode`: the data stream's IDCODE (command frames are sent to it, only its frames accepted).
    public var idcode: UInt16
    /// `.pmu_idcode`: which PMU of a multi-PMU frame; nil, the PMU whose IDCODE is the stream's, else the first.
    public var pmuIdcode: UInt16?
    /// `.max_age_ms`: a sample older than this is absent (default 100 ms).
    public var maxAge: Duration
    /// `.reconnect_s`: the first pause before reconnecting (default 2 s), doubling up to 30 s.
    public var reconnectDelay: Duration

    /// Settings; the defaults are the keys' defaults.
    public init(host: String, port: UInt16, transport: Transport = .tcp, idcode: UInt16, pmuIdcode: UInt16? = nil,
                maxAge: Duration = .milliseconds(100), reconnectDelay: Duration = .seconds(2)) {
        self.host = host
        self.port = port
        self.transport = transport
        self.idcode = idcode
        self.pmuIdcode = pmuIdcode
        self.maxAge = maxAge
        self.reconnectDelay = reconnectDelay
    }
}

/// The PMU client: on a thread of its own (`bessd-pmu`), it follows one IEEE C37.118.2 data stream
/// over TCP or UDP and publishes each usable sample of the chosen PMU into `latest`, where the
/// cycle takes it without a lock. It reconnects by itself.
///
/// A session: connect (TCP) or open a datagram socket (UDP); send "turn off data" and let what was
/// in flight drain (100 ms of quiet, at most 1 s); ask for CFG-3 and, when the PMU does not answer
/// it (or answers what the decoder refuses), for CFG-2 from then on; send "turn on data"; read.
/// Frames with a wrong CHK, another stream's IDCODE or a layout that does not decode are counted in
/// `rejectedFrames` and change nothing; a STAT "configuration changed" or a data frame of another
/// length asks for the configuration again. No frame for 3 s (or three frame periods, if longer),
/// a closed connection or a socket error ends the session; the next one starts after
/// `reconnectDelay`, doubling up to 30 s, back to the first delay once data flowed.
///
/// `@unchecked Sendable`: the connection and the stream's configuration live on the reader's
/// thread; what others read is atomics and the slot.
public final class PMUReader: @unchecked Sendable {
    /// What it follows.
    public let settings: PMUSettings
    /// The newest sample whose STAT says valid data from a synchronised PMU.
    public let latest = FrequencySampleSlot()
    /// Data frames received and decoded against the configuration (usable or not).
    public let frames = Atomic<UInt64>(0)
    /// Frames refused: wrong CRC, another stream's IDCODE, a layout that does not decode.
    public let rejectedFrames = Atomic<UInt64>(0)
    /// Data frames whose STAT (or a missing FREQ) made the sample unusable.
    public let unusableSamples = Atomic<UInt64>(0)
    /// Connections that reached the data phase (configuration read, data started).
    public let connects = Atomic<UInt64>(0)
    /// True while data flows on a connection.
    public let connected = Atomic<Bool>(false)
    /// Configuration frames read and taken (the first of each session, and each one asked for again).
    public let configurations = Atomic<UInt64>(0)

    private let clock: any MonotonicClock
    private let log: @Sendable (_ code: String, _ message: String, _ error: Bool) -> Void
    private let worker = WorkerThread()

    /// A reader that has not started.
    public init(settings: PMUSettings, clock: some MonotonicClock = SystemClock.shared,
                log: @escaping @Sendable (_ code: String, _ message: String, _ error: Bool) -> Void) {
        self.settings = settings
        self.clock = clock
        self.log = log
    }

    /// True while the reader's thread runs.
    public var isAlive: Bool { worker.isAlive }

    /// Starts following the PMU.
    public func start() {
        worker.start(name: "bessd-pmu") { [self] in run() }
    }

    /// Stops the thread (ends a wait at once) and closes the connection.
    public func stop() { worker.stop() }

    private func run() {
        // The API first: the transport follows in the next change.
        while worker.isRunning { clock.sleep(until: clock.now() + .milliseconds(50)) }
    }
}
