public import BessBase
import BessSystem
import ControlCore
import COpenSSL
import Glibc

/// Where a handshake stands after one step.
public enum TLSHandshakeStep: Sendable, Equatable {
    /// Done: the peer is authenticated (`TLSConnection.peer`), application data may flow.
    case complete
    /// Call again once the descriptor is readable (poll POLLIN).
    case wantRead
    /// Call again once the descriptor is writable (poll POLLOUT).
    case wantWrite
}

/// What one read or write on a non-blocking TLS connection did.
public enum TLSTransfer: Sendable, Equatable {
    /// This many bytes were read or written (> 0).
    case transferred(Int)
    /// Nothing now: retry once the descriptor is readable.
    case wantRead
    /// Nothing now: retry once the descriptor is writable (a write, or a read during a key update).
    case wantWrite
    /// The peer ended the stream (close_notify, or its socket closed).
    case endOfStream
}

/// One TLS connection over a connected, non-blocking TCP socket: the handshake in steps for
/// `poll`, then reads and writes of application bytes, and `close()` exactly once.
///
/// Not Sendable: the connection lives on the thread of the link that accepted or opened it
/// (OpenSSL's `SSL *` and its error queue are per thread). Writes on a socket the peer reset must
/// not raise SIGPIPE: run it on a thread that blocks SIGPIPE (every `WorkerThread` blocks every
/// signal) or in a process that ignores it.
public final class TLSConnection {
    /// The socket to poll; closed by `close()` when the connection owns it.
    public let fileDescriptor: Int32
    /// Whether `close()` closes `fileDescriptor` too (false when another owner, a plain TCP stream
    /// the TLS one wraps, closes it).
    private let ownsDescriptor: Bool
    /// The authenticated peer, once the handshake is complete.
    public private(set) var peer: TLSPeer?
    /// The peer refused because the allow-list or pin does not name it (`TLS_PEER_NOT_ALLOWED`):
    /// what it presented, for the journal.
    public var refusedPeer: TLSPeer? { verification.refused }

    /// The `SSL *`; nil once closed.
    private var ssl: OpaquePointer?
    /// What the verification callback needs and what it found.
    private let verification: PeerVerification
    /// The handshake succeeded (a close then says close_notify).
    private var established = false
    /// A fatal error happened: OpenSSL forbids a shutdown after one.
    private var failed = false

    /// Server side: a connection accepted on a listening grid link; the client must present a
    /// certificate that chains to the context's CA (and is on its allow-list when there is one).
    /// With `ownsDescriptor`, takes ownership of `fd` when it returns (on a throw the caller still
    /// owns it); without, the caller closes `fd` after `close()`.
    public convenience init(accepted fd: Int32, context: TLSServerContext, ownsDescriptor: Bool = true) throws(TLSError) {
        try self.init(fd: fd, context: context.handle, verification: PeerVerification(accepts: context.acceptsPeer),
                      serverName: nil, isServer: true, ownsDescriptor: ownsDescriptor)
    }

    /// Client side: a connection bessd opened; the server's chain is verified against the context's
    /// CA, its name only when the context names one, and the context's pin when it has one. Takes ownership of `fd` when it returns; on a
    /// throw the caller still owns it.
    public convenience init(connected fd: Int32, context: TLSClientContext) throws(TLSError) {
        try self.init(fd: fd, context: context.handle, verification: PeerVerification(accepts: context.acceptsPeer),
                      serverName: context.expectedServerName, isServer: false, ownsDescriptor: true)
    }

    private init(fd: Int32, context: OpaquePointer, verification: PeerVerification, serverName: String?,
                 isServer: Bool, ownsDescriptor: Bool) throws(TLSError) {
        OpenSSLErrors.clear()
        guard let ssl = SSL_new(context) else { throw OpenSSLErrors.contextError("cannot make a TLS connection") }
        guard SSL_set_fd(ssl, fd) == 1 else {
            SSL_free(ssl)
            throw OpenSSLErrors.contextError("cannot attach the TLS connection to its socket")
        }
        if let serverName {
            guard SSL_set1_host(ssl, serverName) == 1, bessd_ssl_set_server_name(ssl, serverName) == 1 else {
                SSL_free(ssl)
                throw OpenSSLErrors.contextError("cannot set the expected server name")
            }
        }
        if isServer { SSL_set_accept_state(ssl) } else { SSL_set_connect_state(ssl) }
        // The verification callback finds its state through the connection's application data.
        SSL_set_ex_data(ssl, 0, Unmanaged.passUnretained(verification).toOpaque())
        SSL_set_verify(ssl, SSL_get_verify_mode(ssl), verifyPeerCertificate)
        self.fileDescriptor = fd
        self.ownsDescriptor = ownsDescriptor
        self.ssl = ssl
        self.verification = verification
    }

    deinit { close() }

    /// One step of the handshake; call it again as the answer says until it is `.complete`.
    /// - Throws: `TLS_PEER_NO_CERTIFICATE`, `TLS_PEER_UNTRUSTED`, `TLS_PEER_REVOKED`,
    ///   `TLS_PEER_NOT_ALLOWED`, `TLS_PROTOCOL_VERSION`, `TLS_NO_SHARED_CIPHER` or
    ///   `TLS_HANDSHAKE_FAILED`, with OpenSSL's reason; the connection can then only be closed.
    ///   The corresponding C function is `SSL_do_handshake`.
    public func handshake() throws(TLSError) -> TLSHandshakeStep {
        let ssl = try open()
        if established { return .complete }
        OpenSSLErrors.clear()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            guard let certificate = SSL_get1_peer_certificate(ssl) else {
                failed = true
                throw TLSError(.peerNoCertificate, message: "the peer presented no certificate")
            }
            defer { X509_free(certificate) }
            let verified = SSL_get_verify_result(ssl)
            guard verified == Int(X509_V_OK) else {
                failed = true
                throw TLSError(.peerUntrusted, message: "peer certificate refused (\(verifyText(verified)))")
            }
            let presented = TLSPeer(certificate: certificate)
            // Asked again here: a resumed session skips the verification callback.
            if let accepts = verification.accepts, !accepts(presented) {
                failed = true
                verification.refused = presented
                throw TLSError(.peerNotAllowed, message: "peer \(presented.identity) (sha256 \(presented.fingerprint)) is not on the allow-list")
            }
            peer = presented
            established = true
            return .complete
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        default:
            failed = true
            throw handshakeError(ssl)
        }
    }

    /// Reads application bytes into `buffer` (not empty). After `.transferred`, read again before
    /// polling while `hasBufferedInput`: OpenSSL may hold decrypted bytes the socket no longer signals.
    /// - Throws: `TLS_READ_FAILED` with OpenSSL's reason; `TLS_CLOSED` after `close()`.
    ///   The corresponding C function is `SSL_read_ex`.
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(TLSError) -> TLSTransfer {
        precondition(buffer.count > 0, "a TLS read needs room for at least one byte")
        return try transfer(.readFailed, "read") { ssl, count in SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count) }
    }

    /// Writes bytes from `bytes` (not empty); may write fewer than all of them. After `.wantWrite`
    /// or `.wantRead`, call again with the same bytes.
    /// - Throws: `TLS_WRITE_FAILED` with OpenSSL's reason; `TLS_CLOSED` after `close()`.
    ///   The corresponding C function is `SSL_write_ex`.
    public func write(_ bytes: UnsafeRawBufferPointer) throws(TLSError) -> TLSTransfer {
        precondition(bytes.count > 0, "a TLS write needs at least one byte")
        return try transfer(.writeFailed, "write") { ssl, count in SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &count) }
    }

    /// True when OpenSSL holds decrypted bytes not yet read. The corresponding C function is `SSL_pending`.
    public var hasBufferedInput: Bool {
        guard let ssl else { return false }
        return SSL_pending(ssl) > 0
    }

    /// The negotiated cipher suite in OpenSSL's naming (`ECDHE-ECDSA-AES128-CCM8`), once established.
    public var negotiatedCipher: String? {
        guard let ssl, established, let cipher = SSL_get_current_cipher(ssl), let name = SSL_CIPHER_get_name(cipher) else { return nil }
        return String(cString: name)
    }

    /// The negotiated protocol version (`TLSv1.2`, `TLSv1.3`), once established.
    public var negotiatedVersion: String? {
        guard let ssl, established, let name = SSL_get_version(ssl) else { return nil }
        return String(cString: name)
    }

    /// Sends close_notify when the connection was established and has not failed (one try: a
    /// non-blocking socket does not wait for the peer's), frees the TLS state and closes the socket
    /// when it owns it. Only the first call acts. The corresponding C functions are `SSL_shutdown`, `SSL_free`, `close`.
    public func close() {
        guard let ssl else { return }
        self.ssl = nil
        if established && !failed {
            OpenSSLErrors.clear()
            _ = SSL_shutdown(ssl)
        }
        SSL_free(ssl)
        OpenSSLErrors.clear()
        if ownsDescriptor { _ = Glibc.close(fileDescriptor) }
    }

    /// Whether the authenticated peer still passes `context` (a reload's: its CA, CRL and
    /// allow-list): nil when it does, else the coded reason (`TLS_PEER_NOT_ALLOWED`,
    /// `TLS_PEER_REVOKED`, `TLS_PEER_UNTRUSTED`). The certificate and chain the peer presented are
    /// verified again against the context's store, now; nothing is sent. Nil before the handshake
    /// is complete (the context it completes with checks it). The corresponding C function is
    /// `X509_verify_cert`.
    public func recheck(against context: TLSServerContext) -> TLSError? {
        guard let ssl, let peer else { return nil }
        if let accepts = context.acceptsPeer, !accepts(peer) {
            return TLSError(.peerNotAllowed, message: "peer \(peer.identity) (sha256 \(peer.fingerprint)) is not on the allow-list")
        }
        OpenSSLErrors.clear()
        defer { OpenSSLErrors.clear() }
        guard let certificate = SSL_get1_peer_certificate(ssl) else {
            return TLSError(.peerNoCertificate, message: "the peer's certificate is no longer known")
        }
        defer { X509_free(certificate) }
        guard let store = SSL_CTX_get_cert_store(context.handle), let check = X509_STORE_CTX_new() else {
            return TLSError(.handshakeFailed, message: "cannot verify the peer's certificate again")
        }
        defer { X509_STORE_CTX_free(check) }
        guard X509_STORE_CTX_init(check, store, certificate, SSL_get_peer_cert_chain(ssl)) == 1,
              X509_STORE_CTX_set_default(check, "ssl_client") == 1 else {
            return TLSError(.handshakeFailed, message: "cannot verify the peer's certificate again")
        }
        if X509_verify_cert(check) == 1 { return nil }
        let result = Int(X509_STORE_CTX_get_error(check))
        if result == Int(X509_V_ERR_CERT_REVOKED) {
            return TLSError(.peerRevoked, message: "peer \(peer.identity) certificate revoked (\(verifyText(result)))")
        }
        return TLSError(.peerUntrusted, message: "peer \(peer.identity) certificate refused (\(verifyText(result)))")
    }

    // MARK: - Outcomes

    private func open() throws(TLSError) -> OpaquePointer {
        guard let ssl, !failed else { throw TLSError(.closed, message: "the TLS connection is closed or has failed") }
        return ssl
    }

    /// One read or write (`call` returns OpenSSL's 1 or 0 and sets the count), and what it did.
    private func transfer(_ code: TLSError.Code, _ what: String,
                          _ call: (OpaquePointer, inout Int) -> Int32) throws(TLSError) -> TLSTransfer {
        let ssl = try open()
        OpenSSLErrors.clear()
        var count = 0
        let result = call(ssl, &count)
        if result == 1 { return .transferred(count) }
        return try transferOutcome(ssl, result, code, what)
    }

    /// What a read or write that returned 0 means.
    private func transferOutcome(_ ssl: OpaquePointer, _ result: Int32, _ code: TLSError.Code, _ what: String) throws(TLSError) -> TLSTransfer {
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ: return .wantRead
        case SSL_ERROR_WANT_WRITE: return .wantWrite
        case SSL_ERROR_ZERO_RETURN: return .endOfStream
        default:
            let systemErrno = errno
            failed = true
            let drained = OpenSSLErrors.drain()
            if error == SSL_ERROR_SYSCALL && drained.text.isEmpty {
                if systemErrno == 0 { return .endOfStream }
                throw TLSError(code, message: "TLS \(what) failed (\(SystemError.text(systemErrno)))")
            }
            throw TLSError(code, message: "TLS \(what) failed (\(drained.text.isEmpty ? "SSL error \(error)" : drained.text))")
        }
    }

    /// The coded error a failed handshake step means, from OpenSSL's first queued reason and the
    /// certificate verification result.
    private func handshakeError(_ ssl: OpaquePointer) -> TLSError {
        let systemErrno = errno
        let verified = SSL_get_verify_result(ssl)
        let drained = OpenSSLErrors.drain()
        guard drained.library == ERR_LIB_SSL else {
            if drained.text.isEmpty {
                let why = systemErrno == 0 ? "the peer closed the connection" : SystemError.text(systemErrno)
                return TLSError(.handshakeFailed, message: "TLS handshake failed (\(why))")
            }
            return TLSError(.handshakeFailed, message: "TLS handshake failed (\(drained.text))")
        }
        switch drained.reason {
        case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
            return TLSError(.peerNoCertificate, message: "the client presented no certificate (\(drained.text))")
        case SSL_R_CERTIFICATE_VERIFY_FAILED:
            if verified == Int(X509_V_ERR_APPLICATION_VERIFICATION), let refused = verification.refused {
                return TLSError(.peerNotAllowed, message: "peer \(refused.identity) (sha256 \(refused.fingerprint)) is not on the allow-list")
            }
            if verified == Int(X509_V_ERR_CERT_REVOKED) {
                return TLSError(.peerRevoked, message: "peer certificate revoked (\(verifyText(verified)))")
            }
            return TLSError(.peerUntrusted, message: "peer certificate refused (\(verifyText(verified)))")
        case SSL_R_UNSUPPORTED_PROTOCOL, SSL_R_VERSION_TOO_LOW, SSL_R_TLSV1_ALERT_PROTOCOL_VERSION, SSL_R_WRONG_VERSION_NUMBER:
            return TLSError(.protocolVersion, message: "the peer offered no TLS version bessd accepts (\(drained.text))")
        case SSL_R_NO_SHARED_CIPHER, SSL_R_NO_CIPHERS_AVAILABLE:
            return TLSError(.noSharedCipher, message: "no cipher suite both sides allow (\(drained.text))")
        default:
            return TLSError(.handshakeFailed, message: "TLS handshake failed (\(drained.text))")
        }
    }

    /// OpenSSL's words for a certificate verification result. The corresponding C function is
    /// `X509_verify_cert_error_string`.
    private func verifyText(_ result: Int) -> String {
        guard let text = X509_verify_cert_error_string(result) else { return "verification error \(result)" }
        return String(cString: text)
    }
}

/// The allow-list (server) or pin (client) a connection checks in OpenSSL's verification callback,
/// and the peer it refused (for the error's message). Reached from C through the `SSL`'s
/// application data; the connection keeps it alive as long as the `SSL`.
private final class PeerVerification {
    let accepts: (@Sendable (TLSPeer) -> Bool)?
    var refused: TLSPeer?

    init(accepts: (@Sendable (TLSPeer) -> Bool)?) { self.accepts = accepts }
}

/// OpenSSL's certificate verification callback: keeps OpenSSL's verdict for every certificate of
/// the chain, and for the peer's own (depth 0) of a chain OpenSSL accepted, refuses one the
/// allow-list or pin does not accept with `X509_V_ERR_APPLICATION_VERIFICATION`, so the
/// handshake fails (and the peer is told) before any application byte.
private let verifyPeerCertificate: @convention(c) (Int32, OpaquePointer?) -> Int32 = { preverified, store in
    guard preverified == 1, let store, X509_STORE_CTX_get_error_depth(store) == 0,
          let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
          let state = SSL_get_ex_data(OpaquePointer(ssl), 0) else { return preverified }
    let verification = Unmanaged<PeerVerification>.fromOpaque(state).takeUnretainedValue()
    guard let accepts = verification.accepts else { return 1 }
    guard let certificate = X509_STORE_CTX_get_current_cert(store) else { return 0 }
    let peer = TLSPeer(certificate: certificate)
    if accepts(peer) { return 1 }
    verification.refused = peer
    X509_STORE_CTX_set_error(store, X509_V_ERR_APPLICATION_VERIFICATION)
    return 0
}
