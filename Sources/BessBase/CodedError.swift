/// An error as bessd reports it: a stable code and a sentence for a person, printed `CODE: message`
/// (`TLS_PEER_UNTRUSTED: peer certificate refused (…)`).
///
/// Each module declares its own codes, a struct over a private enum (so the set is closed and codes
/// are matched by value, never by text) whose `description` is the stable name the journal, the
/// control socket and operators' scripts read, and names its error as this type over them:
/// `public typealias TLSError = CodedError<TLSErrorCode>`. The code's name never changes; the
/// message may. The message quotes nothing a peer sent unescaped, so it is safe in a log line.
///
/// A failure of a system call also keeps its errno (`systemError`) for callers that act on it; the
/// message already says it in words (`SPOOL_FULL: writing seg-1: No space left on device`), so it is
/// not printed twice.
public struct CodedError<StableCode: Hashable & Sendable & CustomStringConvertible>: Error, Hashable, CustomStringConvertible {
    /// The module's codes (`TLSError.Code` is `TLSErrorCode`).
    public typealias Code = StableCode

    /// What kind of failure this is.
    public var code: Code
    /// For a person: what failed and why.
    public var message: String
    /// The errno of the system call that failed, nil when no system call is behind it.
    public var systemError: Int32?

    /// An error with `code` and `message`, and the errno behind it when a system call failed.
    public init(_ code: Code, message: String, systemError: Int32? = nil) {
        self.code = code
        self.message = message
        self.systemError = systemError
    }

    /// `CODE: message`.
    public var description: String { "\(code): \(message)" }
}

/// A code that sorts its failures into kinds, each saying what the caller does next
/// (`DeviceError.Kind.linkLost`: reconnect). Its error then has the same `Kind` and `kind`.
public protocol ErrorCodeWithKind {
    /// The module's kinds of failure.
    associatedtype Kind
    /// What this code says about the failure.
    var kind: Kind { get }
}

extension CodedError where StableCode: ErrorCodeWithKind {
    /// The kinds of the module's codes (`SpoolError.Kind` is `SpoolErrorCode.Kind`): one alias for
    /// every module, as two constrained aliases of one name in one module are ambiguous.
    public typealias Kind = StableCode.Kind

    /// What the failure says, from its code.
    public var kind: Kind { code.kind }
}

/// A code whose errors callers read the errno of as `errno`, 0 when none (the spool's, the CAN
/// interfaces' and Modbus servers', a Modbus device's).
public protocol ErrorCodeWithErrno {}

extension CodedError where StableCode: ErrorCodeWithErrno {
    /// An error with the errno behind it; 0 is none (`systemError` nil), as `errno` reads it back.
    public init(_ code: Code, message: String, errno: Int32) {
        self.init(code, message: message, systemError: errno == 0 ? nil : errno)
    }

    /// The errno behind it, 0 when there is none.
    public var errno: Int32 { systemError ?? 0 }
}
