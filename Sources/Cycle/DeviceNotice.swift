public import BessBase
public import BessSystem
import ControlCore
import Fieldbus

/// What a bus worker tells the operator about a device is a `Notice` of the device topic: a
/// wrong inverter address must be found by `journalctl -p warning` and `journalctl BESS_UNIT=D1`.
public typealias DeviceNotice = Notice

/// The bus and CAN workers' own codes (a device's or link's failure carries its error's code,
/// `Notice(_:failure:topic:)`).
public enum DeviceCode: String, NoticeCode, CaseIterable {
    /// The worker's thread did not get the real-time placement asked for.
    case realtimeDegraded = "REALTIME_DEGRADED"
    /// A unit that had failed answers again.
    case deviceAnswering = "DEVICE_ANSWERING"
    /// The utility asks a unit opened and its inverter cannot open (no usable model 123 `Conn`).
    case contactorUnavailable = "CONTACTOR_UNAVAILABLE"
    /// A unit asked for reactive power has no SunSpec 704 var points (or is a 124-only or
    /// register-map inverter): its reactive power is left alone, its active power is not touched.
    case reactiveUnavailable = "REACTIVE_UNAVAILABLE"

    public var severity: NoticeSeverity { self == .deviceAnswering ? .notice : .warning }
    public var topic: NoticeTopic { .device }
}

extension EndpointDevice {
    /// Said once per unit, the first time it is asked for reactive power it cannot take.
    func reactiveUnavailable(on endpoint: ModbusEndpoint) -> Notice {
        Notice(DeviceCode.reactiveUnavailable,
               "unit id \(unitID) on \(endpoint): no reactive-power control: the inverter has no usable SunSpec model 704 "
                   + "var points (VarSetEna, VarSetMod, VarSetEnaRvrt, VarSetRvrtTms with VarSet or VarSetPct); "
                   + "its reactive power is left to it, its active power is commanded as before", units: [name])
    }
}

extension Notice {
    /// A device's notice (`MESSAGE_ID` of device events): a line with, where there is one, its stable
    /// code, how serious it is and the battery units it concerns.
    public init(_ text: String, severity: NoticeSeverity = .notice, code: String? = nil, units: [String] = []) {
        self.init(text, topic: .device, severity: severity, code: code, units: units)
    }

    /// A device's or link's failure, at warning with the error's code, about `units`.
    public init<Code>(_ text: String, failure error: CodedError<Code>, units: [String]) {
        self.init(text, failure: error, topic: .device, units: units)
    }

    /// The line for a person (`message`).
    public var text: String { message }
}

/// The bus and CAN workers' notices on their way to the journal: a worker hands a notice over (a
/// short lock, no I/O) and goes on; the service thread takes them and writes them, as it does the
/// cycle's events. Bounded (`BoundedRing`): when the service thread falls behind (a stalled
/// journald blocks it) a notice that finds the ring full is dropped and counted, so no worker
/// ever waits on the journal.
public final class NoticeQueue: Sendable {
    private let ring: PILock<BoundedRing<Notice>>
    /// Signalled after each notice (one non-blocking eventfd write): the service loop's wake-up.
    private let wakeup: Wakeup?

    public init(capacity: Int = 256, wakeup: Wakeup? = nil) {
        ring = PILock(BoundedRing(capacity: capacity, filler: Notice("")))
        self.wakeup = wakeup
    }

    /// Queues `notice`, or counts it as dropped when the ring is full; never blocks on I/O.
    public func post(_ notice: Notice) {
        ring.withLock { $0.push(notice) }
        wakeup?.signal()
    }

    /// Removes the notices queued so far, oldest first, with the count dropped since start.
    public func take() -> (notices: [Notice], dropped: UInt64) {
        var notices: [Notice] = []
        notices.reserveCapacity(ring.withLock { $0.capacity })
        let dropped = ring.withLock { ring in
            ring.drain { notices.append($0) }
            return ring.dropped
        }
        return (notices, dropped)
    }

    /// Notices dropped since start because the ring was full (status, /metrics).
    public var dropped: UInt64 { ring.withLock { $0.dropped } }
}

/// Lets a worker thread hand notices to the runner's output closure; one at a time, whole.
public final class UncheckedOutput: @unchecked Sendable {
    let output: (Notice) -> Void
    let lock = PILock<Void>(())
    public init(_ output: @escaping (Notice) -> Void) { self.output = output }
    public func write(_ notice: Notice) { lock.withLock { _ in output(notice) } }
    /// A plain line (a notice without a code), about `units`.
    public func write(_ line: String, units: [String] = []) { write(Notice(line, units: units)) }
}
