/// An error as bessd reports it: a stable code and a sentence for a person, printed `CODE: message`
/// (`TLS_PEER_UNTRUSTED: peer certificate refused (…)`).
///
/// Each module declares its own codes, a struct over a private enum (so the set is closed and codes
/// are matched by value, never by text) whose `description` is the stable name the journal, the
/// control socket and operators' scripts read, and names its error as this type over them:
/// `public typealias TLSError = CodedError<TLSErrorCode>`. The code's name never changes; the
/// message may. The message quotes nothing a peer sent unescaped, so it is safe in a log line.
public struct CodedError<StableCode: Hashable & Sendable & CustomStringConvertible>: Error, Hashable, CustomStringConvertible {
    /// The module's codes (`TLSError.Code` is `TLSErrorCode`).
    public typealias Code = StableCode

    /// What kind of failure this is.
    public var code: Code
    /// For a person: what failed and why.
    public var message: String

    /// An error with `code` and `message`.
    public init(_ code: Code, message: String) {
        self.code = code
        self.message = message
    }

    /// `CODE: message`.
    public var description: String { "\(code): \(message)" }
}
