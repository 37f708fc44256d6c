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
    private let state = Mutex(State())

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
    let log: @Sendable (String) -> Void
    private let worker = WorkerThread()

    /// - Parameters:
    ///   - period: how often each inverter is polled.
    ///   - revertSeconds: the revert timer written with every setpoint; setpoints are re-written at
    ///     least every half of it even when unchanged.
    public init(endpoint: ModbusEndpoint, devices: [Device], period: Duration, timeout: Duration, revertSeconds: Int,
                log: @escaping @Sendable (String) -> Void) {
        self.endpoint = endpoint
        self.devices = devices
        self.period = period
        self.timeout = timeout
        self.revertSeconds = revertSeconds
        self.log = log
    }

    public func start() {
        worker.start { [self] in loop() }
    }

    /// Stops the worker after writing a zero setpoint to every inverter (revert armed).
    public func stop() {
        worker.stop()
    }

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
        var next = now()
        let periodNs = max(10_000_000, period.nanosecondsClamped)
        var seed = UInt64(truncatingIfNeeded: now())
        while worker.isRunning {
            for index in devices.indices { exchange(index, &states[index], &seed) }
            next += periodNs
            let current = now()
            if next < current { next = current }
            var ts = timespec(tv_sec: Int(next / 1_000_000_000), tv_nsec: Int(next % 1_000_000_000))
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil)
        }
        // Safe stop: zero power, revert armed.
        for index in devices.indices {
            guard var connection = states[index].connection, let inverter = states[index].inverter else { continue }
            try? inverter.command(.zero, revertSeconds: revertSeconds, &connection)
            connection.close()
        }
    }

    private func exchange(_ index: Int, _ s: inout DeviceState, _ seed: inout UInt64) {
        let device = devices[index]
        let t = now()
        if t < s.backoffUntil { return }
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
            let inverter = s.inverter!
            let reading = try inverter.readStatus(&connection)
            device.slot.publish(Timestamped(reading, at: MonotonicInstant(nanoseconds: now())), roundTrip: connection.lastRoundTrip)
            let setpoint = device.slot.setpoint
            let refreshDue = now() - s.lastWriteAt >= Int64(revertSeconds) * 500_000_000
            if s.lastWritten.map({ abs($0.value - setpoint.value) >= 1 }) ?? true || refreshDue {
                try inverter.command(setpoint, revertSeconds: revertSeconds, &connection)
                s.lastWritten = setpoint
                s.lastWriteAt = now()
            }
            s.backoff = 500_000_000
        } catch {
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
    }

    private func now() -> Int64 { MonotonicClock.now().nanoseconds }
}
