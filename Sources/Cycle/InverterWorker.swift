import BessSystem
public import ControlCore
public import Fieldbus
import Glibc
import Synchronization

/// What the cycle and a bus worker exchange for one inverter: the latest reading (stamped when it
/// was read) and the latest setpoint. The cycle only ever holds the lock for a copy.
public final class InverterSlot: Sendable {
    struct State {
        var reading: Timestamped<InverterReading>?
        var setpoint: Watts = .zero
        var lastError: String?
        var roundTrip: Duration = .zero
        var errors: UInt64 = 0
    }
    private let state = PILock(State())

    public init() {}

    /// The latest reading (the cycle's side).
    public var reading: Timestamped<InverterReading>? { state.withLock { $0.reading } }
    /// The code of the last failure, if the last exchange failed.
    public var lastError: String? { state.withLock { $0.lastError } }
    /// Failed exchanges so far.
    public var errors: UInt64 { state.withLock { $0.errors } }
    /// Round-trip time of the last successful request.
    public var roundTrip: Duration { state.withLock { $0.roundTrip } }

    /// Hands the worker a new setpoint (the cycle's side).
    public func setSetpoint(_ power: Watts) { state.withLock { $0.setpoint = power } }

    func publish(_ reading: Timestamped<InverterReading>, roundTrip: Duration) {
        state.withLock {
            $0.reading = reading
            $0.lastError = nil
            $0.roundTrip = roundTrip
        }
    }

    func fail(_ code: String) {
        state.withLock {
            $0.lastError = code
            $0.errors &+= 1
        }
    }

    var setpoint: Watts { state.withLock { $0.setpoint } }
}

/// Owns one Modbus connection (a TCP endpoint, or a serial line shared by its unit ids) and every
/// SunSpec inverter on it: discovers them, polls them, writes their setpoints with the revert timer
/// armed, and reconnects with back-off. Runs on its own thread; never blocks the cycle.
public final class InverterWorker: @unchecked Sendable {
    public struct Device: Sendable {
        public var unitID: Int
        public var slot: InverterSlot
        /// nil for SunSpec (discovered); a register map for other inverters.
        public var registerMap: RegisterMapSpec?
        public init(unitID: Int, slot: InverterSlot, registerMap: RegisterMapSpec? = nil) {
            self.unitID = unitID
            self.slot = slot
            self.registerMap = registerMap
        }
    }

    /// How one inverter is read and commanded.
    enum Driver {
        case sunspec(SunSpecInverter)
        case registerMap(RegisterMapInverter)

        func readStatus(_ c: inout ModbusConnection) throws(SunSpecError) -> InverterReading {
            switch self {
            case .sunspec(let inverter): return try inverter.readStatus(&c)
            case .registerMap(let inverter):
                do { return try inverter.readStatus(&c) } catch { throw SunSpecError(code: error.code, message: error.message) }
            }
        }

        func command(_ power: Watts, revertSeconds: Int, _ c: inout ModbusConnection) throws(SunSpecError) {
            switch self {
            case .sunspec(let inverter): try inverter.command(power, revertSeconds: revertSeconds, &c)
            case .registerMap(let inverter):
                do { try inverter.command(power, revertSeconds: revertSeconds, &c) } catch {
                    throw SunSpecError(code: error.code, message: error.message)
                }
            }
        }
    }

    public let endpoint: ModbusEndpoint
    public let devices: [Device]
    let period: Duration
    let timeout: Duration
    let revertSeconds: Int
    let phase: CyclePhase?
    let log: @Sendable (String) -> Void
    private let worker = WorkerThread()

    /// True while the worker's thread runs its loop (the watchdog checks it).
    public var isAlive: Bool { worker.isAlive }
    private let wake = Wakeup()

    /// - Parameters:
    ///   - period: how often each inverter is polled.
    ///   - revertSeconds: the revert timer written with every setpoint; setpoints are re-written at
    ///     least every half of it even when unchanged.
    ///   - phase: the control cycle's schedule. With it, the worker reads every inverter just before
    ///     each cycle and writes the cycle's setpoints the moment the cycle hands them over, so a
    ///     change at the inverter reaches its wire within one period plus the bus time. Without it
    ///     (tests driving the runner by hand), it polls on its own period.
    public init(endpoint: ModbusEndpoint, devices: [Device], period: Duration, timeout: Duration, revertSeconds: Int,
                phase: CyclePhase? = nil, log: @escaping @Sendable (String) -> Void) {
        self.endpoint = endpoint
        self.devices = devices
        self.period = period
        self.timeout = timeout
        self.revertSeconds = revertSeconds
        self.phase = phase
        self.log = log
    }

    public func start() {
        worker.start { [self] in loop() }
    }

    /// Stops the worker after writing a zero setpoint to every inverter (revert armed).
    public func stop() {
        worker.stop()
    }

    /// Tells the worker the cycle has handed over new setpoints (the cycle's side: one non-blocking
    /// write to a pipe, no allocation).
    public func kick() { wake.signal() }

    struct DeviceState {
        var connection: ModbusConnection?
        var inverter: Driver?
        var lastWritten: Watts?
        var lastWriteAt: Int64 = 0
        var backoffUntil: Int64 = 0
        var backoff: Int64 = 500_000_000
    }

    private func loop() {
        var states = devices.map { _ in DeviceState() }
        let periodNs = max(10_000_000, period.nanosecondsClamped)
        var seed = UInt64(truncatingIfNeeded: now())
        // How long before the cycle's deadline the reads start: 1.5 × the last read round plus 1 ms,
        // at most half a period.
        var lead: Int64 = 2_000_000
        var next = now()
        // The last time the cycle handed over setpoints. A cycle that stops doing so (stalled, not
        // stopped) is missing data: after `stallAfter` the worker commands zero, revert armed, rather
        // than keep refreshing a setpoint nobody confirms.
        var lastKick = now()
        while worker.isRunning {
            let cycleDeadline = phase?.nextDeadline ?? 0
            if cycleDeadline > 0 {
                // Aligned to the cycle: read, wait for its setpoints, write.
                let cyclePeriod = phase!.periodNanoseconds
                var readAt = cycleDeadline - lead
                if readAt < now() - cyclePeriod / 2 { readAt = now() }
                sleep(until: readAt)
                if wake.drain() { lastKick = now() }  // kicks meant for an earlier cycle: the cycle lives
                let began = now()
                for index in devices.indices { read(index, &states[index], &seed) }
                let took = now() - began
                lead = min(max(1_000_000, took + took / 2 + 1_000_000), cyclePeriod / 2)
                // The cycle kicks once it has commanded; give up half a period after its deadline
                // (a stalled cycle: the refresh below keeps to the revert rule either way).
                if wake.wait(until: max(cycleDeadline, now()) + cyclePeriod / 2) { lastKick = now() }
                let stalled = now() - lastKick > max(Self.stallAfterNanoseconds, 5 * cyclePeriod)
                for index in devices.indices { write(index, &states[index], &seed, zeroInstead: stalled) }
                // Sleep at least to this cycle's deadline, so the next round reads for the next cycle.
                if now() < cycleDeadline { sleep(until: cycleDeadline) }
            } else {
                lastKick = now()  // not on a cycle's schedule (yet): nothing to stall
                for index in devices.indices {
                    read(index, &states[index], &seed)
                    write(index, &states[index], &seed)
                }
                next += periodNs
                let current = now()
                if next < current { next = current }
                sleep(until: next)
            }
        }
        // Safe stop: zero power, revert armed.
        for index in devices.indices {
            guard var connection = states[index].connection, let inverter = states[index].inverter else { continue }
            try? inverter.command(.zero, revertSeconds: revertSeconds, &connection)
            connection.close()
        }
    }

    private func sleep(until ns: Int64) {
        var ts = timespec(tv_sec: Int(ns / 1_000_000_000), tv_nsec: Int(ns % 1_000_000_000))
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil)
    }

    /// Connects and discovers when needed, then reads the inverter and publishes the reading.
    private func read(_ index: Int, _ s: inout DeviceState, _ seed: inout UInt64) {
        let device = devices[index]
        if now() < s.backoffUntil { return }
        do throws(SunSpecError) {
            if s.connection == nil {
                do {
                    s.connection = try ModbusConnection(endpoint: endpoint, unitID: device.unitID, timeout: timeout)
                } catch {
                    throw SunSpecError(code: error.code, message: error.message)
                }
            }
            var connection = s.connection!
            if s.inverter == nil {
                if let map = device.registerMap {
                    s.inverter = .registerMap(RegisterMapInverter(spec: map))
                    log("unit id \(device.unitID) on \(endpoint): register map, setpoint at \(map.setpoint.address)")
                } else {
                    let sunspec = try SunSpecInverter.open(&connection)
                    s.inverter = .sunspec(sunspec)
                    log("unit id \(device.unitID) on \(endpoint): SunSpec models \(sunspec.map.models.map(\.id)), "
                        + "command via \(sunspec.commandPath.rawValue)")
                }
            }
            let reading = try s.inverter!.readStatus(&connection)
            device.slot.publish(Timestamped(reading, at: MonotonicInstant(nanoseconds: now())), roundTrip: connection.lastRoundTrip)
            s.backoff = 500_000_000
        } catch {
            failed(index, &s, error, &seed)
        }
    }

    /// How long without a hand-over from a running cycle before the worker commands zero.
    public static let stallAfterNanoseconds: Int64 = 1_000_000_000

    /// Writes the slot's setpoint (zero when the cycle has stalled) when it changed, or when the
    /// revert timer needs refreshing.
    private func write(_ index: Int, _ s: inout DeviceState, _ seed: inout UInt64, zeroInstead: Bool = false) {
        guard var connection = s.connection, let inverter = s.inverter else { return }
        let setpoint = zeroInstead ? .zero : devices[index].slot.setpoint
        let refreshDue = now() - s.lastWriteAt >= Int64(revertSeconds) * 500_000_000
        guard s.lastWritten.map({ abs($0.value - setpoint.value) >= 1 }) ?? true || refreshDue else { return }
        do throws(SunSpecError) {
            try inverter.command(setpoint, revertSeconds: revertSeconds, &connection)
            s.lastWritten = setpoint
            s.lastWriteAt = now()
        } catch {
            failed(index, &s, error, &seed)
        }
    }

    private func failed(_ index: Int, _ s: inout DeviceState, _ error: SunSpecError, _ seed: inout UInt64) {
        let device = devices[index]
        device.slot.fail(error.code)
        if s.backoff == 500_000_000 { log("unit id \(device.unitID) on \(endpoint): \(error)") }
        // Reconnect and rediscover after a pause that doubles up to 10 s, with jitter, so a fleet
        // does not hammer a recovering device in step.
        s.connection?.close()
        s.connection = nil
        s.inverter = nil
        s.lastWritten = nil
        seed = seed &* 6364136223846793005 &+ 1442695040888963407
        let jitter = Int64(seed >> 40) % (s.backoff / 4 + 1)
        s.backoffUntil = now() + s.backoff + jitter
        s.backoff = min(s.backoff * 2, 10_000_000_000)
    }

    private func now() -> Int64 { MonotonicClock.now().nanoseconds }
}

/// The control cycle's schedule as the bus workers see it: the deadline of the next cycle.
public final class CyclePhase: Sendable {
    private let deadline = Atomic<Int64>(0)
    public let periodNanoseconds: Int64

    public init(periodNanoseconds: Int64) { self.periodNanoseconds = periodNanoseconds }

    /// The monotonic deadline (ns) of the next cycle; 0 while no cycle thread runs.
    public var nextDeadline: Int64 { deadline.load(ordering: .acquiring) }

    /// Published by the cycle before it sleeps (0 when it stops).
    public func publish(nextDeadline: Int64) { deadline.store(nextDeadline, ordering: .releasing) }
}

/// A wake-up from one thread to another over a non-blocking pipe: `signal()` never blocks and never
/// allocates; `wait(until:)` returns at the first signal (consuming every pending one) or the deadline.
final class Wakeup: @unchecked Sendable {
    private var fds: [Int32] = [-1, -1]

    init() {
        if pipe(&fds) != 0 { fds = [-1, -1]; return }
        for fd in fds {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
    }

    deinit {
        for fd in fds where fd >= 0 { close(fd) }
    }

    func signal() {
        var byte: UInt8 = 1
        _ = write(fds[1], &byte, 1)
    }

    /// Waits for a signal until the monotonic deadline `ns`. Returns true when signalled.
    @discardableResult
    func wait(until ns: Int64) -> Bool {
        var signalled = false
        while !signalled {
            let remaining = ns - MonotonicClock.now().nanoseconds
            if remaining <= 0 { return false }
            var pfd = pollfd(fd: fds[0], events: Int16(POLLIN), revents: 0)
            let ms = Int32(min(remaining / 1_000_000 + 1, 1000))
            if poll(&pfd, 1, ms) > 0 { signalled = drain() }
        }
        return true
    }

    /// Consumes pending signals; true when there was one.
    @discardableResult
    func drain() -> Bool {
        var buffer = (UInt64(0), UInt64(0))
        var any = false
        while withUnsafeMutableBytes(of: &buffer, { read(fds[0], $0.baseAddress, $0.count) }) > 0 { any = true }
        return any
    }
}
