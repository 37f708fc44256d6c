public import BessBase
import ControlCore

/// Why a TLS context could not be made, or why a TLS connection was refused or ended: a stable code
/// and a message for a person that carries OpenSSL's reason text, e.g. `TLS_PEER_UNTRUSTED: peer
/// certificate refused (unable to get local issuer certificate)`. Codes are matched by value, never
/// by text; the message may change.
public typealias TLSError = CodedError<TLSErrorCode>

/// The stable code of a `TLSError` (`TLSError.Code`): a struct over a private enum, so the set is closed.
public struct TLSErrorCode: Hashable, Sendable, CustomStringConvertible {
    private enum Value: Hashable, Sendable {
        case contextFailed, handshakeFailed, peerNoCertificate, peerUntrusted, peerRevoked, peerNotAllowed,
             protocolVersion, noSharedCipher, readFailed, writeFailed, closed
    }

    private let value: Value
    private init(_ value: Value) { self.value = value }

    /// `TLS_CONTEXT_FAILED`: a certificate, key, CA or CRL file could not be read or does not
    /// fit, or OpenSSL refused a setting (a cipher list that leaves nothing).
    public static let contextFailed = Self(.contextFailed)
    /// `TLS_HANDSHAKE_FAILED`: the handshake failed for a reason no narrower code names.
    public static let handshakeFailed = Self(.handshakeFailed)
    /// `TLS_PEER_NO_CERTIFICATE`: the client sent no certificate (mutual authentication is required).
    public static let peerNoCertificate = Self(.peerNoCertificate)
    /// `TLS_PEER_UNTRUSTED`: the peer's certificate does not chain to the configured CA (or is
    /// expired, or its CRL is missing).
    public static let peerUntrusted = Self(.peerUntrusted)
    /// `TLS_PEER_REVOKED`: the peer's certificate is on the configured CRL.
    public static let peerRevoked = Self(.peerRevoked)
    /// `TLS_PEER_NOT_ALLOWED`: the peer's certificate chains to the CA but is not on the allow-list.
    public static let peerNotAllowed = Self(.peerNotAllowed)
    /// `TLS_PROTOCOL_VERSION`: the peer offered only a TLS version below the minimum (TLS 1.2).
    public static let protocolVersion = Self(.protocolVersion)
    /// `TLS_NO_SHARED_CIPHER`: no cipher suite both sides allow (NULL, export and anonymous
    /// suites are never allowed).
    public static let noSharedCipher = Self(.noSharedCipher)
    /// `TLS_READ_FAILED`: reading application data failed (a bad record, a reset).
    public static let readFailed = Self(.readFailed)
    /// `TLS_WRITE_FAILED`: writing application data failed.
    public static let writeFailed = Self(.writeFailed)
    /// `TLS_CLOSED`: the connection was used after `close()`.
    public static let closed = Self(.closed)

    /// The stable name logs, the journal and tests read.
    public var description: String {
        switch value {
        case .contextFailed: "TLS_CONTEXT_FAILED"
        case .handshakeFailed: "TLS_HANDSHAKE_FAILED"
        case .peerNoCertificate: "TLS_PEER_NO_CERTIFICATE"
        case .peerUntrusted: "TLS_PEER_UNTRUSTED"
        case .peerRevoked: "TLS_PEER_REVOKED"
        case .peerNotAllowed: "TLS_PEER_NOT_ALLOWED"
        case .protocolVersion: "TLS_PROTOCOL_VERSION"
        case .noSharedCipher: "TLS_NO_SHARED_CIPHER"
        case .readFailed: "TLS_READ_FAILED"
        case .writeFailed: "TLS_WRITE_FAILED"
        case .closed: "TLS_CLOSED"
        }
    }
}
