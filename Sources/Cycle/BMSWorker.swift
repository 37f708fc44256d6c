import BessBase
public import BessSystem
public import ControlCore
public import Fieldbus
import Glibc
import Synchronization

/// What the cycle and a CAN worker exchange for one BMS.
public final class BMSSlot: Sendable {
    struct State {
        var snapshot = BMSSnapshot()
        var counters = DecoderCounters()
        var reads = ModbusBMSCounters()
        var statedPower: (charge: Double?, discharge: Double?, at: MonotonicInstant)?
        var fault: String?
        var busOff = false
        var keepAlivesSent: UInt64 = 0
        var transmitDrops: UInt64 = 0
        /// The thresholds a frame is judged by, from the unit's interlock table: whether it calls
        /// for less power and so wakes the cycle (`BMSAlarmWatch`).
        var watch: BMSAlarmWatch?
        var alarms: UInt64 = 0
    }
    private let state = PILock(State())

    public init() {}

    /// The latest decoded values, each group stamped with when its frame arrived.
    public var snapshot: BMSSnapshot { state.withLock { $0.snapshot } }
    /// Frames used and refused (a BMS on CAN).
    public var counters: DecoderCounters { state.withLock { $0.counters } }
    /// Reads used and refused (a BMS on Modbus).
    public var reads: ModbusBMSCounters { state.withLock { $0.reads } }
    /// The charge and discharge power limits, W, a BMS states itself (a profile's
    /// `charge_power_limit`, `discharge_power_limit`), with when they were read; nil when it states none.
    public var statedPowerLimits: (charge: Double?, discharge: Double?, at: MonotonicInstant)? { state.withLock { $0.statedPower } }
    /// The interface's fault code (`CAN_INTERFACE_MISSING`, `CAN_BUS_OFF`, …), nil when healthy.
    public var fault: String? { state.withLock { $0.fault } }
    /// Keep-alive and request frames sent (Pylontech LV: 0x305).
    public var keepAlivesSent: UInt64 { state.withLock { $0.keepAlivesSent } }
    /// Frames that called for less power and woke the cycle.
    public var alarms: UInt64 { state.withLock { $0.alarms } }

    /// Judge frames by these thresholds and wake the cycle when one calls for less power (nil: never).
    public func setWatch(_ watch: BMSAlarmWatch?) { state.withLock { $0.watch = watch } }

    func update(_ body: (inout State) -> Void) { state.withLock { body(&$0) } }

    /// Publishes a decoder's snapshot and counters (the worker's side). True when, by the slot's
    /// watch, the snapshot calls for less power than the one it replaces: the worker then wakes the
    /// cycle.
    func publish(_ snapshot: BMSSnapshot, counters: DecoderCounters? = nil, reads: ModbusBMSCounters? = nil) -> Bool {
        state.withLock {
            var alarm = false
            if let watch = $0.watch {
                alarm = watch.callsForLess(before: $0.snapshot, after: snapshot)
                if alarm { $0.alarms &+= 1 }
            }
            $0.snapshot = snapshot
            if let counters { $0.counters = counters }
            if let reads { $0.reads = reads }
            return alarm
        }
    }
}

/// What a BMS worker speaks on its CAN interface: the decoder (a compiled profile, or the built-in
/// Pylontech LV decoder), the kernel's receive filters, the frames bessd sends unasked (keep-alives,
/// requests) with their periods.
public struct CANLink: Sendable {
    public var decoder: any BMSDecoder
    /// (id, mask) pairs; an id carrying `extendedFlag` admits 29-bit frames only.
    public var filters: [(id: UInt32, mask: UInt32)]
    public var sends: [(frame: CANFrame, period: Duration)]

    /// The kernel's flag of a 29-bit identifier in a filter's id and mask (`CAN_EFF_FLAG`): the
    /// socket's filters always compare it, so an id with it set admits extended frames only.
    public static let extendedFlag: UInt32 = 0x8000_0000

    public init(decoder: any BMSDecoder, filters: [(id: UInt32, mask: UInt32)], sends: [(frame: CANFrame, period: Duration)]) {
        self.decoder = decoder
        self.filters = filters
        self.sends = sends
    }

    /// Pylontech LV as bessd has always run it: 0x350–0x35F and 0x370–0x37F, 0x305 every second.
    public static var pylontech: CANLink {
        CANLink(decoder: PylontechDecoder(), filters: PylontechLV.receiveFilters, sends: [(PylontechLV.keepAlive, .seconds(1))])
    }

    /// A CAN BMS profile compiled: its decoder, its transport's filters (29-bit when it says
    /// `extended`), its `keep_alive` frames.
    public init(profile: DeviceProfile) throws(ProfileError) {
        decoder = try ProfiledCANDecoder(profile: profile)
        if case .can(let can) = profile.transport {
            filters = can.filters.map { can.extended ? ($0.id | Self.extendedFlag, $0.mask) : ($0.id, $0.mask) }
        } else {
            filters = []
        }
        sends = profile.keepAlive.map { (CANFrame(id: $0.id, bytes: $0.data, isExtended: $0.extended), $0.period) }
    }
}

/// Owns one CAN interface: receives the BMS's frames through the link's decoder (a profile's, or
/// Pylontech LV's), publishes the snapshot, sends the link's keep-alive or request frames (Pylontech:
/// 0x305 every second), watches error frames for bus-off, and reopens the interface with back-off when
/// it disappears. Says once (not a fault) which extensions the BMS does not send
/// (`UnsentExtensionNotice`). Runs on its own thread; the decoder runs there, never in the cycle.
public final class BMSWorker: @unchecked Sendable {
    public let interface: String
    public let slot: BMSSlot
    /// The decoder, filters and frames sent (`CANLink`).
    public let link: CANLink
    /// The battery units the notices concern (`BESS_UNIT`).
    public let units: [String]
    let log: @Sendable (Notice) -> Void
    private let worker = WorkerThread()

    /// True while the worker's thread runs its loop (the watchdog checks it).
    public var isAlive: Bool { worker.isAlive }
    /// When the thread's loop last turned (the watchdog's view of its progress, `WorkerTurn`).
    public var lastTurn: MonotonicInstant? { worker.lastTurn }
    /// The thread's kernel id once it runs (tests read its affinity and policy from /proc).
    var threadID: Int32 { worker.threadID }

    /// Bitrate and restart-ms to set when bessd manages the interface itself.
    let management: (bitrate: Int, restartMs: Int)?
    /// The cycle's schedule, woken when a frame calls for less power (the slot's watch says when).
    let phase: CyclePhase?
    /// SCHED_FIFO priority (below the cycle's, as the bus workers') and CPU of the worker's thread, or
    /// nil for the default policy. The worker is the first step of the alarm path (a protection frame →
    /// an extra cycle → zero on the wire): under the default policy any busy thread could hold it.
    let realtime: RealtimeThread?

    /// - Parameter log: receives the worker's notices: a failure of the interface as a warning with
    ///   its code (`CAN_BUS_OFF`), a refused priority or CPU as `REALTIME_DEGRADED`, the rest as
    ///   plain notices; each about `units`.
    public init(interface: String, slot: BMSSlot, link: CANLink = .pylontech, units: [String] = [],
                manage: (bitrate: Int, restartMs: Int)? = nil, phase: CyclePhase? = nil, realtime: RealtimeThread? = nil,
                log: @escaping @Sendable (Notice) -> Void) {
        self.interface = interface
        self.slot = slot
        self.link = link
        self.units = units
        management = manage
        self.phase = phase
        self.realtime = realtime
        self.log = log
    }

    public func start() {
        worker.start(name: "bessd-can") { [self] in loop() }
    }

    public func stop() {
        worker.stop()
    }

    /// A plain line about the interface.
    private func note(_ text: String) { log(Notice("\(interface): \(text)", units: units)) }

    /// A failure of the interface: a warning with its code.
    private func warn(_ error: FieldbusError) {
        log(Notice("\(interface): \(error)", failure: error, units: units))
    }

    private func loop() {
        if let realtime {
            for notice in Realtime.enter(realtime, as: "the CAN worker").notices {
                log(Notice(DeviceCode.realtimeDegraded, "\(interface): \(notice)", units: units))
            }
        }
        // One decoder for the worker's life: an extension it has seen stays expected across a reopened
        // interface (the same BMS); a restart of bessd starts over.
        var decoder = link.decoder
        var unsentNotice = UnsentExtensionNotice(extensions: decoder.extensionGroups)
        let sends = link.sends
        var socket: CANSocket?
        var backoff = Backoff(first: .milliseconds(250), maximum: .seconds(5))
        var retryAt = MonotonicInstant.zero
        var nextSend = [MonotonicInstant](repeating: .zero, count: sends.count)
        var reported: FieldbusError.Code?
        // A keep-alive the kernel refused as down (the socket opened on an interface not yet up): the
        // fault it raised ends with the next keep-alive that goes out, as no reopen will follow.
        var sendRefused = false
        while worker.turn() {
            let now = SystemClock.shared.now()
            if socket == nil {
                if now < retryAt {
                    usleep(50_000)
                    continue
                }
                if let management {
                    do {
                        try CANInterface.configure(interface, bitrate: management.bitrate, restartMs: management.restartMs)
                    } catch {
                        if reported != error.code { warn(error) }
                    }
                }
                do {
                    socket = try CANSocket(interface: interface, filters: link.filters)
                    backoff.reset()
                    sendRefused = false
                    slot.update { $0.fault = nil }
                    if reported != nil { note("CAN interface back") }
                    reported = nil
                } catch {
                    slot.update { $0.fault = error.code.description }
                    if reported != error.code { warn(error) }
                    reported = error.code
                    retryAt = now + backoff.next()
                    continue
                }
            }
            guard let can = socket else { continue }
            for index in sends.indices where now >= nextSend[index] {
                do {
                    try can.send(sends[index].frame)
                    let recovered = sendRefused
                    sendRefused = false
                    slot.update {
                        $0.keepAlivesSent &+= 1
                        // A bus-off an error frame reported ends only with the controller's restart.
                        if recovered, !$0.busOff, $0.fault == FieldbusError.Code.busOff.description { $0.fault = nil }
                    }
                    if recovered { note("CAN interface up: keep-alives go out again") }
                } catch {
                    slot.update {
                        $0.transmitDrops = can.transmitDrops
                        if error.code == .busOff { $0.fault = error.code.description }
                    }
                    if error.code == .busOff, !sendRefused {
                        sendRefused = true
                        warn(error)
                    }
                }
                nextSend[index] = now + sends[index].period
            }
            do {
                guard let (frame, stamp) = try can.receive(timeout: .milliseconds(100)) else { continue }
                let at = Self.monotonic(fromRealtime: stamp)
                if let report = CANErrorReport(frame) {
                    slot.update {
                        if report.busOff { $0.busOff = true; $0.fault = FieldbusError.Code.busOff.description }
                        if report.restarted || report.backToActive { $0.busOff = false; $0.fault = nil }
                    }
                    if report.busOff {
                        warn(FieldbusError(.busOff, message: "the controller left the bus"))
                        // With automatic restart off, a managed interface is restarted here.
                        if let management, management.restartMs == 0 {
                            do { try CANInterface.restart(interface) } catch { warn(error) }
                        }
                    }
                    continue
                }
                _ = decoder.ingest(frame, at: at)
                let snapshot = decoder.snapshot
                // A frame that calls for less power wakes the cycle now, not at its next period.
                if slot.publish(snapshot, counters: decoder.counters) { phase?.raiseAlarm() }
                if let line = unsentNotice.check(snapshot, at: at) { note(line) }
            } catch {
                // The interface went away or down: report it and reopen with back-off.
                let fault = error.code == .receiveFailed ? FieldbusError.Code.interfaceDown : error.code
                slot.update { $0.fault = fault.description }
                warn(error)
                socket = nil
                retryAt = SystemClock.shared.now() + backoff.next()
            }
        }
    }

    /// Converts a kernel receive time (CLOCK_REALTIME) to the monotonic clock; 0 means "now".
    static func monotonic(fromRealtime stamp: Int64) -> MonotonicInstant {
        let mono = SystemClock.shared.now()
        guard stamp > 0 else { return mono }
        let realNow = Int64(SystemClock.wallClockSeconds() * 1e9)
        let age = max(0, realNow - stamp)
        return MonotonicInstant(nanoseconds: mono.nanoseconds - min(age, 10_000_000_000))
    }
}
