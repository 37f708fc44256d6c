public import BessBase
public import BessSystem
import ControlCore
public import Cycle
import Glibc
import Synchrophasor
public import Synchronization

/// The PMU client: on a thread of its own (`bessd-pmu`), it follows one IEEE C37.118.2 data stream
/// in any of Annex F's transports (`PMULink`) and publishes each usable sample of the chosen PMU
/// into `latest`, where the cycle takes it without a lock. It reconnects by itself.
///
/// A session: open the transport's sockets; send "turn off data" and let what was in flight drain
/// (100 ms of quiet, at most 1 s); ask for CFG-3 and, when the PMU does not answer it (or answers
/// what the decoder refuses), for CFG-2 from then on; send "turn on data"; read. Without commands
/// (`udp_spontaneous`) it waits for the configuration the PMU repeats, then reads.
/// Frames with a wrong CHK, another stream's IDCODE or a layout that does not decode are counted in
/// `rejectedFrames` and change nothing; a STAT "configuration changed" or a data frame of another
/// length asks for the configuration again. No frame for 3 s (or three frame periods, if longer,
/// at most 10 s), a closed connection or a socket error ends the session; the next one starts after
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
    /// Unix time in seconds, for the commands' SOC (the system's wall clock; a test's).
    private let wallClock: @Sendable () -> Double
    /// The PMU's host, resolved within a deadline; kept across sessions.
    private let resolver: HostResolver
    private let log: @Sendable (Notice) -> Void
    private let worker = WorkerThread()
    private let wakeup = Wakeup()
    /// The reader thread's own state: the PMU did not answer CFG-3, so it is asked for CFG-2.
    private var askCFG3 = true
    private var lastFailure = ""
    /// Refused frames: the first line, then at most one a minute saying how many were refused.
    private var rejections = PeerBudget<String>(window: .seconds(60), lines: 1, keys: 1, report: .withNextLine)

    /// The longest a session waits for a frame once data was asked for (longer at slow data rates).
    static let silenceLimit: Duration = .seconds(3)
    /// The most a slow DATA_RATE stretches `silenceLimit`: a PMU that announces one frame per
    /// 32768 s would otherwise keep a dead session for 27 h. No sample older than `max_age_ms`
    /// (at most 2 s) is used, so a slower PMU is of no use to the cycle anyway.
    static let longestSilence: Duration = .seconds(10)

    /// How long a streaming session may go without a frame: three frame periods, at least
    /// `silenceLimit`, at most `longestSilence` (docs/pmu.md).
    static func silence(framePeriodSeconds: Double?) -> Duration {
        let periods = min(3 * (framePeriodSeconds ?? 0), longestSilence.secondsDouble)
        return max(silenceLimit, .seconds(fromDouble: periods))
    }
    /// The longest a TCP connect or an unanswered configuration request may take.
    static let answerLimit: Duration = .seconds(3)
    /// A stream buffer that holds the largest frame (FRAMESIZE is 16 bits) and the next one's start.
    static let bufferCapacity = 2 * 65536
    /// The largest datagram: one frame.
    static let datagramCapacity = 65536
    /// How long a session without commands (`udp_spontaneous`) waits for the configuration frame a
    /// PMU streaming unasked repeats (vendors' PMUs: once a minute), with a margin.
    static let spontaneousConfigurationLimit: Duration = .seconds(65)

    /// A reader that has not started.
    public init(settings: PMUSettings, clock: some MonotonicClock = SystemClock.shared,
                wallClock: @escaping @Sendable () -> Double = SystemClock.wallClockSeconds,
                log: @escaping @Sendable (Notice) -> Void) {
        self.settings = settings
        self.clock = clock
        self.wallClock = wallClock
        resolver = PMULink.resolver(settings)
        self.log = log
    }

    /// True while the reader's thread runs.
    public var isAlive: Bool { worker.isAlive }

    /// Starts following the PMU.
    public func start() {
        worker.start(name: "bessd-pmu") { [self] in run() }
    }

    /// Stops the thread (ends a wait at once) and closes the connection.
    public func stop() { worker.stop { [wakeup] in wakeup.signal() } }

    /// `127.0.0.1:4712 (tcp, stream 1410)`; `127.0.0.1:4712, data to local port 4713 (tcp_udp, stream 1410)`;
    /// `127.0.0.1 to local port 4713 (udp_spontaneous, stream 1410)`.
    var peerText: String {
        let pmu = settings.transport.sendsCommands ? "\(settings.host):\(settings.port)" : settings.host
        let local = settings.localPort.map { settings.transport.sendsCommands ? ", data to local port \($0)" : " to local port \($0)" } ?? ""
        return "\(pmu)\(local) (\(settings.transport.rawValue), stream \(settings.idcode))"
    }

    private func run() {
        var backoff = Backoff(first: settings.reconnectDelay, maximum: max(.seconds(30), settings.reconnectDelay))
        while worker.isRunning {
            var session = PMUStream(settings: settings, askCFG3: askCFG3)
            let failure: PMULinkError
            do throws(PMULinkError) {
                try follow(&session)
                failure = PMULinkError(.stopped, message: "stopped")
            } catch {
                failure = error
            }
            let wasConnected = connected.exchange(false, ordering: .relaxed)
            if session.dataFlowed { backoff.reset() }
            guard worker.isRunning else { break }
            if askCFG3, session.cfg3Refused, settings.transport.sendsCommands {
                // Not a lost PMU: one that does not serve CFG-3 (pyPMU closes the connection on it).
                giveUpCFG3(failure.description)
                continue
            }
            let pause = backoff.next()
            let again = "reconnecting in \(trimmed(pause.secondsDouble, decimals: 1)) s"
            if wasConnected {
                log(Notice(pmu: .lost, "\(peerText): \(failure.description); \(again)"))
                lastFailure = failure.description
            } else if failure.description != lastFailure {
                log(Notice("\(failure.code): \(peerText): \(failure.message); \(again)", failure: failure, topic: .device, units: ["site"]))
                lastFailure = failure.description
            }
            _ = clock.wait(for: wakeup, until: clock.now() + pause)
        }
    }

    /// One session, to its end: the failure that ended it (or none when stopped).
    private func follow(_ session: inout PMUStream) throws(PMULinkError) {
        let link = try PMULink.open(settings, resolver: resolver, clock: clock, wakeup: wakeup, running: { [worker] in worker.isRunning })
        let channels = link.channels
        var buffer = [UInt8](repeating: 0, count: settings.transport.usesTCP ? Self.bufferCapacity : 0)
        var datagram = [UInt8](repeating: 0, count: settings.transport.usesUDP ? Self.datagramCapacity : 0)
        var filled = 0
        let commands = settings.transport.sendsCommands
        // Without commands (udp_spontaneous) the session waits for the configuration the PMU repeats.
        var phase = commands ? Phase.quiet(since: clock.now()) : .configuring(since: clock.now())
        var lastInput = clock.now()
        if commands { try link.send(Command.stopData.frame(idcode: settings.idcode, secondOfCentury: secondOfCentury())) }
        var fds = channels.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            + [pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0)]
        while worker.isRunning {
            let now = clock.now()
            let deadline: MonotonicInstant
            switch phase {
            case .quiet(let since):
                let end = min(lastInput + .milliseconds(100), since + .seconds(1))
                if now >= end {
                    try askConfiguration(&session, link, at: now)
                    phase = .configuring(since: now)
                    continue
                }
                deadline = end
            case .configuring(let since):
                if session.configuration != nil {
                    if commands { try link.send(Command.startData.frame(idcode: settings.idcode, secondOfCentury: secondOfCentury())) }
                    session.lastFrameAt = now
                    phase = .streaming
                    continue
                }
                let limit = !commands ? Self.spontaneousConfigurationLimit : session.cfg3Requested ? Self.answerLimit / 3 : Self.answerLimit
                if now - since >= limit {
                    if session.cfg3Requested {
                        session.cfg3Refused = true
                        throw PMULinkError(.cfg3Unanswered, message: "no answer to a CFG-3 request")
                    }
                    let asked = commands ? "after asking for it" : "while waiting for the one the PMU repeats"
                    throw PMULinkError(.configurationTimeout, message: "no configuration frame \(Self.number(limit)) s \(asked)")
                }
                if settings.transport == .udp {
                    // A datagram may be lost: ask again each second.
                    if now - session.configurationAskedAt >= .seconds(1) { try askConfiguration(&session, link, at: now) }
                    deadline = min(since + limit, session.configurationAskedAt + .seconds(1))
                } else {
                    deadline = since + limit
                }
            case .streaming:
                let silence = Self.silence(framePeriodSeconds: session.configuration?.framePeriodSeconds)
                if now - session.lastFrameAt >= silence {
                    throw PMULinkError(.silent, message: "no frame for \(Self.number(silence)) s")
                }
                // Without commands the configuration comes when the PMU repeats it.
                if commands, session.wantsConfiguration(at: now) { try askConfiguration(&session, link, at: now) }
                deadline = session.lastFrameAt + silence
            }
            for i in fds.indices { fds[i].revents = 0 }
            let ready = fds.withUnsafeMutableBufferPointer { clock.poll($0.baseAddress!, count: $0.count, until: deadline) }
            guard ready > 0 else { continue }
            for (index, channel) in channels.enumerated() where fds[index].revents != 0 {
                let received: PMULink.Received
                do throws(PMULinkError) {
                    received = channel.channel == .stream
                        ? try link.receive(.stream, into: &buffer, from: filled)
                        : try link.receive(.datagrams, into: &datagram, from: 0)
                } catch {
                    // pyPMU, asked for a CFG-3 it does not have, closes the connection.
                    if case .configuring = phase, session.cfg3Requested { session.cfg3Refused = true }
                    throw error
                }
                let readAt = clock.now()
                switch received {
                case .nothing: continue
                case .foreign:
                    reject("PMU_SOURCE_UNKNOWN", "a datagram from another address than the PMU's")
                    continue
                case .bytes(let count) where channel.channel == .datagrams:
                    handle(datagram[0..<count], at: readAt, &session)
                case .bytes(let count):
                    filled = extractFrames(&buffer, filled: filled + count, at: readAt, &session)
                }
                lastInput = readAt
                if let fatal = session.fatal { throw fatal }
                if commands, case .configuring = phase, session.cfg3Refused {
                    // Refused in the answer (a CFG-3 the decoder does not take): ask for CFG-2 at once.
                    giveUpCFG3("its CFG-3 was refused")
                    session.askCFG3 = false
                    session.cfg3Refused = false
                    try askConfiguration(&session, link, at: readAt)
                    phase = .configuring(since: readAt)
                }
                if case .streaming = phase, !connected.load(ordering: .relaxed), session.dataFlowed {
                    connected.store(true, ordering: .relaxed)
                    connects.add(1, ordering: .relaxed)
                    lastFailure = ""
                    log(Notice(pmu: .connected, "\(peerText): " + session.describe()))
                }
            }
        }
    }

    /// Asks for CFG-2 from now on.
    private func giveUpCFG3(_ reason: String) {
        askCFG3 = false
        log(Notice(pmu: .cfg3Unanswered, "\(peerText) did not answer a CFG-3 request (\(reason)); asking for CFG-2 from now on"))
    }

    private enum Phase {
        case quiet(since: MonotonicInstant)
        case configuring(since: MonotonicInstant)
        case streaming
    }

    private func askConfiguration(_ session: inout PMUStream, _ link: PMULink, at now: MonotonicInstant) throws(PMULinkError) {
        let command: Command = session.askCFG3 ? .sendConfiguration3 : .sendConfiguration2
        try link.send(command.frame(idcode: settings.idcode, secondOfCentury: secondOfCentury()))
        session.configurationAskedAt = now
        session.cfg3Requested = session.askCFG3
    }

    /// Takes every whole frame off the front of a TCP stream buffer; returns the bytes left (moved
    /// to the front). Bytes that cannot start a frame (bad SYNC or FRAMESIZE) are skipped to the next
    /// 0xAA, counted once as a rejected frame. While resynchronising, a start whose frame fails its
    /// CHK is skipped by one byte to the next 0xAA (not by the FRAMESIZE it claims), and one whose
    /// claimed frame has not all come yet gives way to a later start whose whole frame checks: a
    /// false 0xAA claiming 64 KiB does not hold up the frames behind it.
    func extractFrames(_ buffer: inout [UInt8], filled: Int, at readAt: MonotonicInstant, _ session: inout PMUStream) -> Int {
        var start = 0
        while filled - start >= 4 {
            let size: Int
            do throws(SynchrophasorError) {
                guard let found = try Frame.size(atStartOf: buffer[start..<(start + 4)]) else { break }
                size = found
            } catch {
                if !session.resynchronising { reject(error.code.description, error.message) }
                session.resynchronising = true
                start = buffer[(start + 1)..<filled].firstIndex(of: 0xAA) ?? filled
                continue
            }
            guard filled - start >= size else {
                guard session.resynchronising, let next = Self.checkedStart(in: buffer, after: start, filled: filled) else { break }
                start = next
                continue
            }
            if session.resynchronising, (try? Frame(decoding: buffer[start..<(start + size)])) == nil {
                start = buffer[(start + 1)..<filled].firstIndex(of: 0xAA) ?? filled
                continue
            }
            handle(buffer[start..<(start + size)], at: readAt, &session)
            start += size
        }
        if start > 0 {
            buffer.withUnsafeMutableBytes { raw in
                _ = memmove(raw.baseAddress!, raw.baseAddress! + start, filled - start)
            }
        }
        return filled - start
    }

    /// The first 0xAA after `start` where a whole frame with a good CHK lies, if any.
    static func checkedStart(in buffer: [UInt8], after start: Int, filled: Int) -> Int? {
        var candidate = start + 1
        while let next = buffer[candidate..<filled].firstIndex(of: 0xAA) {
            if filled - next >= 4, let size = try? Frame.size(atStartOf: buffer[next..<(next + 4)]), filled - next >= size,
               (try? Frame(decoding: buffer[next..<(next + size)])) != nil {
                return next
            }
            candidate = next + 1
        }
        return nil
    }

    /// One frame through the session's decoder, its outcome counted and published.
    private func handle(_ bytes: ArraySlice<UInt8>, at readAt: MonotonicInstant, _ session: inout PMUStream) {
        switch session.accept(bytes, at: readAt) {
        case .ignored: break
        case .rejected(let code, let message): reject(code, message)
        case .configuration(let changed):
            configurations.add(1, ordering: .relaxed)
            if changed, connected.load(ordering: .relaxed) {
                log(Notice(pmu: .configuration, "\(peerText) changed its configuration: " + session.describe()))
            }
        case .unusable:
            frames.add(1, ordering: .relaxed)
            unusableSamples.add(1, ordering: .relaxed)
        case .sample(let sample):
            frames.add(1, ordering: .relaxed)
            latest.publish(sample)
        }
    }

    /// Counts a refused frame; logs the first, then at most one line a minute with the count.
    private func reject(_ code: String, _ message: String) {
        rejectedFrames.add(1, ordering: .relaxed)
        let peer = peerText
        let admission = rejections.admit(peer, at: clock.now())
        guard admission.written else { return }
        // The count includes this frame.
        let more = admission.heldBack > 0 ? " (\(admission.heldBack + 1) frames refused since the last line)" : ""
        log(Notice(pmu: .frameRejected, "\(peer): \(code): \(message)\(more)"))
    }

    /// SOC of a command frame: the wall clock's Unix seconds.
    func secondOfCentury() -> UInt32 { UInt32(clamping: Int64(wallClock())) }

    static func number(_ duration: Duration) -> String { trimmed(duration.secondsDouble, decimals: 1) }
}

/// One session's decoding state, without sockets: the configuration in force, which PMU of the
/// frame is followed, and what each frame does to them.
struct PMUStream {
    let settings: PMUSettings
    /// Ask for CFG-3 (else CFG-2).
    var askCFG3: Bool
    /// The configuration data frames are decoded against.
    private(set) var configuration: Configuration?
    /// The followed PMU's index in the configuration.
    private(set) var pmuIndex = 0
    /// The last frame of this stream that decoded.
    var lastFrameAt = MonotonicInstant.zero
    var configurationAskedAt = MonotonicInstant.zero
    /// The last request was for CFG-3.
    var cfg3Requested = false
    /// The PMU did not answer CFG-3 or answered one the decoder refuses.
    var cfg3Refused = false
    /// A data frame was decoded in this session.
    private(set) var dataFlowed = false
    /// Skipping bytes to find the next frame's start (TCP).
    var resynchronising = false
    /// What ends the session (a PMU the configuration does not list).
    private(set) var fatal: PMULinkError?
    /// A configuration is wanted (STAT said it changed, or a data frame had another length).
    private var configurationWanted = false
    private var changeBitSeen = false

    init(settings: PMUSettings, askCFG3: Bool) {
        self.settings = settings
        self.askCFG3 = askCFG3
    }

    enum Outcome: Equatable {
        case ignored
        case rejected(code: String, message: String)
        case configuration(changed: Bool)
        case unusable
        case sample(PMUSample)
    }

    /// Whether to ask for the configuration now: wanted, and the last request a second ago or more.
    func wantsConfiguration(at now: MonotonicInstant) -> Bool {
        configurationWanted && now - configurationAskedAt >= .seconds(1)
    }

    /// What one whole frame (or datagram) does.
    mutating func accept(_ bytes: ArraySlice<UInt8>, at now: MonotonicInstant) -> Outcome {
        let frame: Frame
        do throws(SynchrophasorError) {
            frame = try Frame(decoding: bytes)
        } catch {
            if cfg3Requested, configuration == nil, bytes.count >= 2, bytes[bytes.startIndex + 1] >> 4 & 7 == FrameType.configuration3.rawValue {
                cfg3Refused = true
            }
            return .rejected(code: error.code.description, message: error.message)
        }
        resynchronising = false
        guard frame.header.idcode == settings.idcode else {
            return .rejected(code: "PMU_IDCODE_UNKNOWN", message: "a frame of stream \(frame.header.idcode), following stream \(settings.idcode)")
        }
        switch frame.header.type {
        case .configuration1, .configuration2, .configuration3:
            return configuration(frame, at: now)
        case .data:
            guard let configuration else { return .ignored }
            let data: DataFrame
            do throws(SynchrophasorError) {
                data = try DataFrame(frame: frame, configuration: configuration)
            } catch {
                if error.code == .dataMismatch { configurationWanted = true }
                return .rejected(code: error.code.description, message: error.message)
            }
            lastFrameAt = now
            dataFlowed = true
            let measurement = data.measurements[pmuIndex]
            let changed = measurement.status.configurationChanged
            // The bit stands for a minute: ask once when it comes, and again when its length changes.
            if changed, !changeBitSeen { configurationWanted = true }
            changeBitSeen = changed
            guard measurement.status.isUsable, let hertz = measurement.frequencyHz, hertz.isFinite, hertz > 0 else { return .unusable }
            return .sample(PMUSample(frequency: Hertz(hertz), rocofHzPerSecond: measurement.rocofHzPerSecond, takenAt: now,
                                     frameTime: data.header.seconds(timeBase: configuration.timeBase)))
        default:
            lastFrameAt = now
            return .ignored
        }
    }

    private mutating func configuration(_ frame: Frame, at now: MonotonicInstant) -> Outcome {
        let decoded: Configuration
        do throws(SynchrophasorError) {
            decoded = try Configuration(frame: frame)
        } catch {
            if frame.header.type == .configuration3 { cfg3Refused = true }
            return .rejected(code: error.code.description, message: error.message)
        }
        let index: Int
        if let wanted = settings.pmuIdcode {
            guard let found = decoded.pmuIndex(idcode: wanted) else {
                fatal = PMULinkError(.idcodeUnknown, message: "stream \(settings.idcode) carries PMUs \(decoded.pmus.map(\.idcode)), not \(wanted) (pmu_idcode)")
                return .ignored
            }
            index = found
        } else {
            index = decoded.pmuIndex(idcode: settings.idcode) ?? 0
        }
        let changed = configuration.map { $0.pmus != decoded.pmus || $0.dataRate != decoded.dataRate || $0.timeBase != decoded.timeBase } ?? true
        configuration = decoded
        pmuIndex = index
        configurationWanted = false
        lastFrameAt = now
        return .configuration(changed: changed)
    }

    /// `PMU 1410 "Station A", 50 frames/s, CFG-2, FREQ int16 from 50 Hz`.
    func describe() -> String {
        guard let configuration else { return "no configuration" }
        let pmu = configuration.pmus[pmuIndex]
        let rate = configuration.dataRate > 0 ? "\(configuration.dataRate) frames/s" : "a frame every \(-Int(configuration.dataRate)) s"
        let kind = switch configuration.header.type {
        case .configuration3: "CFG-3"
        case .configuration1: "CFG-1"
        default: "CFG-2"
        }
        return "PMU \(pmu.idcode) \(PeerText.quoted(pmu.stationName)) of \(configuration.pmus.count), \(rate), \(kind), "
            + "FREQ \(pmu.format.frequencyFloat ? "float32" : "int16") from \(pmu.nominalHz) Hz, CFGCNT \(pmu.configurationCount)"
    }
}
