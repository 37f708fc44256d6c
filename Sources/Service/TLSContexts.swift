public import Config
import IEC104
import Outstation
import TLSTransport

extension BessdConfiguration {
    /// What the files this configuration names say when they are read: the outstation's TLS files
    /// (`iec104.tls`) and the 2030.5 client's (`ieee2030_5`), each made into a context by the TLS
    /// transport and dropped. `bessd check-config` reports each as an error (`CONFIG_INVALID` at
    /// `iec104.tls` or `ieee2030_5`, the message carrying `TLS_CONTEXT_FAILED`, the file and
    /// OpenSSL's reason) and fails; `bessd run` does not ask: a file that does not load costs the
    /// outstation (`IEC104_LISTEN_FAILED`) or the 2030.5 client alone, never the site's control.
    /// - Parameter file: the configuration file, named in each diagnostic.
    public func fileDiagnostics(file: String) -> [ConfigDiagnostic] {
        var problems: [ConfigDiagnostic] = []
        if let tls = iec104?.server.tls {
            do { _ = try tls.serverContext() } catch {
                problems.append(ConfigDiagnostic(file: file, line: nil, keyPath: "iec104.tls", message: "\(error)"))
            }
        }
        if let settings = ieee2030_5 {
            do { _ = try settings.clientContext() } catch {
                problems.append(ConfigDiagnostic(file: file, line: nil, keyPath: "ieee2030_5", message: "\(error)"))
            }
        }
        return problems
    }
}

extension IEEE2030_5Settings {
    /// The TLS client context these files make, built by the TLS transport: TLS 1.2 only,
    /// `cipherList`, the server's chain verified against `caFile` and no name checked (2030.5
    /// server certificates carry none), and the server pin (`acceptsServer`) checked in the
    /// handshake when one is configured. Made when the client starts and by check-config.
    /// - Throws: `TLS_CONTEXT_FAILED` naming the file OpenSSL could not use, with its reason.
    func clientContext() throws(TLSError) -> TLSClientContext {
        let accepts = acceptsServer
        return try TLSClientContext(certificateFile: certificateFile, privateKeyFile: keyFile, caFile: caFile, cipherList: cipherList,
                                    acceptsServer: accepts.map { accepts in { @Sendable peer in accepts(peer.fingerprint) } })
    }
}
