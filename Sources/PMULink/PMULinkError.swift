public import BessBase
import ControlCore

/// What ended a PMU session (`PMUReader`), printed `CODE: message` with nothing the PMU sent in the
/// message. The journal's `BESS_CODE=` carries the code's stable name (`PMU_SILENT`). A failed system
/// call keeps its errno (`systemError`, `errno`).
public typealias PMULinkError = CodedError<PMULinkErrorCode>

/// The stable code of a `PMULinkError`: a struct over a private enum, so the set is closed and matched
/// by value, never by text.
public struct PMULinkErrorCode: Hashable, Sendable, CustomStringConvertible, ErrorCodeWithErrno {
    private enum Value: Hashable, Sendable {
        case connectFailed, stopped, io, closed, cfg3Unanswered, configurationTimeout, silent, idcodeUnknown
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `PMU_CONNECT_FAILED`: the host did not resolve, or the socket, the connection or binding the
    /// local port failed.
    public static let connectFailed = Self(.connectFailed)
    /// `PMU_STOPPED`: the reader was stopped (not a fault of the PMU).
    public static let stopped = Self(.stopped)
    /// `PMU_IO`: sending to or receiving from the PMU failed.
    public static let io = Self(.io)
    /// `PMU_CLOSED`: the PMU closed the connection.
    public static let closed = Self(.closed)
    /// `PMU_CFG3_UNANSWERED`: the PMU did not answer a CFG-3 request (the reader asks for CFG-2 next).
    public static let cfg3Unanswered = Self(.cfg3Unanswered)
    /// `PMU_CONFIGURATION_TIMEOUT`: no configuration frame in time after asking for it.
    public static let configurationTimeout = Self(.configurationTimeout)
    /// `PMU_SILENT`: no frame for longer than the silence limit.
    public static let silent = Self(.silent)
    /// `PMU_IDCODE_UNKNOWN`: the stream does not carry the configured `pmu_idcode`.
    public static let idcodeUnknown = Self(.idcodeUnknown)

    public var description: String {
        switch value {
        case .connectFailed: "PMU_CONNECT_FAILED"
        case .stopped: "PMU_STOPPED"
        case .io: "PMU_IO"
        case .closed: "PMU_CLOSED"
        case .cfg3Unanswered: "PMU_CFG3_UNANSWERED"
        case .configurationTimeout: "PMU_CONFIGURATION_TIMEOUT"
        case .silent: "PMU_SILENT"
        case .idcodeUnknown: "PMU_IDCODE_UNKNOWN"
        }
    }
}
