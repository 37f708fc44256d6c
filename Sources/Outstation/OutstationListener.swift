import BessBase
import BessSystem
import ControlCore
import IEC104
import Synchronization
import TLSTransport

/// The outstation's door: the listening socket, and who comes in through it. A client is placed
/// in the first redundancy group whose `allow_from` holds its address (a peer no group admits
/// costs no TLS session) while fewer than `max_connections` are open; with `iec104.tls` its
/// connection is TLS, and it joins its group once its certificate is verified and a group admits
/// it from its address. Every refusal is counted and journalled within the address's budget.
///
/// `@unchecked Sendable`: the TLS context is behind a lock (a reload replaces it from any thread);
/// the rest is used by the server thread only (bound on the starting one, before the thread).
final class OutstationListener: @unchecked Sendable {
    private let host: String
    private let maxConnections: Int
    /// How long a TLS connection may take to authenticate.
    let handshakeTimeout: Duration
    private var socket: TCPListener?
    private let contextHolder: Mutex<TLSServerContext?>
    private let journal: PeerJournal
    private let counters: OutstationCounters

    /// IEC 62351-3: every accepted connection is authenticated with this before IEC 104 flows;
    /// nil serves plain TCP. Read at each accept: a reload replaces it (`replaceContext(_:)`).
    var tlsContext: TLSServerContext? { contextHolder.withLock { $0 } }

    init(host: String, maxConnections: Int, handshakeTimeout: Duration, tlsContext: TLSServerContext?, journal: PeerJournal,
         counters: OutstationCounters) {
        self.journal = journal
        self.counters = counters
        self.host = host
        self.maxConnections = maxConnections
        self.handshakeTimeout = handshakeTimeout
        contextHolder = Mutex(tlsContext)
    }

    /// Binds `host:port` and listens; returns the port bound.
    func bind(port: Int) throws(SystemCallError) -> Int {
        let socket = try TCPListener(host: host, port: port)
        self.socket = socket
        return socket.port
    }

    /// The descriptor to poll for connections (after `bind`).
    var descriptor: Int32 { socket?.descriptor ?? -1 }

    /// Replaces the TLS context for the connections accepted from now on; false, and nothing
    /// changed, without TLS (a reload never turns TLS on or off). `changed` runs under the lock.
    func replaceContext(_ context: TLSServerContext, changed: () -> Void) -> Bool {
        contextHolder.withLock { current in
            guard current != nil else { return false }
            current = context
            changed()
            return true
        }
    }

    /// Every connection waiting, admitted or refused: the admitted as new connections (ids from
    /// `nextID`), `open` counting those already open.
    func acceptAll(now: MonotonicInstant, open: Int, nextID: inout Int, groups: RedundancyGroups, link: LinkSettings) -> [OutstationConnection] {
        guard let socket else { return [] }
        // The group and the limit on the TCP peer's address first: a peer no group admits costs no
        // TLS session. The listener admits by the groups as they stand now (a reload replaces them).
        let settings = groups.all.map(\.settings)
        socket.admission = TCPListener.Admission(allows: { RedundancyGroups.placement(of: $0, certificate: nil, in: settings) != nil },
                                                 maxClients: maxConnections)
        var admitted: [OutstationConnection] = []
        while let taken = socket.admit(open: open + admitted.count, refused: { tcp, refusal in refused(tcp, refusal) }) {
            let tcp: TCPStream
            switch consume taken {
            case .admitted(let accepted): tcp = TCPStream(accepted)
            case .refused: continue
            }
            // The same groups just admitted the address, so one of them holds it.
            guard let group = groups.placement(of: tcp.peerAddress, certificate: nil) else { continue }
            let connection: OutstationConnection
            if let tlsContext {
                counters.tlsSessionsBegun.add(1, ordering: .relaxed)
                do {
                    connection = OutstationConnection(id: nextID, tls: try TLSStream(over: tcp, context: tlsContext), group: group,
                                                      link: Link(settings: link, now: now), now: now)
                } catch {
                    counters.connectionsRefused.add(1, ordering: .relaxed)
                    journal.write(address: tcp.peerAddress, .connection, .tlsRefused, "IEC 104 connection from \(tcp.peer) refused: \(error)",
                                  [.peer: tcp.peer, .tlsError: "\(error.code)"])
                    tcp.close()
                    continue
                }
            } else {
                connection = OutstationConnection(id: nextID, stream: tcp, group: group, link: Link(settings: link, now: now), now: now)
            }
            nextID += 1
            admitted.append(connection)
            // A TLS connection is named once its certificate is verified (`authenticate`).
            guard connection.tls == nil else { continue }
            journal.write(address: tcp.peerAddress, .connection, .connected, "IEC 104 connection from \(tcp.peer) (group \(groups.name(group)))",
                          [.peer: tcp.peer, .group: groups.name(group)])
        }
        return admitted
    }

    /// Counts and journals a connection the listener refused, before it closes it.
    private func refused(_ tcp: borrowing TCPConnection, _ refusal: TCPListener.Refusal) {
        counters.connectionsRefused.add(1, ordering: .relaxed)
        switch refusal {
        case .notAllowed:
            journal.write(address: tcp.peerAddress, .connection, .peerRefused, "IEC 104 connection from \(tcp.peer) refused: in no iec104.groups allow_from",
                          [.peer: tcp.peer])
        case .full(let maxConnections):
            journal.write(address: tcp.peerAddress, .connection, .connectionsFull,
                          "IEC 104 connection from \(tcp.peer) refused: \(maxConnections) connections open (iec104.max_connections)",
                          [.peer: tcp.peer])
        }
    }

    /// After a read of a connection still in its TLS handshake: false while the handshake goes on
    /// or when it failed (the connection is then refused); true once the peer is authenticated and
    /// a group admits its certificate from its address (it then belongs to that group), and the
    /// TLS context a reload made since it was accepted passes it too. The connection is then named
    /// in the journal by its certificate's subject.
    func authenticate(_ connection: OutstationConnection, after read: StreamRead, groups: RedundancyGroups) -> Bool {
        guard let tls = connection.tls else { return true }
        if let failure = tls.failure {
            refuse(connection, code: "\(failure.code)", reason: failure.description, groups: groups)
            return false
        }
        guard let peer = tls.authenticatedPeer else {
            if case .closed = read {
                refuse(connection, code: "\(TLSError.Code.handshakeFailed)", reason: "the peer closed the connection during the TLS handshake",
                       groups: groups)
            }
            return false
        }
        if let current = tlsContext, current !== tls.context, let error = tls.recheck(against: current) {
            refuse(connection, code: "\(error.code)", reason: error.description, groups: groups)
            return false
        }
        guard let group = groups.placement(of: tls.peerAddress, certificate: peer.fingerprint) else {
            counters.connectionsRefused.add(1, ordering: .relaxed)
            connection.closeReason = "refused: certificate in no group's allow_certificates"
            journal.write(address: tls.peerAddress, .connection, .peerRefused,
                          "IEC 104 connection from \(tls.address) refused: its certificate \(peer.identity) (sha256 \(peer.fingerprint)) is in no iec104.groups allow_certificates that admits its address",
                          [.peer: peer.identity, .peerAddress: tls.address, .peerSHA256: peer.fingerprint])
            return false
        }
        connection.group = group
        connection.authenticated = true
        journal.write(address: tls.peerAddress, .connection, .connected,
                      "IEC 104 TLS connection from \(tls.address) authenticated as \(tls.peer) (group \(groups.name(group)))",
                      [.peer: tls.peer, .peerAddress: tls.address, .group: groups.name(group)])
        return true
    }

    /// Closes a connection whose TLS handshake failed or did not finish in time, with the coded
    /// reason (`TLS_PEER_UNTRUSTED`, …) and the peer's address.
    func refuse(_ connection: OutstationConnection, code: String, reason: String, groups: RedundancyGroups) {
        guard connection.closeReason == nil else { return }
        counters.connectionsRefused.add(1, ordering: .relaxed)
        connection.closeReason = "TLS refused: \(code)"
        journal.write(address: connection.stream.peerAddress, .connection, .tlsRefused, "IEC 104 connection from \(connection.address) refused: \(reason)",
                      [.peer: connection.address, .tlsError: code, .group: groups.name(connection.group)])
    }

    /// Closes a connection whose TLS handshake has not finished within `handshakeTimeout`; true
    /// when it did so.
    func expireHandshake(_ connection: OutstationConnection, now: MonotonicInstant, groups: RedundancyGroups) -> Bool {
        guard !connection.authenticated, now >= connection.acceptedAt + handshakeTimeout else { return false }
        refuse(connection, code: "\(TLSError.Code.handshakeFailed)",
               reason: "TLS handshake not completed within \(handshakeTimeout) (iec104.tls.handshake_timeout_s)",
               groups: groups)
        return true
    }
}
