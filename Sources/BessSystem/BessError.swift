public import BessBase
import ControlCore
import Glibc

/// Why a request to bessd's control socket failed on the client's side (`ControlError` where it is
/// thrown): a typed code and a message for a person, `CONTROL_SOCKET_UNREACHABLE: cannot connect to
/// /run/bessd/control.sock …`. bessd's own refusals come back as answers, not as this error. The
/// code's `description` is the stable name bessctl prints and scripts match on; the message may
/// change. Start-up errors are `RunError` (module Cycle), refusals at ingest `IngestRefusal`.
public typealias BessError = CodedError<BessErrorCode>

/// The stable code of a `BessError` (`BessError.Code`): a struct over a private enum, so the set is
/// closed and matched by value, never by text.
public struct BessErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case badRequest, controlSocketFailed, controlSocketUnreachable, controlNoAnswer
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `BAD_REQUEST`: the request could not be written as JSON.
    public static let badRequest = Self(.badRequest)
    /// `CONTROL_SOCKET_FAILED`: no socket, or the path does not fit a socket address.
    public static let controlSocketFailed = Self(.controlSocketFailed)
    /// `CONTROL_SOCKET_UNREACHABLE`: nothing accepts on the control socket (bessd not running?).
    public static let controlSocketUnreachable = Self(.controlSocketUnreachable)
    /// `CONTROL_NO_ANSWER`: bessd did not answer a whole JSON line in time.
    public static let controlNoAnswer = Self(.controlNoAnswer)

    /// The stable name bessctl and the scripts read.
    public var description: String {
        switch value {
        case .badRequest: "BAD_REQUEST"
        case .controlSocketFailed: "CONTROL_SOCKET_FAILED"
        case .controlSocketUnreachable: "CONTROL_SOCKET_UNREACHABLE"
        case .controlNoAnswer: "CONTROL_NO_ANSWER"
        }
    }
}

/// What an errno means, in words: the one place bessd turns an errno into text for a message.
public enum SystemError {
    /// The C library's description of `code` (e.g. "Connection refused").
    /// The corresponding C function is `strerror`.
    public static func text(_ code: Int32) -> String { String(cString: strerror(code)) }
}
