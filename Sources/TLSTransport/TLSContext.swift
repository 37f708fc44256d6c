public import BessBase
import BessSystem
import ControlCore
import COpenSSL

/// A TLS protocol version bessd can be told to accept at least or at most.
public enum TLSVersion: Sendable, Equatable {
    /// TLS 1.2 (the floor IEC 62351-3 and IEEE 2030.5 set).
    case tls12
    /// TLS 1.3.
    case tls13

    var openSSLValue: Int32 {
        switch self {
        case .tls12: TLS1_2_VERSION
        case .tls13: TLS1_3_VERSION
        }
    }
}

/// What is struck from every cipher list bessd hands OpenSSL, whatever a configuration says: NULL
/// encryption, anonymous key exchange (no authentication), export-grade suites.
let refusedCipherClasses = ":!eNULL:!aNULL:!EXPORT"

/// The TLS side of a listening grid link (IEC 60870-5-104 over IEC 62351-3): bessd's certificate
/// and key, mutual authentication of every client against a CA, an optional allow-list of client
/// certificates and an optional CRL. Made once when the configuration is read; connections are
/// made from it on the link's own thread.
///
/// Sendable: the OpenSSL context is only read after `init` (OpenSSL allows `SSL_new` on one context
/// from several threads once it is configured), and the allow-list is immutable.
public final class TLSServerContext: @unchecked Sendable {
    /// The TLS 1.2 cipher suites offered when a configuration names none: forward-secret AEAD suites
    /// (TLS 1.3's are OpenSSL's defaults, all AEAD).
    public static let defaultCipherList = "ECDHE+AESGCM:ECDHE+CHACHA20:ECDHE+AESCCM:DHE+AESGCM"

    /// The `SSL_CTX *`, freed with the context.
    let handle: OpaquePointer
    /// Whether a client whose chain verified is accepted: its fingerprint (lower-case hex SHA-256
    /// of the DER certificate) is on the allow-list; nil accepts every one that chains to the CA.
    let acceptsPeer: (@Sendable (TLSPeer) -> Bool)?
    /// The session id context every session of a server context carries (OpenSSL resumes a session
    /// only in the context it names; without one, a client that resumes under mutual
    /// authentication is refused with `SSL_R_SESSION_ID_CONTEXT_UNINITIALIZED`).
    static let sessionIDContext = Array("bessd-tls-server".utf8)

    /// Reads bessd's certificate (a PEM chain, leaf first) and key, the CA that every client's
    /// certificate must chain to, and the optional CRL and allow-list.
    /// - Parameters:
    ///   - certificateFile: PEM, the server certificate then any intermediates.
    ///   - privateKeyFile: PEM, the certificate's key (unencrypted).
    ///   - caFile: PEM, the CA certificates client certificates are verified against.
    ///   - allowedPeers: SHA-256 fingerprints of the DER client certificates accepted (hex, colons
    ///     allowed, any case); nil for every client the CA vouches for. An empty list refuses all.
    ///   - crlFile: PEM, revoked certificates of the CA; a client on it is refused.
    ///   - cipherList: OpenSSL cipher string for TLS 1.2; NULL, anonymous and export suites are
    ///     struck from it whatever it says.
    ///   - minimumVersion: TLS 1.2 unless a site asks for 1.3 only.
    /// - Throws: `TLS_CONTEXT_FAILED` naming the file or setting OpenSSL refused, with its reason.
    public init(certificateFile: String, privateKeyFile: String, caFile: String, allowedPeers: [String]? = nil,
                crlFile: String? = nil, cipherList: String = TLSServerContext.defaultCipherList,
                minimumVersion: TLSVersion = .tls12) throws(TLSError) {
        var fingerprints: Set<String>?
        if let allowedPeers {
            var set = Set<String>()
            for text in allowedPeers {
                guard let fingerprint = TLSPeer.normalizedFingerprint(text) else {
                    throw TLSError(.contextFailed, message: "allow-list entry \(PeerText.quoted(text)) is not a SHA-256 fingerprint (64 hex digits)")
                }
                set.insert(fingerprint)
            }
            fingerprints = set
        }
        acceptsPeer = fingerprints.map { allowed in { @Sendable peer in allowed.contains(peer.fingerprint) } }
        let context = try makeContext(TLS_server_method(), certificateFile: certificateFile, privateKeyFile: privateKeyFile,
                                      caFile: caFile, cipherList: cipherList, minimumVersion: minimumVersion, maximumVersion: nil)
        handle = context
        // Ask every client for a certificate from this CA and refuse the handshake without one.
        if let names = SSL_load_client_CA_file(caFile) { SSL_CTX_set_client_CA_list(context, names) }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nil)
        // A TLS 1.2 control centre that reconnects with its session (id or ticket) is served: the
        // session keeps the certificate verified in the full handshake, and the allow-list is
        // checked again on it (`TLSConnection.handshake`). A reload makes a new context, whose
        // cache and ticket keys know no session of the old one.
        guard SSL_CTX_set_session_id_context(context, Self.sessionIDContext, UInt32(Self.sessionIDContext.count)) == 1 else {
            throw OpenSSLErrors.contextError("cannot set the session id context")
        }
        if let crlFile { try loadRevocationList(context, crlFile) }
    }

    deinit { SSL_CTX_free(handle) }
}

/// The TLS side of a grid link bessd opens (IEEE 2030.5: TLS 1.2, mutual authentication,
/// `ECDHE-ECDSA-AES128-CCM8`): bessd's certificate and key, the CA the server's chain must verify
/// against (always), the cipher suites allowed, and a server name to check only when one is given
/// (2030.5 server certificates carry none).
///
/// Sendable on the same terms as `TLSServerContext`.
public final class TLSClientContext: @unchecked Sendable {
    /// The suite IEEE 2030.5 requires (TLS_ECDHE_ECDSA_WITH_AES_128_CCM_8, 0xC0AE). A site whose
    /// server also allows a GCM suite adds it in its configuration.
    public static let defaultCipherList = "ECDHE-ECDSA-AES128-CCM8"

    /// The `SSL_CTX *`, freed with the context.
    let handle: OpaquePointer
    /// The name the server's certificate must carry; nil checks none (the chain is still verified).
    let expectedServerName: String?
    /// Whether a server whose chain verified is the one meant (a pin: IEEE 2030.5's
    /// `server_certificate_sha256`, `server_lfdi`); nil accepts every server the CA vouches for.
    let acceptsPeer: (@Sendable (TLSPeer) -> Bool)?

    /// Reads bessd's certificate and key and the CA the server's chain is verified against.
    /// - Parameters:
    ///   - certificateFile: PEM, the device certificate then its chain.
    ///   - privateKeyFile: PEM, its key (ECDSA P-256 for 2030.5).
    ///   - caFile: PEM, the CA chain (2030.5: the SERCA) the server must chain to.
    ///   - cipherList: OpenSSL cipher string for TLS 1.2; NULL, anonymous and export suites are
    ///     struck from it.
    ///   - minimumVersion: the lowest version offered (TLS 1.2).
    ///   - maximumVersion: the highest version offered; TLS 1.2 by default, as 2030.5 specifies.
    ///   - expectedServerName: checked against the server certificate's names when given; nil
    ///     checks no name (never skips the chain).
    ///   - acceptsServer: asked in the handshake about the server's certificate once its chain
    ///     verified; false refuses it (`TLS_PEER_NOT_ALLOWED`) before any application byte. Nil
    ///     accepts every server the CA vouches for.
    /// - Throws: `TLS_CONTEXT_FAILED` naming the file or setting OpenSSL refused, with its reason.
    public init(certificateFile: String, privateKeyFile: String, caFile: String,
                cipherList: String = TLSClientContext.defaultCipherList, minimumVersion: TLSVersion = .tls12,
                maximumVersion: TLSVersion? = .tls12, expectedServerName: String? = nil,
                acceptsServer: (@Sendable (TLSPeer) -> Bool)? = nil) throws(TLSError) {
        self.expectedServerName = expectedServerName
        acceptsPeer = acceptsServer
        let context = try makeContext(TLS_client_method(), certificateFile: certificateFile, privateKeyFile: privateKeyFile,
                                      caFile: caFile, cipherList: cipherList, minimumVersion: minimumVersion,
                                      maximumVersion: maximumVersion)
        handle = context
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
    }

    deinit { SSL_CTX_free(handle) }
}

/// A new `SSL_CTX` for `method` with what both sides share: versions, the hardened options, the
/// cipher list, the certificate and key, the CA to verify the peer against. Freed again on a throw.
private func makeContext(_ method: OpaquePointer?, certificateFile: String, privateKeyFile: String, caFile: String,
                         cipherList: String, minimumVersion: TLSVersion, maximumVersion: TLSVersion?) throws(TLSError) -> OpaquePointer {
    OpenSSLErrors.clear()
    guard let context = SSL_CTX_new(method) else { throw OpenSSLErrors.contextError("cannot make a TLS context") }
    do {
        try configure(context, certificateFile: certificateFile, privateKeyFile: privateKeyFile, caFile: caFile,
                      cipherList: cipherList, minimumVersion: minimumVersion, maximumVersion: maximumVersion)
    } catch {
        SSL_CTX_free(context)
        throw error
    }
    return context
}

private func configure(_ context: OpaquePointer, certificateFile: String, privateKeyFile: String, caFile: String,
                       cipherList: String, minimumVersion: TLSVersion, maximumVersion: TLSVersion?) throws(TLSError) {
    guard bessd_ssl_ctx_set_versions(context, minimumVersion.openSSLValue, maximumVersion?.openSSLValue ?? 0) == 1 else {
        throw OpenSSLErrors.contextError("cannot set the TLS versions")
    }
    bessd_ssl_ctx_harden(context)
    guard SSL_CTX_set_cipher_list(context, cipherList + refusedCipherClasses) == 1 else {
        throw OpenSSLErrors.contextError("cipher list \(PeerText.quoted(cipherList, limit: 200)) leaves no usable suite")
    }
    guard SSL_CTX_use_certificate_chain_file(context, certificateFile) == 1 else {
        throw OpenSSLErrors.contextError("cannot read the certificate \(certificateFile)")
    }
    guard SSL_CTX_use_PrivateKey_file(context, privateKeyFile, bessd_ssl_filetype_pem) == 1 else {
        throw OpenSSLErrors.contextError("cannot read the private key \(privateKeyFile)")
    }
    guard SSL_CTX_check_private_key(context) == 1 else {
        throw OpenSSLErrors.contextError("the key \(privateKeyFile) does not belong to the certificate \(certificateFile)")
    }
    guard SSL_CTX_load_verify_file(context, caFile) == 1 else {
        throw OpenSSLErrors.contextError("cannot read the CA file \(caFile)")
    }
}

/// Adds the CRLs in `path` to the context's store and checks every peer's certificate against
/// them. The corresponding C functions are `X509_load_crl_file` and `X509_STORE_set_flags`.
private func loadRevocationList(_ context: OpaquePointer, _ path: String) throws(TLSError) {
    guard let store = SSL_CTX_get_cert_store(context), let lookup = X509_STORE_add_lookup(store, X509_LOOKUP_file()),
          X509_load_crl_file(lookup, path, bessd_ssl_filetype_pem) > 0 else {
        throw OpenSSLErrors.contextError("cannot read the CRL file \(path)")
    }
    X509_STORE_set_flags(store, UInt(X509_V_FLAG_CRL_CHECK))
}
