import CLinux
import Glibc

/// Whether the system clock can be trusted for settlement: has something (systemd-timesyncd,
/// chrony, ntpd, PTP) synchronised it since boot?
public enum ClockSync: Sendable, Equatable {
    case synchronized(source: String)
    case unsynchronized(source: String)
    /// Nothing bessd may read says (the kernel refused and no marker exists).
    case unknown

    public var isSynchronized: Bool? {
        switch self {
        case .synchronized: true
        case .unsynchronized: false
        case .unknown: nil
        }
    }

    public var source: String {
        switch self {
        case .synchronized(let source), .unsynchronized(let source): source
        case .unknown: "none"
        }
    }

    /// systemd-timesyncd's mark of a synchronised clock (created at the first synchronisation).
    public static let timesyncMarker = "/run/systemd/timesync/synchronized"

    /// Reads the kernel's state (adjtimex, modes 0). Under the shipped unit (`ProtectClock=yes`) the
    /// kernel refuses even that, so systemd-timesyncd's marker decides: present = synchronised,
    /// absent while timesyncd runs = not yet. The corresponding C function is `adjtimex`.
    public static func read(marker: String = timesyncMarker) -> ClockSync {
        switch bessd_clock_synchronized() {
        case 1: return .synchronized(source: "kernel")
        case 0: return .unsynchronized(source: "kernel")
        default:
            if access(marker, F_OK) == 0 { return .synchronized(source: "timesyncd") }
            let directory = String(marker[..<(marker.lastIndex(of: "/") ?? marker.endIndex)])
            if !directory.isEmpty, access(directory, F_OK) == 0 { return .unsynchronized(source: "timesyncd") }
            return .unknown
        }
    }
}
