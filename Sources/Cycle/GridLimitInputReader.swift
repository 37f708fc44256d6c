import BessBase
public import BessSystem
public import ControlCore
import Fieldbus
import Glibc
public import Synchronization

/// Reads the grid operator's relay contacts (`grid_operator.inputs`) from a Modbus I/O module on a
/// thread of its own, every `poll_ms`, and hands the limit they ask for to the cycle through the
/// shared state. The cycle applies it at once and lifts it at the limit ramp (`SiteController`).
///
/// A module that stops answering for `lost_after_s` raises `GRID_LIMIT_INPUT_LOST` and the last
/// limit holds (before the first steady reading: the lowest configured limit, see `RelayContacts`).
///
/// `@unchecked Sendable`: the connection and the contacts' state live on the reader's thread;
/// what others read is atomics and the shared state.
public final class GridLimitInputReader: @unchecked Sendable {
    public let settings: GridLimitInputsConfiguration
    private let shared: SharedState
    private let worker = WorkerThread()
    private let log: @Sendable (Notice) -> Void
    /// True while GRID_LIMIT_INPUT_LOST stands.
    public let lost = Atomic<Bool>(false)
    /// Readings answered and requests failed.
    public let reads = Atomic<UInt64>(0)
    public let failures = Atomic<UInt64>(0)

    public init(settings: GridLimitInputsConfiguration, shared: SharedState,
                log: @escaping @Sendable (Notice) -> Void) {
        self.settings = settings
        self.shared = shared
        self.log = log
    }

    public var isAlive: Bool { worker.isAlive }

    /// The contacts' state as configured, before any reading.
    public var initialContacts: RelayContacts {
        RelayContacts(contacts: settings.contacts, activeHigh: settings.activeHigh, debounce: settings.debounce)
    }

    /// Publishes the most restrictive limit and starts reading.
    public func start() {
        shared.setInputLimit(initialContacts.limitPercent)
        worker.start { [self] in run() }
    }

    public func stop() { worker.stop() }

    private func run() {
        var contacts = initialContacts
        let span = contacts.span
        let function: UInt8 = settings.function == .coils ? 0x01 : 0x02
        let endpoint = settings.modbus.endpoint
        let connection = try? ModbusConnection(endpoint: endpoint, unitID: settings.modbus.unitID,
                                               timeout: settings.modbus.timeout)
        var lastAnswer = SystemClock.shared.now()
        var lastError = ""
        while worker.isRunning {
            let started = SystemClock.shared.now()
            do throws(DeviceError) {
                guard let connection else {
                    throw DeviceError(.connectFailed, message: "cannot create a Modbus context for \(endpoint)")
                }
                let bits = try connection.readBits(unit: settings.modbus.unitID, function: function, at: span.first, count: span.count)
                let now = SystemClock.shared.now()
                reads.add(1, ordering: .relaxed)
                lastAnswer = now
                if lost.load(ordering: .relaxed) {
                    lost.store(false, ordering: .relaxed)
                    log(Notice(cleared: GridInputCode.lost, "the I/O module at \(endpoint) answers again", units: ["site"]))
                }
                if contacts.update(bits: bits, at: now) {
                    shared.setInputLimit(contacts.limitPercent)
                    log(Notice(GridInputCode.input, "grid operator relay contacts: " + Self.describe(contacts), units: ["site"]))
                }
            } catch {
                failures.add(1, ordering: .relaxed)
                lastError = "\(error.code): \(error.message)"
                let silent = SystemClock.shared.now() - lastAnswer
                if !lost.load(ordering: .relaxed), silent >= settings.lostAfter {
                    lost.store(true, ordering: .relaxed)
                    let held = contacts.limitPercent.map { "\(Self.number($0)) %" } ?? "none"
                    log(Notice(GridInputCode.lost,
                               titled: "the I/O module at \(endpoint) has not answered for \(Self.number(silent.secondsDouble)) s "
                                   + "(\(lastError)); the last limit holds (\(held))", units: ["site"]))
                }
                if error.isConnectionLost { connection?.close() }
            }
            // Sleep out the poll period in slices, so stop() is noticed.
            let next = started + settings.poll
            while worker.isRunning, SystemClock.shared.now() < next {
                SystemClock.shared.sleep(until: min(next, SystemClock.shared.now() + .milliseconds(50)))
            }
        }
        connection?.close()
    }

    /// `limit 30 % (input 1 asserted)` or `no limit (no contact asserted)`.
    public static func describe(_ contacts: RelayContacts) -> String {
        let on = contacts.contacts.indices.filter { contacts.asserted[$0] == true }.map { "input \(contacts.contacts[$0].input)" }
        guard let limit = contacts.limitPercent else { return "no limit (no contact asserted)" }
        return "limit \(number(limit)) % (\(on.isEmpty ? "state not yet known" : on.joined(separator: ", ") + " asserted"))"
    }

    /// One decimal, no trailing zeros (`trimmed`).
    static func number(_ value: Double) -> String { trimmed(value, decimals: 1) }
}

/// The relay contacts' codes, journalled as SCADA-write events of the site.
public enum GridInputCode: String, NoticeCode, CaseIterable {
    /// The contacts' limit changed.
    case input = "GRID_LIMIT_INPUT"
    /// The I/O module has not answered for `lost_after_s` (an error; cleared at notice).
    case lost = "GRID_LIMIT_INPUT_LOST"

    public var severity: NoticeSeverity { self == .lost ? .error : .notice }
    public var topic: NoticeTopic { .scadaWrite }
}
