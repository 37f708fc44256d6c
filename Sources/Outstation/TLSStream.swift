public import BessBase
import ControlCore
public import TLSTransport

/// IEC 60870-5-104 over TLS (IEC 62351-3): a `ByteStream` over an accepted `TCPStream`. The
/// handshake runs inside the first reads (the server polls the descriptor for POLLIN, which is what
/// a TLS server waits for; its own flight fits a fresh socket's buffer); a refused client ends the
/// stream with `.failed` carrying the coded `TLSError` (`TLS_PEER_NOT_ALLOWED: …`). Once
/// authenticated, `peer` is the client certificate's subject, escaped (`TLSPeer.identity`).
/// Owned by the server thread, like the TCP stream it wraps.
public final class TLSStream: ByteStream {
    private let tcp: TCPStream
    private let tls: TLSConnection
    /// The peer's address and port until the handshake is done, then its certificate's subject.
    public private(set) var peer: String
    /// The peer's address and port, for the journal beside the subject (`BESS_PEER_ADDRESS`).
    public var address: String { tcp.peer }
    /// The refusal or failure that ended the stream, for the journal; nil while it is well.
    public private(set) var failure: TLSError?
    private var established = false

    /// TLS as a server over `tcp`, with `context`'s certificate, CA, allow-list and CRL. On a throw,
    /// `tcp` is still the caller's to close.
    public init(over tcp: TCPStream, context: TLSServerContext) throws(TLSError) {
        tls = try TLSConnection(accepted: tcp.descriptor, context: context, ownsDescriptor: false)
        self.context = context
        self.tcp = tcp
        peer = tcp.peer
    }

    public var descriptor: Int32 { tcp.descriptor }
    public var peerAddress: UInt32 { tcp.peerAddress }
    public var hasPendingInput: Bool { tls.hasBufferedInput }

    /// The authenticated client (subject and fingerprint), once the handshake is done.
    public var authenticatedPeer: TLSPeer? { tls.peer }
    /// The context the connection was accepted with.
    public let context: TLSServerContext

    /// Whether the authenticated client still passes `context` (one a reload made): nil when it
    /// does, else the coded reason (`TLSConnection.recheck(against:)`).
    public func recheck(against context: TLSServerContext) -> TLSError? { tls.recheck(against: context) }

    public func read(limit: Int) -> StreamRead {
        guard failure == nil else { return .closed }
        do {
            guard try handshake() else { return .wouldBlock }
            var buffer = [UInt8](repeating: 0, count: max(1, limit))
            let outcome = try buffer.withUnsafeMutableBytes { raw in
                Result { () throws(TLSError) -> TLSTransfer in try tls.read(into: raw) }
            }.get()
            switch outcome {
            case .transferred(let count): return .bytes(Array(buffer[..<count]))
            case .wantRead, .wantWrite: return .wouldBlock
            case .endOfStream: return .closed
            }
        } catch {
            failure = error
            return .failed(error.description)
        }
    }

    public func write(_ bytes: ArraySlice<UInt8>) -> Int? {
        guard failure == nil else { return nil }
        if bytes.isEmpty { return 0 }
        do {
            guard try handshake() else { return 0 }
            let outcome = try bytes.withUnsafeBytes { raw in
                Result { () throws(TLSError) -> TLSTransfer in try tls.write(raw) }
            }.get()
            switch outcome {
            case .transferred(let count): return count
            case .wantRead, .wantWrite: return 0
            case .endOfStream: return nil
            }
        } catch {
            failure = error
            return nil
        }
    }

    /// close_notify when established, then the socket (each once).
    public func close() {
        tls.close()
        tcp.close()
    }

    /// One handshake step until it is done; true once it is.
    private func handshake() throws(TLSError) -> Bool {
        if established { return true }
        guard try tls.handshake() == .complete else { return false }
        established = true
        if let authenticated = tls.peer { peer = authenticated.identity }
        return true
    }
}
