import BessSystem
import ControlCore
public import ControlProtocol
import Foundation
import Glibc

/// Who is on the other end of the control socket and what they may do, from the kernel's word
/// (SO_PEERCRED, SO_PEERGROUPS), never from the request.
///
/// - members of `bess` may read: status, faults, site;
/// - members of `bess-operators`, root and bessd's own user may also act: reset, mode, override;
/// - anyone else is refused every verb with `PERMISSION_DENIED`.
///
/// `bess` and `bess-operators` are roles for people. bessd itself runs in a group of its own,
/// `bessd` (`SystemAccount.daemon`), that no person is put in: the group that may read its keys.
///
/// Membership of `bess-operators` alone is enough to act. The socket is mode 0666 so that it is:
/// the check here is the gate, not the file's group.
public struct ControlCaller: Sendable, Equatable {
    public enum Role: Int, Sendable, Comparable, CustomStringConvertible {
        case none = 0, reader, `operator`
        public static func < (a: Role, b: Role) -> Bool { a.rawValue < b.rawValue }
        public var description: String {
            switch self {
            case .none: "none"
            case .reader: "reader"
            case .operator: "operator"
            }
        }
    }

    public static let readerGroup = "bess"
    public static let operatorGroup = "bess-operators"

    public let uid: UInt32
    public let pid: Int32
    public let role: Role

    public init(uid: UInt32, pid: Int32, role: Role) {
        self.uid = uid
        self.pid = pid
        self.role = role
    }

    /// The role of a caller with `uid` whose groups (primary and supplementary) are `groups`.
    /// `readerGID`/`operatorGID` are nil when the group does not exist on this machine.
    public static func role(uid: UInt32, groups: [UInt32], daemonUID: UInt32, readerGID: UInt32?, operatorGID: UInt32?) -> Role {
        if uid == 0 || uid == daemonUID { return .operator }
        if let operatorGID, groups.contains(operatorGID) { return .operator }
        if let readerGID, groups.contains(readerGID) { return .reader }
        return .none
    }

    /// The role each verb needs. Verbs that only read need `reader`; everything else, including
    /// verbs added later and unknown ones, needs `operator`.
    public static func needed(verb: String) -> Role { needed(ControlVerb(verb)) }

    /// The role `verb` needs: `reader` for a verb that only reads (`ControlVerb.onlyReads`).
    public static func needed(_ verb: ControlVerb) -> Role { verb.onlyReads ? .reader : .operator }

    /// The caller on a connected Unix socket. A socket whose credentials cannot be read (not a Unix
    /// socket, or the kernel refuses) gets no role.
    static func of(socket fd: Int32) -> ControlCaller {
        var credentials = PeerCredentials()
        var length = socklen_t(MemoryLayout<PeerCredentials>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else {
            return ControlCaller(uid: UInt32.max, pid: 0, role: .none)
        }
        var groups = peerGroups(fd) ?? memberships(uid: credentials.uid, primary: credentials.gid)
        groups.append(credentials.gid)
        let known = GroupCache.shared.gids()
        let role = role(uid: credentials.uid, groups: groups, daemonUID: geteuid(), readerGID: known.reader, operatorGID: known.operator)
        return ControlCaller(uid: credentials.uid, pid: credentials.pid, role: role)
    }

    /// SO_PEERGROUPS (Linux 4.13): the supplementary groups the peer held when it connected.
    static func peerGroups(_ fd: Int32) -> [UInt32]? {
        let soPeerGroups: Int32 = 59
        var groups = [gid_t](repeating: 0, count: 64)
        var length = socklen_t(groups.count * MemoryLayout<gid_t>.size)
        var result = getsockopt(fd, SOL_SOCKET, soPeerGroups, &groups, &length)
        if result != 0, errno == ERANGE {
            groups = [gid_t](repeating: 0, count: Int(length) / MemoryLayout<gid_t>.size + 1)
            length = socklen_t(groups.count * MemoryLayout<gid_t>.size)
            result = getsockopt(fd, SOL_SOCKET, soPeerGroups, &groups, &length)
        }
        guard result == 0 else { return nil }
        return Array(groups.prefix(Int(length) / MemoryLayout<gid_t>.size))
    }

    /// The groups /etc/group gives `uid` (for kernels without SO_PEERGROUPS).
    static func memberships(uid: UInt32, primary: UInt32) -> [UInt32] {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return [] }
        var count: Int32 = 256
        var groups = [gid_t](repeating: 0, count: Int(count))
        guard getgrouplist(name, primary, &groups, &count) >= 0 else { return [] }
        return Array(groups.prefix(Int(count)))
    }

    static func gid(named name: String) -> UInt32? { SystemAccount.gid(named: name) }
}

/// The two groups' ids, looked up at most every 10 s (not at every connection: the socket is open to
/// every local user, and each lookup may read /etc/group or ask NSS).
final class GroupCache: @unchecked Sendable {
    static let shared = GroupCache()
    private let lock = NSLock()
    private var cached: (reader: UInt32?, operator: UInt32?) = (nil, nil)
    private var at: MonotonicInstant?

    func gids() -> (reader: UInt32?, operator: UInt32?) {
        lock.lock()
        defer { lock.unlock() }
        let now = SystemClock.shared.now()
        if at.map({ now - $0 >= .seconds(10) }) ?? true {
            cached = (ControlCaller.gid(named: ControlCaller.readerGroup), ControlCaller.gid(named: ControlCaller.operatorGroup))
            at = now
        }
        return cached
    }
}
