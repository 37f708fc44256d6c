public import IEC104
public import TLSTransport

extension OutstationTLSSettings {
    /// The TLS server context these files make, built by the TLS transport: TLS 1.2 or newer,
    /// mutual authentication against the CA, the allow-list and CRL, no NULL, export or anonymous
    /// suites. Made when the outstation starts, at each reload and by check-config.
    /// - Throws: `TLS_CONTEXT_FAILED` naming the file OpenSSL could not use, with its reason.
    public func serverContext() throws(TLSError) -> TLSServerContext {
        try TLSServerContext(certificateFile: certificateFile, privateKeyFile: keyFile, caFile: caFile,
                             allowedPeers: allowedCertificates, crlFile: crlFile)
    }
}
