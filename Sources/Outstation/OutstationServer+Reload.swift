public import Config
import BessSystem
import ControlCore
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

    /// The first group that admits a client at `address` showing the certificate `certificate`
    /// (lower-case hex SHA-256; nil before the TLS handshake, or without TLS: the address alone).
    func placement(of address: UInt32, certificate: String?) -> Int? {
        groups.firstIndex { group in
            group.settings.admits(address: address) && (certificate.map { group.settings.admits(certificate: $0) } ?? true)
        }
    }

    /// Once `tls` is authenticated: true when a group admits its certificate from its address
    /// (the connection then belongs to that group), and the TLS context a reload made since it was
    /// accepted passes it too; else the connection is closed (`IEC104_PEER_REFUSED`, or
    /// `IEC104_TLS_REFUSED` with the TLS code) before it joins any group.
    func admitAuthenticated(_ connection: Connection, _ tls: TLSStream) -> Bool {
        guard let peer = tls.authenticatedPeer else { return false }
        if let current = tlsContext, current !== tls.context, let error = tls.recheck(against: current) {
            refuseTLS(connection, code: "\(error.code)", reason: error.description)
            return false
        }
        guard let group = placement(of: tls.peerAddress, certificate: peer.fingerprint) else {
            connectionsRefused.add(1, ordering: .relaxed)
            connection.closeReason = "refused: certificate in no group's allow_certificates"
            peerLog(connection, .connection, .peerRefused,
                    "IEC 104 connection from \(tls.address) refused: its certificate \(peer.identity) (sha256 \(peer.fingerprint)) is in no iec104.groups allow_certificates that admits its address",
                    ["BESS_PEER": peer.identity, "BESS_PEER_ADDRESS": tls.address, "BESS_PEER_SHA256": peer.fingerprint])
            return false
        }
        connection.group = group
        return true
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
        let updated = pending.groups ?? groups.map(\.settings)
        let context = pending.recheck ? tlsContext : nil
        var placed: [(Connection, Int)] = []
        for connection in connections where connection.closeReason == nil {
            let tls = connection.stream as? TLSStream
            let peer = connection.authenticated ? tls?.authenticatedPeer : nil
            if let tls, let peer, let context, let error = tls.recheck(against: context) {
                revoke(connection, error.description, ["BESS_TLS_ERROR": "\(error.code)", "BESS_PEER_SHA256": peer.fingerprint])
                continue
            }
            let address = connection.stream.peerAddress
            let target = updated.firstIndex { group in
                group.admits(address: address) && (peer.map { group.admits(certificate: $0.fingerprint) } ?? true)
            }
            let was = groups[connection.group].settings.name
            // One still in its TLS handshake has joined no group yet: it goes where its address now leads.
            guard let target, updated[target].name == was || !connection.authenticated else {
                let now = target.map { "it now belongs to group \(updated[$0].name)" } ?? "no group of iec104.groups admits it now"
                revoke(connection, "\(now) (was \(was))", peer.map { ["BESS_PEER_SHA256": $0.fingerprint] } ?? [:])
                continue
            }
            placed.append((connection, target))
        }
        reap()
        guard pending.groups != nil else { return }
        groups = updated.map { settings in
            var state = GroupState(settings: settings)
            if let old = groups.first(where: { $0.settings.name == settings.name }) {
                state.queue = old.queue
                state.started = old.started
            }
            return state
        }
        for (connection, target) in placed { connection.group = target }
    }

    /// Closes `connection` at a reload with `IEC104_PEER_REVOKED` (reaped in the same turn).
    private func revoke(_ connection: Connection, _ reason: String, _ fields: [String: String]) {
        connection.closeReason = "revoked at reload: \(reason)"
        let address = (connection.stream as? TLSStream)?.address ?? connection.stream.peer
        log(.peerRevoked, "IEC 104 connection \(connection.stream.peer) from \(address) closed at reload: \(reason)",
            fields.merging(["BESS_PEER": connection.stream.peer, "BESS_PEER_ADDRESS": address,
                            "BESS_GROUP": groups[connection.group].settings.name, "BESS_REASON": reason]) { mine, _ in mine })
    }
}
