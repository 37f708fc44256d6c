import BessSystem

/// What a bus worker tells the operator about a device: a line of text with, where there is one,
/// its stable code, how serious it is and the battery units it concerns, so the journal entry
/// carries `BESS_CODE`, `PRIORITY` and `BESS_UNIT` (a wrong inverter address must be found by
/// `journalctl -p warning` and `journalctl BESS_UNIT=D1`, not only read).
public struct DeviceNotice: Sendable, CustomStringConvertible {
    public enum Severity: Sendable, Equatable {
        /// Something worth knowing: a device discovered, a link answering again.
        case notice
        /// A device or link failed: its unit gets no power from it until it recovers.
        case warning
    }

    public var severity: Severity
    /// A stable code (`MODBUS_CONNECT_FAILED`, `REALTIME_DEGRADED`…), or nil for a plain notice.
    public var code: String?
    /// The configured unit ids (`bess_units[].id`, or `site` for the connection-point meter) the
    /// notice concerns; empty when it concerns none in particular.
    public var units: [String]
    /// The line for a person.
    public var text: String

    public init(_ text: String, severity: Severity = .notice, code: String? = nil, units: [String] = []) {
        self.text = text
        self.severity = severity
        self.code = code
        self.units = units
    }

    public var description: String { text }
}

/// Lets a worker thread hand notices to the runner's output closure; one at a time, whole.
public final class UncheckedOutput: @unchecked Sendable {
    let output: (DeviceNotice) -> Void
    let lock = PILock<Void>(())
    public init(_ output: @escaping (DeviceNotice) -> Void) { self.output = output }
    public func write(_ notice: DeviceNotice) { lock.withLock { _ in output(notice) } }
    /// A plain line (a notice without a code), about `units`.
    public func write(_ line: String, units: [String] = []) { write(DeviceNotice(line, units: units)) }
}
