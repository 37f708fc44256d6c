import ControlCore

/// Who gives way when a connection arrives at a full listener. The control socket is open to every
/// local user (mode 0666; `ControlCaller` decides what each may do), so a user with no role must not
/// be able to push an operator or a reader off it:
///
/// - one uid holds at most `perUID` connections: a newcomer past that closes that uid's own
///   idlest, never anyone else's;
/// - a full listener makes room by closing the idlest connection of the lowest role present,
///   and only of a role no higher than the newcomer's: sessions with no role go first, a
///   newcomer with no role takes only theirs, a reader never pushes out an operator;
/// - a connection whose answer waits for the cycle is never closed; when nothing may give way,
///   the newcomer is refused (`CONTROL_SOCKET_BUSY`).
///
/// A pure decision over the open sessions, so that the policy is tested without sockets or users.
enum ControlAdmission {
    /// An open connection as the decision sees it.
    struct Session: Equatable {
        var id: Int32
        /// Nil for a listener without credentials (metrics): no per-uid cap.
        var uid: UInt32?
        var role: ControlCaller.Role
        var lastActivity: MonotonicInstant
        /// An answer waits for the cycle: not closed.
        var busy: Bool
    }

    enum Decision: Equatable {
        case admit
        /// Admit after closing this connection.
        case evict(Int32)
        /// Close the newcomer: nothing may give way to it.
        case refuse
    }

    static func decide(uid: UInt32?, role: ControlCaller.Role, open: [Session], maximum: Int, perUID: Int) -> Decision {
        if let uid {
            let own = open.filter { $0.uid == uid }
            if own.count >= perUID { return idlest(own).map { .evict($0.id) } ?? .refuse }
        }
        guard open.count >= maximum else { return .admit }
        return idlest(open.filter { $0.role <= role }).map { .evict($0.id) } ?? .refuse
    }

    /// The idle connection of the lowest role, the idlest among them.
    private static func idlest(_ sessions: [Session]) -> Session? {
        sessions.filter { !$0.busy }.min { ($0.role, $0.lastActivity) < ($1.role, $1.lastActivity) }
    }
}
