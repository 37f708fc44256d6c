import BessBase
import BessSystem
import ControlCore
public import IEC104
import Synchronization
import TLSTransport

/// What a reload hands the server thread: the groups as the file now says, and whether the TLS
/// context was read again. Taken whole by the thread's next turn.
struct PendingReload {
    var groups: [IEC104Group]?
    var recheck = false
}

// Rights follow the certificate (issue 57 §4): a TLS connection joins the first group whose
// `allow_from` holds its address and whose `allow_certificates` (when it has one) names its
// certificate; a reload applies the groups and the TLS files to the connections already open, and
// closes each one that no longer passes (`IEC104_PEER_REVOKED`), so revoking never needs a restart.
extension OutstationServer {
    /// Hands the groups of a reloaded file to the running outstation: their rights apply to every
    /// open connection from the thread's next turn, and a connection its group no longer admits (by
    /// address or certificate) is closed then (`IEC104_PEER_REVOKED`). Each group keeps its event
    /// queue and started connection under its name. Any thread.
    public func applyGroups(_ groups: [IEC104Group]) {
        pendingReload.withLock { $0.groups = groups }
        stopWakeup.signal()
    }

    /// On the server thread, at the top of a turn: what a reload handed over, applied. Every open
    /// connection is checked against the TLS context (when it was read again) and the groups; one
    /// that fails, or that its address and certificate would now place in another group, is closed
    /// with `IEC104_PEER_REVOKED`; the rest stay in their group with its new rights.
    func applyReload() {
        let pending = pendingReload.withLock { pending in
            defer { pending = PendingReload() }
            return pending
        }
        guard pending.groups != nil || pending.recheck else { return }
        let updated = pending.groups ?? groups.all.map(\.settings)
        let context = pending.recheck ? listener.tlsContext : nil
        var placed: [(Connection, Int)] = []
        for connection in connections where connection.closeReason == nil {
            let peer = connection.authenticated ? connection.tls?.authenticatedPeer : nil
            if let tls = connection.tls, let peer, let context, let error = tls.recheck(against: context) {
                revoke(connection, error.description, [.tlsError: "\(error.code)", .peerSHA256: peer.fingerprint])
                continue
            }
            let target = RedundancyGroups.placement(of: connection.stream.peerAddress, certificate: peer?.fingerprint, in: updated)
            let was = groups.name(connection.group)
            // One still in its TLS handshake has joined no group yet: it goes where its address now leads.
            guard let target, updated[target].name == was || !connection.authenticated else {
                let now = target.map { "it now belongs to group \(updated[$0].name)" } ?? "no group of iec104.groups admits it now"
                revoke(connection, "\(now) (was \(was))", peer.map { [.peerSHA256: $0.fingerprint] } ?? [:])
                continue
            }
            placed.append((connection, target))
        }
        reap()
        guard let settings = pending.groups else { return }
        groups.replace(with: settings)
        for (connection, target) in placed { connection.group = target }
    }

    /// Closes `connection` at a reload with `IEC104_PEER_REVOKED` (reaped in the same turn).
    private func revoke(_ connection: Connection, _ reason: String, _ fields: [NoticeField: String]) {
        connection.closeReason = "revoked at reload: \(reason)"
        journal.log(.peerRevoked, "IEC 104 connection \(connection.stream.peer) from \(connection.address) closed at reload: \(reason)",
            fields.merging([.peer: connection.stream.peer, .peerAddress: connection.address,
                            .group: groups.name(connection.group), .reason: reason]) { mine, _ in mine })
    }
}
