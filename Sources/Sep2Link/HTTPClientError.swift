public import BessBase
import ControlCore

/// Why an HTTPS exchange with the utility's IEEE 2030.5 server failed: a stable code and a message for
/// a person (`SEP2_HTTP_TOO_LARGE: body of 300000 bytes exceeds the 262144 allowed`). Whatever the
/// server sent that a message quotes is escaped first.
public typealias HTTPClientError = CodedError<HTTPClientErrorCode>

/// The stable code of an `HTTPClientError` (`HTTPClientError.Code`): a struct over a private enum, so
/// the set is closed and codes are matched by value.
public struct HTTPClientErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case connect, tls, serverMismatch, timeout, malformed, tooLarge, closed
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `SEP2_HTTP_CONNECT`: the server's name did not resolve, or the TCP connection was refused or failed.
    public static let connect = Self(.connect)
    /// `SEP2_HTTP_TLS`: the TLS handshake failed (the server's chain does not verify, no shared
    /// suite, our certificate refused) or a TLS record was bad.
    public static let tls = Self(.tls)
    /// `SEP2_SERVER_MISMATCH`: the server's certificate verified against the SERCA but is not the one
    /// `ieee2030_5.server_certificate_sha256` or `server_lfdi` names; the connection was closed in
    /// the handshake, before any request.
    public static let serverMismatch = Self(.serverMismatch)
    /// `SEP2_HTTP_TIMEOUT`: connecting, the handshake, sending or the answer took longer than the timeout.
    public static let timeout = Self(.timeout)
    /// `SEP2_HTTP_MALFORMED`: the answer is not HTTP/1.1 as RFC 9112 writes it (status line, header,
    /// chunk size, Content-Length).
    public static let malformed = Self(.malformed)
    /// `SEP2_HTTP_TOO_LARGE`: the headers or the body exceed their bounds.
    public static let tooLarge = Self(.tooLarge)
    /// `SEP2_HTTP_CLOSED`: the server closed the connection before a whole answer, or the client
    /// was used after `close()`.
    public static let closed = Self(.closed)

    /// The stable name logs, the journal and tests read.
    public var description: String {
        switch value {
        case .connect: "SEP2_HTTP_CONNECT"
        case .tls: "SEP2_HTTP_TLS"
        case .serverMismatch: "SEP2_SERVER_MISMATCH"
        case .timeout: "SEP2_HTTP_TIMEOUT"
        case .malformed: "SEP2_HTTP_MALFORMED"
        case .tooLarge: "SEP2_HTTP_TOO_LARGE"
        case .closed: "SEP2_HTTP_CLOSED"
        }
    }
}
